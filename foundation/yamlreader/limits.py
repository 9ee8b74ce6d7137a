"""The reader's bounds (kubectl's and the API server's) and its one error type."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: go-yaml v2's alias bound (GY decode.go:321-357): a document is refused once more than
#: ``ALIAS_MIN_ALIASED`` decodes came from aliases, more than ``ALIAS_MIN_DECODES`` in all, and the
#: aliases' share is above 99% (up to ``ALIAS_RATIO_RANGE_LOW`` decodes), falling to 10% at
#: ``ALIAS_RATIO_RANGE_HIGH``. So at most about 400,000 nodes are ever built from aliases.
ALIAS_MIN_ALIASED = 100
ALIAS_MIN_DECODES = 1000
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
#: go-yaml v2's scanner (sigs.k8s.io/yaml/goyaml.v2 scannerc.go, ``max_flow_level`` and
#: ``max_indents``): more than 10,000 nested flow collections, or block collections, is an error.
MAX_DEPTH = 10_000
DEPTH_ERROR = f"yaml: exceeded max depth of {MAX_DEPTH}"
#: kubectl then decodes the JSON with encoding/json, which refuses more than 10,000 nested objects
#: and arrays in all (``maxNestingDepth``; the document's own mapping is the first): kubectl says
#: ``invalid character '[' exceeded max depth``.
JSON_DEPTH_ERROR = f"exceeded max depth: more than {MAX_DEPTH} nested maps and lists, which kubectl cannot decode as JSON"
#: libyaml 0.2.6 (PyYAML 6.0.4's wheels) has a nesting limit of its own, 1,000 by default, flow and
#: block levels counted together, and refuses a deeper document in its words ("while increasing
#: flow level exceeded maximum nesting depth") before ``_compose`` sees it. The limit must stay out
#: of the way of kubectl's rule: a document holds up to ``MAX_DEPTH`` block and ``MAX_DEPTH`` flow
#: levels, and the scanner reads at most 1,024 characters ahead of the parser (a possible simple
#: key's reach), so ``_compose`` refuses every deeper document before libyaml would.
LIBYAML_NEST_LIMIT = 3 * MAX_DEPTH
#: The API server refuses a request body over 3 MiB (apiserver's MaxRequestBodyBytes), so a
#: larger document can never be applied; it is refused while its lines are read.
MAX_DOCUMENT_SIZE = 3 * 1024 * 1024


class YAMLInputError(ValueError):
    """A document that kubectl could not turn into JSON; carries a 1-based position."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


#: Parsed nodes (maps, lists and scalars, an alias as one) one run may read from untrusted input, all
#: files together. A node costs some 360 bytes while its document is parsed (libyaml's node and mark,
#: the value built from it), whatever its text's size: ``[{},{},...]`` is three bytes a node, so the
#: input cap alone (10 MB) would admit over a GiB of nodes. At this bound the worst shapes peak at
#: 141 MiB in all (argocd-generate passing them through), the Argo CD sidecar's limit being 256 MiB (bench/untrusted_input.py).
MAX_NODES = 300_000


class NodeBudget:
    """The nodes one run may still parse; refused, naming where, the moment they run out.

    go-yaml bounds alias expansion the same way (a count of decodes, refused in the document); here
    every node counts, so memory is bounded by construction rather than by the bytes of the input.
    """

    __slots__ = ("limit", "used", "scope")

    def __init__(self, limit: int = MAX_NODES, scope: str = "one run") -> None:
        self.limit, self.used, self.scope = limit, 0, scope

    def take(self, line: int, column: int) -> None:
        """Count one node at (1-based) ``line``/``column`` of its chunk; TooManyNodes past the limit."""
        self.used += 1
        if self.used > self.limit:
            raise TooManyNodes(f"more than {self.limit} YAML nodes (maps, lists and values) to read in {self.scope}; "
                               "refused", line, column)


class TooManyNodes(YAMLInputError):
    """The run's node budget is spent: the run stops here, rather than one finding per file to come."""




#: Python frames for walking a value at the depth limit (flow and block nesting together, a few
#: frames per level): the builder here, and the YAML/JSON writers of render.
RECURSION_ROOM = 10 * MAX_DEPTH


@contextmanager
def recursion_room() -> Iterator[None]:
    """Room to walk any value the loader returns (since 3.11, Python-to-Python calls use no C
    stack); the previous limit is restored afterwards."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, RECURSION_ROOM))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
