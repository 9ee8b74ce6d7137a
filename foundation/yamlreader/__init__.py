"""Read YAML the way `kubectl apply -f` does, safely, with positions for error messages.

kubectl turns every YAML document into JSON with sigs.k8s.io/yaml (a fork of go-yaml v2, which
resolves plain scalars by YAML 1.1 rules) before anything reaches the API server. To agree with
the server, the values here must be the ones that JSON would carry:

- plain ``yes/no/on/off/y/n`` (any of their three spellings) are booleans, ``~``/``null``/empty
  are null; quoted scalars are always strings (goyaml.v2/resolve.go, ``resolveMapList``);
- integers use Go's ``strconv.ParseInt(s, 0, 64)`` after removing ``_``: ``0x1F``, ``017``
  (octal), ``0o17``, ``0b11``, ``1_000``; a value that fits no int64/uint64 but matches the YAML
  float pattern is a float (``1e3``, ``08``);
- timestamps stay strings (go-yaml v2 decodes them into ``interface{}`` as the original text);
- map keys become strings (``convertToJSONableObject``): ints in decimal, booleans as
  ``true``/``false``; a null or collection key is an error;
- ``json.Marshal`` writes a float with no fraction as an integer (``1.0`` -> ``1``, ``1e3`` ->
  ``1000``) and the server reads it back as int64, so integral floats in the int64 range become
  ``int``; any number beyond int64 is read back as a float; NaN and infinities cannot be marshalled;
- the last of duplicate keys wins; ``<<`` merge keys are honoured in document order, as go-yaml
  v2 applies them: a merge writes over the keys before it, a later key over the merge; a NaN or a
  key JSON cannot carry (null, beyond int64) is an error only if no later key or merge replaces it
  (kubectl finds them after decoding, in what is left);
- ``!!binary`` is base64-decoded (decode.go ``scalar``);
- the stream is cut as kubectl cuts it (apimachinery util/yaml, ``YAMLOrJSONDecoder``): at lines
  starting with ``---``, one document per chunk, JSON values one after another when the stream
  starts with ``{`` (``chunks``).

Parsing uses libyaml (pyyaml's C parser) and builds values straight from its node tree, which
also carries the line and column of every key and value, so an error can be located without a
second parse. Safety: only the YAML core tags are accepted (no Python object tags), where kubectl
would read a scalar with any other tag as its text, and alias expansion is bounded as go-yaml v2
bounds it, so a "billion laughs" document is an error rather than an OOM; and every node parsed counts
in a budget (``NodeBudget``, ``MAX_NODES`` a run), so no shape of text takes more memory than it allows.
"""


from __future__ import annotations

from .compose import lift_libyaml_nest_limit
from .documents import Document, iter_documents, locate
from .limits import (
    ALIAS_MIN_ALIASED,
    ALIAS_MIN_DECODES,
    ALIAS_RATIO_RANGE_HIGH,
    ALIAS_RATIO_RANGE_LOW,
    DEPTH_ERROR,
    JSON_DEPTH_ERROR,
    LIBYAML_NEST_LIMIT,
    MAX_DEPTH,
    MAX_DOCUMENT_SIZE,
    MAX_NODES,
    RECURSION_ROOM,
    NodeBudget,
    TooManyNodes,
    YAMLInputError,
    recursion_room,
)
from .scalars import CORE, resolve_plain
from .streams import Readable, json_end

__all__ = ["ALIAS_MIN_ALIASED", "ALIAS_MIN_DECODES", "ALIAS_RATIO_RANGE_HIGH", "ALIAS_RATIO_RANGE_LOW",
           "CORE", "DEPTH_ERROR", "JSON_DEPTH_ERROR", "LIBYAML_NEST_LIMIT", "MAX_DEPTH",
           "MAX_DOCUMENT_SIZE", "MAX_NODES", "RECURSION_ROOM", "Document", "NodeBudget", "Readable", "TooManyNodes",
           "YAMLInputError", "iter_documents", "json_end",
           "lift_libyaml_nest_limit", "locate", "recursion_room", "resolve_plain"]
