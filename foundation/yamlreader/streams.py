"""Stream cutting: a YAML or JSON stream cut into documents as kubectl's YAMLOrJSONDecoder cuts it,
read line by line with every document's size bounded."""

from __future__ import annotations

import bisect
import codecs
import io
import itertools
import json
import json.scanner
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from ..excerpt import excerpt
from .limits import MAX_DEPTH, MAX_DOCUMENT_SIZE, YAMLInputError, recursion_room


def _too_large(line: int, column: int) -> YAMLInputError:
    return YAMLInputError(
        f"document is larger than {MAX_DOCUMENT_SIZE // (1024 * 1024)} MiB, the API server's request limit; not read",
        line, column)


_READ_SIZE = 1 << 16
_JSON_SPACE = re.compile(r"[ \t\r\n]*")
#: Go's unicode.IsSpace: the ASCII blanks, U+0085, U+00A0 and the White_Space characters beyond
#: Latin-1 (not Python's str.isspace, which also counts U+001C-U+001F).
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_REST_OF_LINE = re.compile(f"[{GO_SPACE.replace(chr(10), '')}]*\n?")
#: A byte that is no UTF-8, as ``errors="surrogateescape"`` decodes it: encoding/json reads each as U+FFFD.
_NOT_UTF8_CHARS = "".join(map(chr, range(0xDC80, 0xDD00)))
_NOT_UTF8 = dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd")
#: Characters a JSON string may hold as they are and the YAML reader refuses (#x7F, the C1
#: controls but #x85, U+FFFE, U+FFFF: GY readerc.go:342-359): written as escapes, so the value
#: read again is the one encoding/json read (valid JSON has them only inside strings).
_NOT_YAML = {c: f"\\u{c:04x}" for c in [0x7F, *range(0x80, 0x85), *range(0x86, 0xA0), 0xFFFE, 0xFFFF]}
#: How much of a stream kubectl peeks to tell JSON from YAML (CR pkg/resource/visitor.go, StreamVisitor's
#: ``yaml.NewYAMLOrJSONDecoder(v.Reader, 4096)``).
JSON_PEEK = 4096


class Readable(Protocol):
    """A stream the reader reads in blocks: a text or binary file, standard input, a bounded input
    (foundation.files.open_sources)."""

    def read(self, size: int = -1, /) -> str | bytes: ...


def _end_of(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (one that also matches the empty string) ends when matched at ``pos``."""
    match = pattern.match(text, pos)
    assert match is not None, pattern  # it matches the empty string
    return match.end()


def chunks(stream: str | bytes | Readable) -> Iterator[tuple[bytes, int, bool]]:
    """(chunk, lines of the stream before it, whether it is a JSON value) as kubectl's
    YAMLOrJSONDecoder cuts a stream: a run of JSON values if its first non-blank character is
    ``{``, else YAML chunks."""
    lines = _lines(stream)
    head: list[bytes] = []
    size = 0
    for line in lines:
        head.append(line)
        size += len(line)
        if line.decode(errors="replace").strip(GO_SPACE) or size >= JSON_PEEK:
            break
    if is_json_stream(b"".join(head)):
        return _json_then_yaml(b"".join(head) + b"".join(lines))  # decoded by _lines as BOMOverride decodes
    return ((chunk, line, False) for chunk, line in _yaml_chunks(itertools.chain(head, lines), 0))


def is_json_stream(head: bytes) -> bool:
    """AM pkg/util/yaml/decoder.go:476-490 (GuessJSONStream, hasPrefix): the stream is JSON if the
    first character of its first ``JSON_PEEK`` bytes that is not unicode.IsSpace is ``{``; so U+00A0
    before it counts as a blank, and a brace after 4,096 blanks is never seen."""
    return head[:JSON_PEEK].decode(errors="replace").lstrip(GO_SPACE).startswith("{")


def _lines(stream: str | bytes | Readable, decoded: bool = False) -> Iterator[bytes]:
    """The stream's lines, each with its ``\\n`` but perhaps the last; a line longer than a
    document may be is the last, cut there: it is refused, and the rest is never read. Bytes are
    read as BOMOverride reads them, unless ``decoded`` says they already were."""
    if isinstance(stream, str):
        stream = io.StringIO(stream)
    elif isinstance(stream, bytes):
        stream = io.BytesIO(stream)
    pending = b""
    decoder: Any = None
    first = not decoded
    while block := stream.read(_READ_SIZE):
        if isinstance(block, str):
            block = (block[1:] if first and block.startswith("\ufeff") else block).encode(errors="surrogatepass")
        elif first:
            block, decoder = _bom_override(block)
        elif decoder is not None:
            block = decoder.decode(block).encode(errors="surrogatepass")
        first = False
        *lines, pending = (pending + block).split(b"\n")
        yield from (line + b"\n" for line in lines)
        if len(pending) > MAX_DOCUMENT_SIZE:
            yield pending
            return
    if decoder is not None:
        pending += decoder.decode(b"", final=True).encode(errors="surrogatepass")  # a sequence cut by the end
    if pending:
        yield pending


def _bom_override(block: bytes) -> tuple[bytes, Any]:
    """kubectl reads files through golang.org/x/text's BOMOverride(unicode.UTF8.NewDecoder()) (CR
    pkg/resource/visitor.go:558-561; XT encoding/unicode/override.go:63-81): a UTF-8 byte order
    mark is dropped before the stream is cut (so a BOM'd run of JSON values stays a run) and what
    follows is passed on unchecked (``transform.Nop``); a UTF-16 one (either order) switches to
    UTF-16, converted to UTF-8 (ill-formed units become U+FFFD); with no mark the UTF-8 decoder
    replaces each maximal ill-formed subsequence by one U+FFFD (XT encoding/unicode/unicode.go:
    118-204, the W3C rule, which is Python's ``errors="replace"``). The first block and the decoder
    for the blocks after it (None: passed on as they are)."""
    if block.startswith(b"\xef\xbb\xbf"):
        return block[3:], None
    if block[:2] in (b"\xff\xfe", b"\xfe\xff"):
        decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
        return decoder.decode(block).encode(errors="surrogatepass"), decoder
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(block).encode(), decoder


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
            rest = line[3:].decode(errors="replace").strip(GO_SPACE)  # strings.TrimSpace (AM decoder.go:416)
            if rest and not rest.startswith("#"):
                raise YAMLInputError(f"invalid Yaml document separator: {excerpt(rest)}", number + 1, 1)
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


def _json_then_yaml(data: bytes) -> Iterator[tuple[bytes, int, bool]]:
    """YAMLOrJSONDecoder on a stream that starts with ``{``: JSON values one after another. When
    one fails to decode after a single value, the rest (from the end of that value's line) is read
    as YAML; after two or more, it is an error. ``data`` was decoded as BOMOverride decodes (after
    a UTF-8 byte order mark it may hold bytes that are no UTF-8: kept as they are for the YAML
    reader, which refuses them, and read as U+FFFD in a JSON value, as encoding/json reads them)."""
    text = data.decode(errors="surrogateescape")
    breaks = [m.start() for m in re.finditer("\n", text)]

    def where(pos: int) -> tuple[int, int]:
        """0-based line and column of ``pos``."""
        line = bisect.bisect_left(breaks, pos)
        return line, pos - (breaks[line - 1] + 1 if line else 0)

    numbers = _Numbers()
    decoder = json.JSONDecoder(parse_constant=_no_constant, parse_float=numbers.parse, parse_int=numbers.parse)
    values = end = 0
    while (start := _end_of(_JSON_SPACE, text, end)) < len(text):
        line, column = where(start)
        try:
            end = json_end(decoder, text, start)
        except ValueError as exc:
            rest = None if values > 1 else _yaml_start(text, end)
            if rest is None:
                if isinstance(exc, _TooDeep):  # at its 10,001st bracket, as the YAML path places it
                    line, column = where(exc.pos)
                raise YAMLInputError(f"invalid JSON: {str(exc).split(':')[0]}", line + 1, column + 1) from None
            rest_lines = _lines(text[rest:].encode(errors="surrogateescape"), decoded=True)
            yield from ((chunk, line, False) for chunk, line in _yaml_chunks(rest_lines, where(rest)[0]))
            return
        if end - start > MAX_DOCUMENT_SIZE:
            raise _too_large(line + 1, column + 1)
        numbers.check(line + 1, column + 1)
        value = _lone_surrogates_replaced(text[start:end]).translate(_NOT_UTF8).translate(_NOT_YAML)
        yield (" " * column + value).encode(), line, True  # at its column, for positions
        values += 1


def _yaml_start(text: str, pos: int) -> int | None:
    """Where YAMLOrJSONDecoder's YAML reading starts when JSON failed after at most one value read up
    to ``pos`` (AM pkg/util/yaml/decoder.go:328-334, consumeWhitespace 359-386): Unicode blanks up to
    and including the first newline are eaten, four bytes read at a time (StreamReader.ReadN): with
    fewer than four bytes left, or at a U+FFFD (utf8.RuneError), it gives up and the JSON error is
    final (None). Checked with kubectl v1.37.1: a value followed by ``"\\n#\\n"`` is refused, by ``"\\n# \\n"`` not."""
    left = len(text[pos:].encode(errors="surrogateescape"))
    while True:
        if left < 4 or text[pos] == "\ufffd" or text[pos] in _NOT_UTF8_CHARS:
            return None
        char = text[pos]
        if char not in GO_SPACE:
            return pos
        pos += 1
        left -= len(char.encode())
        if char == "\n":
            return pos


class _Numbers:
    """JSON numbers as AM pkg/util/json/json.go:113-121 converts them after kubectl's decoding: an
    int64 if the literal is one, else a float64, and a literal beyond float64 is an error
    (``json: cannot unmarshal number 1E400 into Go value of type float64``). The hooks keep the first
    such literal of a value; ``check`` raises it once the value is read."""

    def __init__(self) -> None:
        self.beyond: str | None = None

    def parse(self, literal: str) -> Any:
        try:
            value = float(literal) if any(c in literal for c in ".eE") else int(literal)
            if isinstance(value, int) and not -(2**63) <= value < 2**63:
                value = float(value)
        except OverflowError:
            value = math.inf
        if math.isinf(value) and self.beyond is None:
            self.beyond = literal
        return value

    def check(self, line: int, column: int) -> None:
        beyond, self.beyond = self.beyond, None
        if beyond is not None:
            raise YAMLInputError(f"json: cannot unmarshal number {excerpt(beyond)} into Go value of type float64", line, column)


#: A JSON string, and an escape inside one (``\\`` before ``\\u`` is an escaped backslash).
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.S)


def _lone_surrogates_replaced(value: str) -> str:
    """The JSON value with each ``\\uXXXX`` escape of a surrogate that is not half of a pair written
    ``\\ufffd``: encoding/json's unquote turns it into U+FFFD (checked with kubectl v1.37.1: a
    ``"\\ud800"`` annotation is accepted), where the YAML reader that reads the value again refuses
    every surrogate escape (GY scannerc.go:2452-2456); so a pair is written as the one ``\\U`` escape."""
    if "\\u" not in value:
        return value
    return _JSON_STRING.sub(lambda m: _unpaired_replaced(m[0]), value)


def _unpaired_replaced(string: str) -> str:
    """One JSON string with its unpaired surrogate escapes replaced (the rule of ``_lone_surrogates_replaced``)."""
    escapes = [(m.start(), m.end(), int(m[1], 16)) for m in _ESCAPE.finditer(string) if m[1]]
    out, last, skip = [], 0, -1
    for i, (begin, end, unit) in enumerate(escapes):
        if i == skip or not 0xD800 <= unit <= 0xDFFF:
            continue
        after = escapes[i + 1] if i + 1 < len(escapes) else None
        if unit < 0xDC00 and after is not None and after[0] == end and 0xDC00 <= after[2] <= 0xDFFF:
            skip = i + 1  # a pair: one character, written as YAML's 8-digit escape, which the YAML reader takes
            code = 0x10000 + ((unit - 0xD800) << 10) + (after[2] - 0xDC00)
            out += [string[last:begin], f"\\U{code:08X}"]
            last = after[1]
            continue
        out += [string[last:begin], "\\ufffd"]
        last = end
    return "".join(out) + string[last:]


class _TooDeep(json.JSONDecodeError):
    """A JSON value opens a collection on its ``MAX_DEPTH + 1``st level, at ``pos``: encoding/json's
    ``exceeded max depth``, a syntax error like any other (so the YAMLOrJSONDecoder rules apply)."""


def json_end(decoder: json.JSONDecoder, text: str, start: int) -> int:
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
        # the json module's own collection parsers and scanner are undocumented: typeshed declares none of them
        value: tuple[Any, int] = json.decoder.JSONObject(  # type: ignore[attr-defined]  # undocumented, see above
            s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo)
        depth -= 1
        return value

    def parse_array(s_and_end: tuple[str, int], scan_once: Any) -> tuple[Any, int]:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise _TooDeep(f"exceeded max depth of {MAX_DEPTH}", s_and_end[0], s_and_end[1] - 1)
        value: tuple[Any, int] = json.decoder.JSONArray(s_and_end, scan_once)  # type: ignore[attr-defined]  # undocumented
        depth -= 1
        return value

    # the pure-Python scanner's hooks: attributes JSONDecoder sets for it, undeclared in typeshed
    deep.parse_object, deep.parse_array = parse_object, parse_array  # type: ignore[attr-defined]  # undeclared hooks
    deep.scan_once = json.scanner.py_make_scanner(deep)  # type: ignore[attr-defined]  # undeclared hook, undocumented scanner
    with recursion_room():
        return deep.raw_decode(text, start)[1]


def _no_constant(name: str) -> Any:
    """Go's encoding/json has no NaN or Infinity."""
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")

