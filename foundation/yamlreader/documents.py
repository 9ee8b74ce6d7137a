"""Documents: each document of a stream as a JSON value with its node tree, for positions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .compose import Builder, first_document
from .limits import DEPTH_ERROR, NodeBudget, YAMLInputError, recursion_room
from .scalars import node_error
from .streams import Readable, chunks


class Document:
    """One YAML document of a stream: its JSON-compatible value and where it came from."""

    __slots__ = ("value", "node", "line_offset", "from_json", "_keys")

    def __init__(self, value: Any, node: Node, line_offset: int, from_json: bool = False) -> None:
        self.value = value
        self.node = node  # libyaml's node tree of the document's chunk, for positions
        self.line_offset = line_offset  # lines of the stream before the chunk
        #: a value of a JSON run: kubectl keeps its bytes as written, duplicate keys and all
        self.from_json = from_json
        self._keys: dict[int, dict[str, tuple[Any, Node]]] = {}  # per mapping node: key -> (mark, value)

    def duplicate_key(self, path: tuple[str, ...]) -> tuple[str, tuple[int, int]] | None:
        """The first key written twice in the map at ``path`` of a JSON value, and where its second
        occurrence is; each step takes the first key of its name, as kubectl's NoDoubleKeySchema
        seeks it in the raw JSON (KC pkg/validation/schema.go:42-91). None for a YAML document,
        whose JSON kubectl makes from a map (no key twice)."""
        node = self.node
        if not self.from_json:
            return None
        for step in path:
            if not isinstance(node, MappingNode):
                return None
            found = next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == step), None)
            if found is None:
                return None
            node = found
        if not isinstance(node, MappingNode):
            return None
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode):
                if key.value in seen:
                    return key.value, (key.start_mark.line + 1 + self.line_offset, key.start_mark.column + 1)
                seen.add(key.value)
        return None

    def position(self, path: tuple[str | int, ...]) -> tuple[int, int]:
        """1-based (line, column) of the deepest node on ``path`` that exists in the source."""
        line, column = locate(self.node, path, self._keys)
        return line + self.line_offset, column



def iter_documents(stream: str | bytes | Readable, nodes: NodeBudget | None = None) -> Iterator[Document]:
    """Yield each non-empty document of a YAML (or JSON) stream, one at a time, as kubectl reads it.

    Memory stays bounded by the largest document (itself bounded), not the stream, unless the
    stream is a run of JSON values (read whole, as the input budget bounds it). Raises
    YAMLInputError with the position of a syntax error, an unknown tag, an alias bomb, excessive
    nesting or an oversized document; TooManyNodes (one) once the nodes read pass ``nodes``: the
    run's budget, shared by all its reads, or, when none is given, a fresh ``MAX_NODES`` for this stream.
    """
    nodes = NodeBudget() if nodes is None else nodes
    for chunk, first_line, from_json in chunks(stream):
        try:
            node = first_document(chunk, nodes)
            if node is None:
                continue
            with recursion_room():
                try:
                    value = Builder().document(node)
                except RecursionError:
                    raise node_error(node, DEPTH_ERROR) from None
        except YAMLInputError as exc:
            exc.line += first_line
            raise
        if value is not None:  # kubectl passes over a document whose JSON is null
            yield Document(value, node, first_line, from_json)



def locate(node: Node, path: tuple[str | int, ...], keys: dict[int, dict[str, tuple[Any, Node]]] | None = None) -> tuple[int, int]:
    """1-based (line, column) of the deepest node along ``path`` (a key's position for a member).

    ``keys`` caches each mapping's key index, so locating one finding per key of a 20,000-key
    mapping is linear in the keys, not quadratic.
    """
    keys = {} if keys is None else keys
    mark = node.start_mark
    for step in path:
        if isinstance(node, MappingNode):
            index = keys.get(id(node))
            if index is None:
                index = keys[id(node)] = {
                    k.value: (k.start_mark, v) for k, v in node.value if isinstance(k, ScalarNode)
                }  # the last duplicate wins, as in the value
            if str(step) not in index:
                break
            mark, node = index[str(step)]
        elif isinstance(node, SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
            mark = node.start_mark
        else:
            break
    return mark.line + 1, mark.column + 1
