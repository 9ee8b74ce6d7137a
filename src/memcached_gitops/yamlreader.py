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
  starts with ``{`` (``_chunks``).

Parsing uses libyaml (pyyaml's C parser) and builds values straight from its node tree, which
also carries the line and column of every key and value, so an error can be located without a
second parse. Safety: only the YAML core tags are accepted (no Python object tags), where kubectl
would read a scalar with any other tag as its text, and alias expansion is bounded, so a "billion
laughs" document is an error rather than an OOM.
"""

from __future__ import annotations

import base64
import bisect
import io
import itertools
import json
import math
import re
import struct
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import IO, Any

import yaml
from yaml import _yaml as libyaml
from yaml._yaml import CParser
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .excerpt import excerpt, quote_value

_CORE = "tag:yaml.org,2002:"
_PLAIN = "!plain"  # the tag given to untagged plain scalars, resolved go-yaml's way

_BOOLS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
#: resolve.go's ``resolveMap``: the words a plain scalar resolves by, whatever its first character.
_RESOLVED = {**_BOOLS, **dict.fromkeys(_NULLS), **_SPECIAL_FLOATS}
#: resolve.go's hint for an int, float or timestamp: a plain scalar starting with a sign or digit.
_NUMBER_START = frozenset("+-0123456789")
_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
#: Go's ParseFloat of a scalar that starts with "." (go-yaml tries it with no pattern first):
#: underscores are allowed between digits (strconv's underscoreOK), as in ``.5_0``.
_DOT_FLOAT = re.compile(r"^\.[0-9]+(_[0-9]+)*([eE][-+]?[0-9]+(_[0-9]+)*)?$")
#: Go's integer syntax with base 0: a sign, then hex, octal (``0o17`` or ``017``), binary or decimal digits.
_GO_INT = re.compile(r"^(?P<sign>[-+]?)(?:0[xX](?P<x>[0-9a-fA-F]+)|0[oO]?(?P<o>[0-7]+)|0[bB](?P<b>[01]+)|(?P<d>[1-9][0-9]*|0))$")
_BASES = {"x": 16, "o": 8, "b": 2, "d": 10}
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
#: Alias expansion allowed beyond the document's own size (go-yaml v2 bounds it likewise).
ALIAS_EXPANSION_LIMIT = 10_000
ALIAS_EXPANSION_RATIO = 4
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
#: The scalar tags go-yaml v2 decodes (resolve.go, decode.go); any other tag is refused here.
_SCALAR_TAGS = frozenset(_CORE + tag for tag in ("str", "timestamp", "binary", "null", "bool", "int", "float"))
#: Decimal digits of the largest uint64: a longer decimal is out of ParseUint's range.
_UINT64_DIGITS = 20
#: json.Marshal writes each byte of a Go string that is not UTF-8 as U+FFFD; Python's
#: surrogateescape decoding has turned each such byte into one of these surrogates.
_NOT_UTF8 = dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd")


class YAMLInputError(ValueError):
    """A document that kubectl could not turn into JSON; carries a 1-based position."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class Document:
    """One YAML document of a stream: its JSON-compatible value and where it came from."""

    __slots__ = ("value", "node", "line_offset", "_keys")

    def __init__(self, value: Any, node: Node, line_offset: int) -> None:
        self.value = value
        self.node = node  # libyaml's node tree of the document's chunk, for positions
        self.line_offset = line_offset  # lines of the stream before the chunk
        self._keys: dict[int, dict[str, tuple[Any, Node]]] = {}  # per mapping node: key -> (mark, value)

    def position(self, path: tuple[str | int, ...]) -> tuple[int, int]:
        """1-based (line, column) of the deepest node on ``path`` that exists in the source."""
        line, column = locate(self.node, path, self._keys)
        return line + self.line_offset, column


def _go_int(text: str) -> int | None:
    """strconv.ParseInt/ParseUint with base 0 (``text`` has no underscores)."""
    match = _GO_INT.match(text)
    if not match:
        return None
    base, digits = next((base, digits) for base, digits in match.groupdict().items() if base in _BASES and digits)
    if base == "d" and len(digits) > _UINT64_DIGITS:
        return None  # out of range, and never handed to int() (CPython's 4300-digit limit for decimals)
    n = int(digits, _BASES[base])
    if match["sign"] == "-":
        n = -n
    return n if _INT64_MIN <= n <= _UINT64_MAX else None


def _go_float(plain: str, text: str) -> float | str:
    """strconv.ParseFloat of ``plain`` (``text`` without underscores): beyond float64 it fails with
    ErrRange, and go-yaml keeps ``text``, a string.

    So a 5,000-digit ``size`` reaches the server as a string (``must be of type integer``).
    """
    value = float(plain)
    return text if math.isinf(value) else value


def resolve_plain(text: str) -> Any:
    """The value go-yaml v2 gives an untagged plain scalar."""
    if text in _RESOLVED:
        return _RESOLVED[text]
    if text.startswith("."):
        return _go_float(text, text) if _DOT_FLOAT.match(text) else text  # Python's float() takes "5_0" too
    if text[0] in _NUMBER_START:
        plain = text.replace("_", "")
        n = _go_int(plain)
        if n is not None:
            return n
        if _YAML_FLOAT.match(plain):
            return _go_float(plain, text)
    return text


def _tagged_scalar(node: ScalarNode) -> Any:
    """A scalar with an explicit core tag (``!!str 1``, ``!!int "3"``...), as go-yaml decodes it."""
    tag, text = node.tag[len(_CORE):], node.value
    if tag in ("str", "timestamp"):
        return text
    if tag == "binary":
        return _binary(node)
    value = resolve_plain(text)
    if tag == "null" and value is None:
        return None
    if tag == "bool" and isinstance(value, bool):
        return value
    if tag == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tag == "float" and (isinstance(value, float) or type(value) is int and value <= _INT64_MAX):
        return float(value)  # go-yaml converts an int or int64, not a uint64 (resolve.go)
    raise _error(node, f"cannot decode !!{_resolved_tag(value)} {quote_value(text)} as a !!{tag}")


def _binary(node: ScalarNode) -> str:
    """go-yaml's ``!!binary``: Go's base64 StdEncoding (padded; line breaks skipped) decoded to a Go
    string, which json.Marshal writes with each byte that is not UTF-8 as U+FFFD."""
    try:
        data = base64.b64decode(node.value.replace("\n", "").replace("\r", ""), validate=True)
    except ValueError:  # binascii.Error, or a character beyond ASCII
        raise _error(node, "!!binary value contains invalid base64 data") from None
    return data.decode(errors="surrogateescape").translate(_NOT_UTF8)


def _resolved_tag(value: Any) -> str:
    """The tag go-yaml resolves a plain scalar to, for its "cannot decode" message."""
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float"}.get(type(value), "str")


def _scalar(node: ScalarNode) -> Any:
    """The value go-yaml v2 decodes a scalar to, before kubectl's JSON step."""
    if node.tag == _PLAIN:
        return resolve_plain(node.value)
    if node.tag in _SCALAR_TAGS:
        return _tagged_scalar(node)
    raise _error(node, f"unknown tag {quote_value(node.tag)}: only the YAML core tags are allowed")


def _error(node: Node, message: str) -> YAMLInputError:
    return YAMLInputError(message, node.start_mark.line + 1, node.start_mark.column + 1)


def _json_number(value: Any, node: Node) -> Any:
    """The number as the API server reads it back from kubectl's JSON."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise _error(node, f"unsupported value {quote_value(node.value)}: JSON has no NaN or infinity")
        if value.is_integer():
            # json.Marshal prints the shortest digits that read back as this float (2**60 is
            # 1152921504606847000), without a fraction; the server reads them as an int64 if they fit
            printed = int(Decimal(repr(value)))
            if _INT64_MIN <= printed <= _INT64_MAX:
                return printed
        return value
    if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:  # (a bool is 0 or 1)
        return float(value)
    return value


def _key_string(value: Any, node: Node) -> str:
    """The map key as sigs.k8s.io/yaml's ``convertToJSONableObject`` writes it (yaml.go)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value > _INT64_MAX:
        raise _error(node, f"unsupported map key {quote_value(node.value)}: an integer key must fit in int64")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float32_key(value)
    raise _error(node, f"unsupported map key {quote_value(node.value)}: a key must be a string, number or boolean")


def _float32(value: float) -> float:
    """Go's ``float32(value)``: rounded to the nearest single, infinite beyond its range."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _go_float32_key(value: float) -> str:
    """``strconv.FormatFloat(value, 'g', -1, 32)`` with ``.inf``/``-.inf``/``.nan`` for Go's words.

    The shortest digits that read back as the same float32; an exponent below -4 or from 6 on is
    written ``1e+06``/``5e-05`` (Go's %e, two exponent digits at least), otherwise plainly.
    """
    single = _float32(value)
    if math.isnan(single):
        return ".nan"
    if math.isinf(single):
        return {math.inf: ".inf", -math.inf: "-.inf"}[single]
    precision = 0  # a float32 reads back from 9 significant digits at most
    while _float32(float(f"{single:.{precision}e}")) != single:
        precision += 1
    mantissa, exponent = f"{single:.{precision}e}".split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits, exp = mantissa.replace("-", "").replace(".", ""), int(exponent)
    if exp < -4 or exp >= 6:
        fraction = "." + digits[1:] if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{exp:+03d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    if exp + 1 >= len(digits):
        return sign + digits + "0" * (exp + 1 - len(digits))
    return f"{sign}{digits[:exp + 1]}.{digits[exp + 1:]}"


class _Unsupported:
    """A value or key that JSON cannot carry, in place until the document is built: kubectl meets
    it only after decoding (convertToJSONableObject, json.Marshal), so a later duplicate key or
    merge that replaces it leaves no error."""

    __slots__ = ("error",)

    def __init__(self, error: YAMLInputError) -> None:
        self.error = error


def _reachable(value: Any) -> set[int]:
    """The ids of ``value`` and of every key, value and item inside it."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        found.add(id(item))
        if isinstance(item, dict):
            stack += [*item, *item.values()]
        elif isinstance(item, list):
            stack += item
    return found


class _Builder:
    """Builds JSON values from a node tree, copying aliases (bounded) so no value is shared."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.built = 0
        self.unsupported: list[_Unsupported] = []  # in document order

    def document(self, node: Node) -> Any:
        """The document's value; the first value or key JSON cannot carry left in it is the error."""
        value = self.build(node)
        if self.unsupported:
            reachable = _reachable(value)
            for unsupported in self.unsupported:
                if id(unsupported) in reachable:
                    raise unsupported.error
        return value

    def jsonable(self, convert: Callable[[Any, Node], Any], value: Any, node: Node) -> Any:
        """``convert(value, node)``, or, if JSON cannot carry it, an ``_Unsupported`` in its place."""
        try:
            return convert(value, node)
        except YAMLInputError as exc:
            unsupported = _Unsupported(exc)
            self.unsupported.append(unsupported)
            return unsupported

    def count(self, node: Node) -> None:
        """Counts each node built; refuses a document whose aliases copy too much of it."""
        self.built += 1
        if id(node) not in self.seen:
            self.seen.add(id(node))
        elif self.built > ALIAS_EXPANSION_LIMIT and self.built > ALIAS_EXPANSION_RATIO * len(self.seen):
            raise _error(node, "document contains excessive aliasing")

    def build(self, node: Node) -> Any:
        self.count(node)
        if isinstance(node, ScalarNode):
            return self.jsonable(_json_number, _scalar(node), node)
        if node.tag not in (None, _CORE + "map", _CORE + "seq"):
            raise _error(node, f"unknown tag {quote_value(node.tag)}: only the YAML core tags are allowed")
        if isinstance(node, SequenceNode):
            return [self.build(item) for item in node.value]
        return self.mapping(node)

    def mapping(self, node: MappingNode) -> dict[str, Any]:
        """Keys in document order, as go-yaml v2 decodes them: a later key replaces an earlier one,
        and a ``<<`` merge writes its keys over those before it (decode.go ``mapping``, ``merge``)."""
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if _is_merge(key_node):
                for source in reversed(self._merge_sources(value_node)):  # earlier maps take precedence
                    out.update(self.mapping(source))
                continue
            if not isinstance(key_node, ScalarNode):
                raise _error(key_node, "unsupported map key: a key must be a scalar")
            self.count(key_node)  # a key keeps go-yaml's value: JSON's number rules apply to values only
            out[self.jsonable(_key_string, _scalar(key_node), key_node)] = self.build(value_node)
        return out

    @staticmethod
    def _merge_sources(node: Node) -> list[MappingNode]:
        if isinstance(node, MappingNode):
            return [node]
        if isinstance(node, SequenceNode) and all(isinstance(n, MappingNode) for n in node.value):
            return list(node.value)
        raise _error(node, "map merge requires map or sequence of maps as the value")


def _is_merge(node: Node) -> bool:
    """go-yaml's ``isMerge``: a plain ``<<`` or one tagged ``!!merge``; a quoted "<<" is a key."""
    return isinstance(node, ScalarNode) and node.value == "<<" and node.tag in (_PLAIN, _CORE + "merge")


class _Open:
    """A collection being composed: its node, the key awaiting a value, its anchor, and the
    indentation levels go-yaml's scanner has pushed by the time it starts."""

    __slots__ = ("node", "key", "anchor", "indents")

    def __init__(self, node: SequenceNode | MappingNode, anchor: str | None, indents: int) -> None:
        self.node, self.key, self.anchor, self.indents = node, None, anchor, indents


def _compose(parser: CParser) -> Node:
    """One document's node tree, composed from libyaml's event stream without recursion.

    pyyaml's composers recurse once per level (a 50,000-deep flow sequence overflows the C stack);
    this loop keeps an explicit stack and refuses, as go-yaml does, more than ``MAX_DEPTH`` nested
    flow or block collections. A document within those limits but nested more than ``MAX_DEPTH``
    deep in all is refused at its end, as kubectl's JSON decoding refuses it once the whole
    document has been read as YAML.
    """
    anchors: dict[str, Node] = {}
    stack: list[_Open] = []
    flows = 0  # open flow collections
    root: Node | None = None
    too_deep: YAMLInputError | None = None
    while True:
        event = parser.get_event()
        if isinstance(event, yaml.DocumentEndEvent):
            if too_deep is not None:
                raise too_deep
            return root  # libyaml gives every document a node: an empty one is an empty plain scalar
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            done = stack.pop()
            flows -= bool(done.node.flow_style)
            if done.anchor is not None:
                anchors[done.anchor] = done.node
            continue
        node: Node
        if isinstance(event, yaml.AliasEvent):
            if any(o.anchor == event.anchor for o in stack):
                raise _mark_error(event, f"anchor {_quote_name(event.anchor)} value contains itself")
            if event.anchor not in anchors:
                raise _mark_error(event, f"unknown anchor {_quote_name(event.anchor)} referenced")
            node = anchors[event.anchor]
        elif isinstance(event, yaml.ScalarEvent):
            # go-yaml resolves only untagged plain scalars: a quoted one, or one with the non-specific
            # tag "!" (``! 1``), is a string
            tag = event.tag or (_PLAIN if event.implicit[0] else _CORE + "str")
            tag = _CORE + "str" if tag == "!" else tag
            node = ScalarNode(tag, event.value, event.start_mark)
            if event.anchor is not None:
                anchors[event.anchor] = node
        else:  # a collection starts
            kind = SequenceNode if isinstance(event, yaml.SequenceStartEvent) else MappingNode
            # go-yaml ignores a collection's tag; an untagged one (or "!") has none here
            node = kind(None if event.tag == "!" else event.tag, [], event.start_mark, flow_style=event.flow_style)
            outer = stack[-1] if stack else None
            indents = outer.indents if outer else 0
            if event.flow_style:
                flows += 1
                if flows > MAX_DEPTH:
                    raise _mark_error(event, DEPTH_ERROR)
            elif outer is None or event.start_mark.column > outer.node.start_mark.column:
                # go-yaml pushes an indentation level for a block collection right of the one
                # around it; a "- " list at its key's column (an indentless sequence) pushes none
                indents += 1
                if indents > MAX_DEPTH:
                    raise _mark_error(event, DEPTH_ERROR)
            if len(stack) >= MAX_DEPTH and too_deep is None:  # this collection is the 10,001st level
                too_deep = _mark_error(event, JSON_DEPTH_ERROR)
        if stack:
            parent = stack[-1]
            if isinstance(parent.node, SequenceNode):
                parent.node.value.append(node)
            elif parent.key is None:
                parent.key = node
            else:
                parent.node.value.append((parent.key, node))
                parent.key = None
        else:
            root = node
        if isinstance(node, (SequenceNode, MappingNode)) and not isinstance(event, yaml.AliasEvent):
            stack.append(_Open(node, event.anchor, indents))


def _mark_error(event: Any, message: str) -> YAMLInputError:
    return YAMLInputError(message, event.start_mark.line + 1, event.start_mark.column + 1)


def _quote_name(name: str) -> str:
    return repr(excerpt(name))


def iter_documents(stream: str | bytes | IO[Any]) -> Iterator[Document]:
    """Yield each non-empty document of a YAML (or JSON) stream, one at a time, as kubectl reads it.

    Memory stays bounded by the largest document (itself bounded), not the stream, unless the
    stream is a run of JSON values (read whole, as the input budget bounds it). Raises
    YAMLInputError with the position of a syntax error, an unknown tag, an alias bomb, excessive
    nesting or an oversized document.
    """
    for chunk, first_line in _chunks(stream):
        try:
            node = _first_document(chunk)
            if node is None:
                continue
            with recursion_room():
                try:
                    value = _Builder().document(node)
                except RecursionError:
                    raise _error(node, DEPTH_ERROR) from None
        except YAMLInputError as exc:
            exc.line += first_line
            raise
        if value is not None:  # kubectl passes over a document whose JSON is null
            yield Document(value, node, first_line)


#: libyaml 0.2.6's limit, read through PyYAML 6.0.4 (None on older PyYAMLs): looked up once.
_GET_NEST_LIMIT = getattr(libyaml, "_get_max_nest_level", None)


def lift_libyaml_nest_limit() -> None:
    """Raise libyaml's nesting limit to ``LIBYAML_NEST_LIMIT`` where libyaml has one.

    PyYAML 6.0.4 exposes libyaml 0.2.6's ``yaml_set_max_nest_level`` as ``_yaml._set_max_nest_level``
    (a no-op, with ``_get_max_nest_level() == -1``, when built against an older libyaml); PyYAML
    6.0.3 and older have neither, and their libyaml 0.2.5 no limit. The limit is one global of the
    process, which any other library may lower, so it is checked before each parse: a C call.
    """
    if _GET_NEST_LIMIT is not None and -1 < _GET_NEST_LIMIT() < LIBYAML_NEST_LIMIT:
        libyaml._set_max_nest_level(LIBYAML_NEST_LIMIT)


def _first_document(chunk: bytes) -> Node | None:
    """The node tree of the first document of a chunk (go-yaml's Unmarshal reads no further)."""
    lift_libyaml_nest_limit()
    parser = CParser(chunk)
    try:
        parser.get_event()  # the stream's start
        if isinstance(parser.get_event(), yaml.StreamEndEvent):
            return None  # no document: blank lines and comments
        return _compose(parser)
    except yaml.MarkedYAMLError as exc:
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        mark = exc.problem_mark  # libyaml marks every scanner and parser error with its problem
        raise YAMLInputError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1) from None
    except yaml.reader.ReaderError as exc:  # binary junk, bad encoding: libyaml gives a byte offset
        before = chunk[:exc.position]
        problem = str(exc).split("\n")[0]  # without '  in "<byte string>", position N'
        raise YAMLInputError(f"invalid YAML: {problem}", before.count(b"\n") + 1, len(before) - before.rfind(b"\n")) from None
    finally:
        parser.dispose()


def _too_large(line: int, column: int) -> YAMLInputError:
    return YAMLInputError(
        f"document is larger than {MAX_DOCUMENT_SIZE // (1024 * 1024)} MiB, the API server's request limit; not read",
        line, column)


_READ_SIZE = 1 << 16
_JSON_SPACE = re.compile(r"[ \t\r\n]*")
_REST_OF_LINE = re.compile(r"[^\S\n]*\n?")


def _chunks(stream: str | bytes | IO[Any]) -> Iterator[tuple[bytes, int]]:
    """(chunk, lines of the stream before it) as kubectl's YAMLOrJSONDecoder cuts a stream: a
    run of JSON values if its first non-blank character is ``{``, else YAML chunks."""
    lines = _lines(stream)
    head: list[bytes] = []
    for line in lines:
        head.append(line)
        if line.strip():
            break
    if head and head[-1].lstrip().startswith(b"{"):
        return _json_then_yaml(b"".join(head) + b"".join(lines))
    return _yaml_chunks(itertools.chain(head, lines), 0)


def _lines(stream: str | bytes | IO[Any]) -> Iterator[bytes]:
    """The stream's lines, each with its ``\\n`` but perhaps the last; a line longer than a
    document may be is the last, cut there: it is refused, and the rest is never read."""
    if isinstance(stream, str):
        stream = io.StringIO(stream)
    elif isinstance(stream, bytes):
        stream = io.BytesIO(stream)
    pending = b""
    while block := stream.read(_READ_SIZE):
        if isinstance(block, str):
            block = block.encode(errors="surrogatepass")  # a lone surrogate is then a reader error
        *lines, pending = (pending + block).split(b"\n")
        yield from (line + b"\n" for line in lines)
        if len(pending) > MAX_DOCUMENT_SIZE:
            yield pending
            return
    if pending:
        yield pending


def _yaml_chunks(lines: Iterable[bytes], first: int) -> Iterator[tuple[bytes, int]]:
    """apimachinery's YAMLReader over ``lines``, the first of which is line ``first`` (0-based).

    A line that starts with ``---`` ends a chunk and is dropped (it stays when it opens one), and
    anything but blanks and a comment after it is an error. So ``%YAML 1.1`` before ``---`` is a
    chunk of its own (an error), and what follows ``...`` inside a chunk is never read.
    """
    chunk: list[bytes] = []
    size = start = 0
    for number, line in enumerate(lines, first):
        if line.startswith(b"---"):
            rest = line[3:].strip()
            if rest and not rest.startswith(b"#"):
                separator = excerpt(rest.decode(errors="replace"))
                raise YAMLInputError(f"invalid Yaml document separator: {separator}", number + 1, 1)
            if chunk:
                yield b"".join(chunk), start
                chunk, size = [], 0
                continue
        if not chunk:
            start = number
        chunk.append(line)
        size += len(line)
        if size > MAX_DOCUMENT_SIZE:
            raise _too_large(start + 1, 1)
    if chunk:
        yield b"".join(chunk), start


def _json_then_yaml(data: bytes) -> Iterator[tuple[bytes, int]]:
    """YAMLOrJSONDecoder on a stream that starts with ``{``: JSON values one after another. When
    one fails to decode after a single value, the rest (from the end of that value's line) is read
    as YAML; after two or more, it is an error."""
    text = data.decode(errors="replace")
    breaks = [m.start() for m in re.finditer("\n", text)]

    def where(pos: int) -> tuple[int, int]:
        """0-based line and column of ``pos``."""
        line = bisect.bisect_left(breaks, pos)
        return line, pos - (breaks[line - 1] + 1 if line else 0)

    decoder = json.JSONDecoder(parse_constant=_no_constant)
    values = end = 0
    while (start := _JSON_SPACE.match(text, end).end()) < len(text):
        line, column = where(start)
        try:
            end = _json_end(decoder, text, start)
        except ValueError as exc:
            if values > 1:
                if isinstance(exc, _TooDeep):  # at its 10,001st bracket, as the YAML path places it
                    line, column = where(exc.pos)
                raise YAMLInputError(f"invalid JSON: {str(exc).split(':')[0]}", line + 1, column + 1) from None
            rest = _REST_OF_LINE.match(text, end).end()
            yield from _yaml_chunks(_lines(text[rest:]), where(rest)[0])
            return
        if end - start > MAX_DOCUMENT_SIZE:
            raise _too_large(line + 1, column + 1)
        yield (" " * column + text[start:end]).encode(), line  # at its column, for positions
        values += 1


class _TooDeep(json.JSONDecodeError):
    """A JSON value opens a collection on its ``MAX_DEPTH + 1``st level, at ``pos``: encoding/json's
    ``exceeded max depth``, a syntax error like any other (so the YAMLOrJSONDecoder rules apply)."""


def _json_end(decoder: json.JSONDecoder, text: str, start: int) -> int:
    """Where the JSON value at ``start`` ends (``raw_decode``), at any depth kubectl reads.

    The json module's C scanner recurses in C once per level, under the recursion limit on 3.11
    (1,000 by default) and under a fixed C limit of its own from 3.12 (a few thousand levels there,
    whatever ``sys.setrecursionlimit`` says), so it cannot read what kubectl reads, and raising the
    limit for it would only let untrusted input take the C stack deeper. So:

    - the C scanner is tried first, as before: ordinary JSON takes this path and pays nothing more
      (a try block costs nothing in 3.11 unless it catches);
    - only a value it gives up on (RecursionError) is read again by the json module's pure-Python
      scanner (``json.scanner.py_make_scanner``, same grammar, same errors), with the collection
      parsers wrapped to count levels: the 10,001st raises ``_TooDeep`` at its bracket as soon as
      it is reached, as encoding/json's scanner does, so syntax errors before it win, and nothing
      runs past it (no scan of the rest of the stream). Its recursion is Python-to-Python calls,
      which use no C stack since 3.11; three frames a level, at most ``3 * MAX_DEPTH`` then, which
      ``recursion_room`` (the limit the YAML builder already runs under) covers.
    """
    try:
        return decoder.raw_decode(text, start)[1]
    except RecursionError:
        pass
    deep = json.JSONDecoder(parse_constant=decoder.parse_constant)
    depth = 0

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, object_hook: Any,
                     object_pairs_hook: Any, memo: Any) -> tuple[Any, int]:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise _TooDeep(f"exceeded max depth of {MAX_DEPTH}", s_and_end[0], s_and_end[1] - 1)
        value = json.decoder.JSONObject(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo)
        depth -= 1
        return value

    def parse_array(s_and_end: tuple[str, int], scan_once: Any) -> tuple[Any, int]:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise _TooDeep(f"exceeded max depth of {MAX_DEPTH}", s_and_end[0], s_and_end[1] - 1)
        value = json.decoder.JSONArray(s_and_end, scan_once)
        depth -= 1
        return value

    deep.parse_object, deep.parse_array = parse_object, parse_array  # type: ignore[assignment]
    deep.scan_once = json.scanner.py_make_scanner(deep)
    with recursion_room():
        return deep.raw_decode(text, start)[1]


def _no_constant(name: str) -> Any:
    """Go's encoding/json has no NaN or Infinity."""
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


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
