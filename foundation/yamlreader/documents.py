"""Documents: each document of a stream as a JSON value with its node tree, for positions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .compose import Builder, first_document
from .limits import DEPTH_ERROR, YAMLInputError, recursion_room
from .scalars import node_error
from .streams import Readable, chunks


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



def iter_documents(stream: str | bytes | Readable) -> Iterator[Document]:
    """Yield each non-empty document of a YAML (or JSON) stream, one at a time, as kubectl reads it.

    Memory stays bounded by the largest document (itself bounded), not the stream, unless the
    stream is a run of JSON values (read whole, as the input budget bounds it). Raises
    YAMLInputError with the position of a syntax error, an unknown tag, an alias bomb, excessive
    nesting or an oversized document.
    """
    for chunk, first_line in chunks(stream):
        try:
            node = first_document(chunk)
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
            yield Document(value, node, first_line)



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
