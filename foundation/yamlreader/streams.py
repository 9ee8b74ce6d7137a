"""Stream cutting: a YAML or JSON stream cut into documents as kubectl's YAMLOrJSONDecoder cuts it,
read line by line with every document's size bounded."""

from __future__ import annotations

import bisect
import codecs
import io
import itertools
import json
import json.scanner
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
_REST_OF_LINE = re.compile(r"[^\S\n]*\n?")


class Readable(Protocol):
    """A stream the reader reads in blocks: a text or binary file, standard input, a bounded input
    (foundation.files.open_sources)."""

    def read(self, size: int = -1, /) -> str | bytes: ...


def _end_of(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (one that also matches the empty string) ends when matched at ``pos``."""
    match = pattern.match(text, pos)
    assert match is not None, pattern  # it matches the empty string
    return match.end()


def chunks(stream: str | bytes | Readable) -> Iterator[tuple[bytes, int]]:
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


def _lines(stream: str | bytes | Readable) -> Iterator[bytes]:
    """The stream's lines, each with its ``\\n`` but perhaps the last; a line longer than a
    document may be is the last, cut there: it is refused, and the rest is never read."""
    if isinstance(stream, str):
        stream = io.StringIO(stream)
    elif isinstance(stream, bytes):
        stream = io.BytesIO(stream)
    pending = b""
    utf16: Any = None
    first = True
    while block := stream.read(_READ_SIZE):
        if isinstance(block, str):
            block = (block[1:] if first and block.startswith("\ufeff") else block).encode(errors="surrogatepass")
        elif first:
            block, utf16 = _bom_override(block)
        elif utf16 is not None:
            block = utf16.decode(block).encode(errors="surrogatepass")
        first = False
        *lines, pending = (pending + block).split(b"\n")
        yield from (line + b"\n" for line in lines)
        if len(pending) > MAX_DOCUMENT_SIZE:
            yield pending
            return
    if pending:
        yield pending


def _bom_override(block: bytes) -> tuple[bytes, Any]:
    """kubectl reads files through golang.org/x/text's BOMOverride (cli-runtime visitor.go): a UTF-8
    byte order mark is dropped before the stream is cut (so a BOM'd run of JSON values stays a run),
    and a UTF-16 one (either order) switches to UTF-16, converted to UTF-8 (ill-formed units become
    U+FFFD). The first block and, for UTF-16, the decoder for the blocks after it."""
    if block.startswith(b"\xef\xbb\xbf"):
        return block[3:], None
    if block[:2] in (b"\xff\xfe", b"\xfe\xff"):
        decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
        return decoder.decode(block).encode(errors="surrogatepass"), decoder
    return block, None


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
    while (start := _end_of(_JSON_SPACE, text, end)) < len(text):
        line, column = where(start)
        try:
            end = json_end(decoder, text, start)
        except ValueError as exc:
            if values > 1:
                if isinstance(exc, _TooDeep):  # at its 10,001st bracket, as the YAML path places it
                    line, column = where(exc.pos)
                raise YAMLInputError(f"invalid JSON: {str(exc).split(':')[0]}", line + 1, column + 1) from None
            rest = _end_of(_REST_OF_LINE, text, end)
            yield from _yaml_chunks(_lines(text[rest:]), where(rest)[0])
            return
        if end - start > MAX_DOCUMENT_SIZE:
            raise _too_large(line + 1, column + 1)
        yield (" " * column + text[start:end]).encode(), line  # at its column, for positions
        values += 1


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

