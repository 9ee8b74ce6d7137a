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
- the last of duplicate keys wins; ``<<`` merge keys are honoured; a NaN or a null key is an
  error only if no later duplicate replaces it (JSON marshalling sees only what is left);
- tags: go-yaml resolves str, bool, int, float, null and timestamp; any other tag (``!foo``,
  ``!!python/object``) leaves the scalar's text, a string, and ``!!binary`` is base64-decoded;
- the stream is cut as kubectl cuts it (``iter_documents``): at lines starting with ``---``, one
  document per chunk, JSON values one after another when the stream starts with ``{``.

Parsing uses libyaml (pyyaml's C parser) and builds values straight from its node tree, which
also carries the line and column of every key and value, so an error can be located without a
second parse. Safety: no tag ever constructs an object (an unknown tag gives a string), and
alias expansion is bounded, so a "billion laughs" document is an error rather than an OOM.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import yaml
from yaml.cyaml import CParser
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .excerpt import excerpt, quote_value

_CORE = "tag:yaml.org,2002:"
_PLAIN = "!plain"  # tag given by our resolver to untagged plain scalars, resolved go-yaml's way

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
_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[1-9][0-9]*|0)$")
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
#: Alias expansion allowed beyond the document's own size (go-yaml v2 bounds it likewise).
ALIAS_EXPANSION_LIMIT = 10_000
ALIAS_EXPANSION_RATIO = 4
#: go-yaml v2's scanner (sigs.k8s.io/yaml/goyaml.v2 scannerc.go, ``max_flow_level`` and
#: ``max_indents``): more than 10,000 nested flow collections, or block collections, is an error.
MAX_DEPTH = 10_000
DEPTH_ERROR = f"yaml: exceeded max depth of {MAX_DEPTH}"
#: The API server refuses a request body over 3 MiB (apiserver's MaxRequestBodyBytes), so a
#: larger document can never be applied; it is refused before it is composed.
MAX_DOCUMENT_SIZE = 3 * 1024 * 1024
#: Digits beyond which a plain scalar cannot be an int64/uint64 (Go's ParseInt/ParseUint).
_MAX_INT_DIGITS = {"x": 16, "b": 64, "o": 22, "": 20}


class YAMLInputError(ValueError):
    """A document that kubectl could not turn into JSON; carries a 1-based position."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class Document:
    """One YAML document of a stream: its JSON-compatible value and where it came from."""

    __slots__ = ("value", "node", "index", "line_offset", "_keys")

    def __init__(self, value: Any, node: Node, index: int, line_offset: int = 0) -> None:
        self.value = value
        self.node = node  # libyaml's node tree of the document's chunk, for positions
        self.index = index  # 0-based document index in the stream
        self.line_offset = line_offset  # lines of the stream before the chunk
        self._keys: dict[int, dict[str, tuple[Any, Node]]] = {}  # per mapping node: key -> (mark, value)

    @property
    def line(self) -> int:
        return self.node.start_mark.line + 1 + self.line_offset

    def position(self, path: tuple[str | int, ...]) -> tuple[int, int]:
        """1-based (line, column) of the deepest node on ``path`` that exists in the source."""
        line, column = locate(self.node, path, self._keys)
        return line + self.line_offset, column


class _Resolver(yaml.resolver.BaseResolver):
    """Tags untagged plain scalars for go-yaml resolution; quoted scalars are strings."""

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:  # noqa: D102
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _CORE + "str"
        return _CORE + ("seq" if kind is SequenceNode else "map")


class _Parser(CParser, _Resolver):  # type: ignore[misc]
    def __init__(self, stream: str | bytes | IO[Any]) -> None:
        CParser.__init__(self, stream)
        _Resolver.__init__(self)


def _go_int(text: str) -> int | None:
    """strconv.ParseInt/ParseUint with base 0 (``text`` has no underscores)."""
    if not _GO_INT.match(text):
        return None
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-")
    low = digits[:2].lower()
    base = low[1] if low in ("0x", "0b", "0o") else ("o" if len(digits) > 1 and digits[0] == "0" else "")
    significant = (digits[2:] if base in ("x", "b") or low == "0o" else digits).lstrip("0")
    if len(significant) > _MAX_INT_DIGITS[base]:
        return None  # out of ParseInt's range, and never handed to int() (CPython's 4300-digit limit)
    if low == "0x":
        n = int(digits[2:], 16)
    elif low == "0b":
        n = int(digits[2:], 2)
    elif low == "0o":
        n = int(digits[2:], 8)
    elif len(digits) > 1 and digits[0] == "0":
        n = int(digits[1:], 8)
    else:
        n = int(digits)
    n *= sign
    return n if _INT64_MIN <= n <= _UINT64_MAX else None


def _go_float(plain: str, text: str | None = None) -> float | str:
    """strconv.ParseFloat: beyond float64 it fails with ErrRange, and go-yaml keeps the scalar a string.

    So a 5,000-digit ``size`` reaches the server as a string (``must be of type integer``).
    """
    value = float(plain)
    return (text if text is not None else plain) if math.isinf(value) else value


def resolve_plain(text: str) -> Any:
    """The value go-yaml v2 gives an untagged plain scalar."""
    if not text:
        return None
    first = text[0]
    if first in "yYnNtTfFoO~":
        if text in _BOOLS:
            return _BOOLS[text]
        if text in _NULLS:
            return None
        return text
    if first == ".":
        if text in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[text]
        return _go_float(text) if _YAML_FLOAT.match(text) else text
    if first in "0123456789+-":
        if text in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[text]
        plain = text.replace("_", "")
        n = _go_int(plain)
        if n is not None:
            return n
        if _YAML_FLOAT.match(plain):
            return _go_float(plain, text)
    if text in _NULLS:
        return None
    return text


def _tagged_scalar(node: ScalarNode) -> Any:
    """A scalar with an explicit tag (``!!str 1``, ``!!int "3"``, ``!foo x``...), as go-yaml v2 decodes it.

    Only the tags it can resolve (str, timestamp, null, bool, int, float) are checked; any other
    tag, local (``!foo``) or not (``!!python/object``), leaves the scalar's text, a string, and
    ``!!binary`` is base64 decoded (goyaml.v2 resolve.go ``resolvableTag``, decode.go ``scalar``).
    """
    if not node.tag.startswith(_CORE):
        return node.value
    tag, text = node.tag[len(_CORE):], node.value
    if tag in ("str", "timestamp"):
        return text
    if tag == "binary":
        try:
            data = base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
        except (binascii.Error, ValueError):
            raise _error(node, "!!binary value contains invalid base64 data") from None
        return data.decode("utf-8", "replace")
    if tag not in ("null", "bool", "int", "float"):
        return text
    value = resolve_plain(text)
    if tag == "null" and value is None:
        return None
    if tag == "bool" and isinstance(value, bool):
        return value
    if tag == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tag == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise _error(node, f"cannot decode {quote_value(text)} as !!{tag}")


def _error(node: Node, message: str) -> YAMLInputError:
    return YAMLInputError(message, node.start_mark.line + 1, node.start_mark.column + 1)


def _json_number(value: Any, node: Node) -> Any:
    """The number as the API server reads it back from kubectl's JSON."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise _error(node, f"unsupported value {quote_value(node.value)}: JSON has no NaN or infinity")
        if value.is_integer() and _INT64_MIN <= value <= _INT64_MAX:
            return int(value)  # json.Marshal prints it without a fraction; the server reads an int64
        return value
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value)
    return value


def _key_string(value: Any, node: Node) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(value, "g")
    raise _error(node, f"unsupported map key {quote_value(node.value)}: a key must be a string, number or boolean")


class _Unsupported:
    """A value (NaN, infinity) or key (null, a collection) that JSON cannot carry: kubectl fails on
    it only if it survives into the document, not when a later duplicate key or a merge replaces it."""

    __slots__ = ("error",)

    def __init__(self, error: YAMLInputError) -> None:
        self.error = error


class _Builder:
    """Builds JSON values from a node tree, copying aliases (bounded) so no value is shared."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.built = 0
        self.deferred = 0  # _Unsupported values made

    def _defer(self, error: YAMLInputError) -> _Unsupported:
        self.deferred += 1
        return _Unsupported(error)

    def value(self, node: Node) -> Any:
        """The document's value; the first unsupported value or key left in it is the error."""
        value = self.build(node)
        stack = [value] if self.deferred else []
        while stack:
            item = stack.pop()
            if isinstance(item, _Unsupported):
                raise item.error
            if isinstance(item, dict):
                stack += list(item.values()) + [k for k in item if isinstance(k, _Unsupported)]
            elif isinstance(item, list):
                stack += item
        return value

    def build(self, node: Node) -> Any:
        self.built += 1
        if id(node) not in self.seen:
            self.seen.add(id(node))
        elif self.built > ALIAS_EXPANSION_LIMIT and self.built > ALIAS_EXPANSION_RATIO * len(self.seen):
            raise _error(node, "document contains excessive aliasing")
        if isinstance(node, ScalarNode):
            value = resolve_plain(node.value) if node.tag == _PLAIN else _tagged_scalar(node)
            try:
                return _json_number(value, node)
            except YAMLInputError as exc:
                return self._defer(exc)
        if isinstance(node, SequenceNode):  # a tag on a collection changes nothing (go-yaml v2)
            return [self.build(item) for item in node.value]
        return self.mapping(node)

    def mapping(self, node: MappingNode) -> dict[str, Any]:
        out: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag == _PLAIN and key_node.value == "<<":
                for source in self._merge_sources(value_node):
                    for key, value in self.mapping(source).items():
                        merged.setdefault(key, value)
                continue
            if not isinstance(key_node, ScalarNode):
                raise _error(key_node, "unsupported map key: a key must be a scalar")
            key_value = self.build(key_node)
            try:
                key: Any = key_value if isinstance(key_value, _Unsupported) else _key_string(key_value, key_node)
            except YAMLInputError as exc:
                key = self._defer(exc)
            out[key] = self.build(value_node)
        for key, value in merged.items():
            out.setdefault(key, value)
        return out

    @staticmethod
    def _merge_sources(node: Node) -> list[MappingNode]:
        if isinstance(node, MappingNode):
            return [node]
        if isinstance(node, SequenceNode) and all(isinstance(n, MappingNode) for n in node.value):
            return list(node.value)
        raise _error(node, "map merge requires a map or a sequence of maps as the value")


def _is_null_document(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _PLAIN and node.value in _NULLS


class _Open:
    """A collection being composed: its node, the key awaiting a value, its anchor."""

    __slots__ = ("node", "key", "anchor")

    def __init__(self, node: SequenceNode | MappingNode, anchor: str | None) -> None:
        self.node, self.key, self.anchor = node, None, anchor


def _compose(parser: _Parser, start: Any) -> Node | None:
    """One document's node tree, composed from libyaml's event stream without recursion.

    pyyaml's composers recurse once per level (a 50,000-deep flow sequence overflows the C stack);
    this loop keeps an explicit stack and refuses, as go-yaml does, more than ``MAX_DEPTH`` nested
    flow or block collections, and any document larger than ``MAX_DOCUMENT_SIZE``.
    """
    anchors: dict[str, Node] = {}
    stack: list[_Open] = []
    depth = {True: 0, False: 0}  # open flow collections, open block collections
    root: Node | None = None
    while True:
        event = parser.get_event()
        if event.end_mark.index - start.start_mark.index > MAX_DOCUMENT_SIZE:
            raise YAMLInputError(
                f"document is larger than {MAX_DOCUMENT_SIZE // (1024 * 1024)} MiB, the API server's request limit; "
                "not read", start.start_mark.line + 1, start.start_mark.column + 1)
        if isinstance(event, yaml.DocumentEndEvent):
            return root
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            done = stack.pop()
            depth[bool(done.node.flow_style)] -= 1
            done.node.end_mark = event.end_mark
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
            # "!" (non-specific) is a tag like any other to go-yaml: the scalar stays a string
            tag = event.tag if event.tag is not None else parser.resolve(ScalarNode, event.value, event.implicit)
            node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            if event.anchor is not None:
                anchors[event.anchor] = node
        else:  # a collection starts
            is_seq = isinstance(event, yaml.SequenceStartEvent)
            kind = SequenceNode if is_seq else MappingNode
            tag = event.tag if event.tag not in (None, "!") else parser.resolve(kind, None, event.implicit)
            node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
            flow = bool(event.flow_style)
            depth[flow] += 1
            if depth[flow] > MAX_DEPTH:
                raise _mark_error(event, DEPTH_ERROR)
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
            stack.append(_Open(node, event.anchor))


def _mark_error(event: Any, message: str) -> YAMLInputError:
    return YAMLInputError(message, event.start_mark.line + 1, event.start_mark.column + 1)


def _quote_name(name: str) -> str:
    return repr(excerpt(name))


def iter_documents(stream: str | bytes | IO[Any]) -> Iterator[Document]:
    """Yield each non-empty document of a YAML (or JSON) stream, one at a time, as kubectl reads it.

    kubectl does not hand the stream to a YAML parser (apimachinery util/yaml, YAMLOrJSONDecoder):
    a stream that starts with ``{`` is first read as a sequence of JSON values; otherwise (and for
    what follows the first JSON value that fails) it is cut into chunks at every line that starts
    with ``---``, and go-yaml reads only the first document of each chunk (see ``_chunks``).

    Memory stays bounded by the largest document (itself bounded), not the stream. Raises
    YAMLInputError with the position of a syntax error, an invalid ``!!binary``, an alias bomb,
    excessive nesting or an oversized document.
    """
    index = -1
    for chunk, first_line in _chunks(stream):
        try:
            node = _first_document(chunk)
            index += 1
            if node is None or _is_null_document(node):
                continue
            with recursion_room():
                try:
                    value = _Builder().value(node)
                except RecursionError:
                    raise _error(node, DEPTH_ERROR) from None
        except YAMLInputError as exc:
            if exc.line:
                exc.line += first_line
            raise
        yield Document(value=value, node=node, index=index, line_offset=first_line)


def _first_document(chunk: bytes) -> Node | None:
    """The node tree of the first document of one chunk (go-yaml's Unmarshal reads no further)."""
    parser = _Parser(chunk)
    try:
        event = parser.get_event()
        if isinstance(event, yaml.StreamStartEvent):
            event = parser.get_event()
        if isinstance(event, yaml.StreamEndEvent):
            return None
        return _compose(parser, event)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise YAMLInputError(
            f"invalid YAML: {problem}", (mark.line + 1) if mark else 0, (mark.column + 1) if mark else 0
        ) from None
    except yaml.YAMLError as exc:  # reader errors: binary junk, bad encoding
        raise YAMLInputError(f"invalid YAML: {exc}".replace("\n", " ")) from None
    finally:
        parser.dispose()


_READ_SIZE = 1 << 16
_JSON_WHITESPACE = b" \t\r\n"


def _raw_lines(stream: str | bytes | IO[Any]) -> Iterator[bytes]:
    """The stream's lines, each ending with ``\\n`` except perhaps the last."""
    if isinstance(stream, str):
        stream = stream.encode("utf-8", "surrogatepass")
    if isinstance(stream, bytes):
        start = 0
        while start < len(stream):
            end = stream.find(b"\n", start)
            end = len(stream) if end < 0 else end + 1
            yield stream[start:end]
            start = end
        return
    pending = b""
    while True:
        block = stream.read(_READ_SIZE)
        if isinstance(block, str):
            block = block.encode("utf-8", "surrogatepass")
        if not block:
            break
        pending += block
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line + b"\n"
        if len(pending) > MAX_DOCUMENT_SIZE:  # a line this long is a document this long: yield it to be refused
            yield pending
            pending = b""
    if pending:
        yield pending


def _chunks(stream: str | bytes | IO[Any]) -> Iterator[tuple[bytes, int]]:
    """(chunk, 0-based line of its start) as kubectl cuts a stream.

    YAMLReader: a line that starts with ``---`` ends the chunk (it is dropped, or kept when it opens
    one), and anything but spaces and a comment after it is an error (``invalid Yaml document
    separator``). So ``%YAML 1.1`` before ``---`` is a chunk of its own (an error), and what follows
    ``...`` inside a chunk is never read. A stream whose first non-space character is ``{`` is read
    as JSON values first (``_json_then_yaml``).
    """
    lines = _raw_lines(stream)
    head: list[bytes] = []
    for line in lines:
        head.append(line)
        if line.strip():
            break
    if b"".join(head).lstrip().startswith(b"{"):
        yield from _json_then_yaml(b"".join(head) + b"".join(lines))
        return
    yield from _yaml_chunks(itertools.chain(head, lines), 0)


def _yaml_chunks(lines: Iterable[bytes], first: int) -> Iterator[tuple[bytes, int]]:
    """YAMLReader over ``lines``, the first of which is line ``first`` (0-based) of the stream."""
    buffer: list[bytes] = []
    size, start = 0, first
    for number, line in enumerate(lines, first):
        if line.startswith(b"---"):
            rest = line[3:].strip()
            if rest and not rest.startswith(b"#"):
                text = rest.decode("utf-8", "replace")
                raise YAMLInputError(f"invalid Yaml document separator: {excerpt(text)}", number + 1, 1)
            if buffer:
                yield b"".join(buffer), start
                buffer, size = [], 0
                continue
        if not buffer:
            start = number
        buffer.append(line)
        size += len(line)
        if size > MAX_DOCUMENT_SIZE:
            raise YAMLInputError(
                f"document is larger than {MAX_DOCUMENT_SIZE // (1024 * 1024)} MiB, the API server's request limit; "
                "not read", start + 1, 1)
    if buffer:
        yield b"".join(buffer), start


def _json_then_yaml(data: bytes) -> Iterator[tuple[bytes, int]]:
    """YAMLOrJSONDecoder on a stream that starts with ``{``: JSON values one after another; when one
    fails to decode after at most one value, the rest (from the next line) is read as YAML chunks,
    after two or more it is an error (``json: offset N: ...``)."""
    text = data.decode("utf-8", "replace")
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    pos, count, consumed = 0, 0, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos == len(text):
            return
        try:
            _, end = decoder.raw_decode(text, pos)
        except ValueError as exc:
            if count > 1:
                line = text.count("\n", 0, pos) + 1
                raise YAMLInputError(f"invalid JSON: {str(exc).split(':')[0]}", line, pos - text.rfind("\n", 0, pos)) from None
            break
        line = text.count("\n", 0, pos)
        yield _json_chunk(text, pos, end), line
        count, pos, consumed = count + 1, end, end
    pos = consumed  # back to the end of the last value; its trailing spaces up to the line end are eaten
    while pos < len(text) and text[pos].isspace() and text[pos] != "\n":
        pos += 1
    if pos < len(text) and text[pos] == "\n":
        pos += 1
    rest = text[pos:].encode("utf-8")
    yield from _yaml_chunks(_raw_lines(rest), text.count("\n", 0, pos))


def _json_chunk(text: str, start: int, end: int) -> bytes:
    """One JSON value as a chunk for the YAML parser (JSON is YAML), at its column."""
    line_start = text.rfind("\n", 0, start) + 1
    return (" " * (start - line_start) + text[start:end]).encode("utf-8")


def _no_constant(name: str) -> Any:
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
        child: Node | None = None
        if isinstance(node, MappingNode):
            index = keys.get(id(node))
            if index is None:
                index = keys[id(node)] = {
                    k.value: (k.start_mark, v) for k, v in node.value if isinstance(k, ScalarNode)
                }  # the last duplicate wins, as in the value
            if str(step) in index:
                mark, child = index[str(step)]
        elif isinstance(node, SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            child = node.value[step]
            mark = child.start_mark
        if child is None:
            break
        node = child
    return mark.line + 1, mark.column + 1
