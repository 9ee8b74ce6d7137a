"""Composition: libyaml's events to a node tree (no recursion, go-yaml's depth rules), and the
node tree to a JSON value (bounded aliases, merge keys, the last duplicate key winning)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import yaml
from yaml import _yaml as libyaml
from yaml._yaml import CParser
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..excerpt import excerpt
from .limits import (
    ALIAS_MIN_ALIASED,
    ALIAS_MIN_DECODES,
    ALIAS_RATIO_RANGE_HIGH,
    ALIAS_RATIO_RANGE_LOW,
    DEPTH_ERROR,
    JSON_DEPTH_ERROR,
    LIBYAML_NEST_LIMIT,
    MAX_DEPTH,
    NodeBudget,
    YAMLInputError,
)
from .scalars import CORE, PLAIN, json_number, key_string, node_error, scalar


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


class _AliasScalar(ScalarNode):
    """A scalar an alias names, as the alias (go-yaml keeps an alias node of its own)."""

    target: Node


class _AliasSequence(SequenceNode):
    """A sequence an alias names, as the alias."""

    target: Node


class _AliasMapping(MappingNode):
    """A map an alias names, as the alias."""

    target: Node


_ALIASES = (_AliasScalar, _AliasSequence, _AliasMapping)


def alias_to(target: Node) -> Node:
    """A node for an alias of ``target``: the same content and marks (so a value reached through
    the alias is located at its anchor), told apart by its class for go-yaml's alias counting."""
    alias: Node
    if isinstance(target, ScalarNode):
        alias = _AliasScalar(target.tag, target.value, target.start_mark, target.end_mark, target.style)
    elif isinstance(target, SequenceNode):
        alias = _AliasSequence(target.tag, target.value, target.start_mark, target.end_mark, target.flow_style)
    else:
        alias = _AliasMapping(target.tag, target.value, target.start_mark, target.end_mark,
                              cast(MappingNode, target).flow_style)
    alias.target = target
    return alias


def allowed_alias_ratio(decodes: int) -> float:
    """go-yaml v2's allowedAliasRatio (GY decode.go:321-348): 99% of the decodes may come from alias
    expansion up to 400,000 decodes, falling to 10% at 4,000,000."""
    if decodes <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decodes >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decodes - ALIAS_RATIO_RANGE_LOW) / (ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW)


class Builder:
    """Builds JSON values from a node tree, copying aliases (bounded as go-yaml bounds them) so no
    value is shared."""

    def __init__(self) -> None:
        self.decodes = 0  # go-yaml's decodeCount: every node decoded, the document's own node first
        self.aliased = 0  # its aliasCount: the nodes decoded inside an alias's expansion
        self.alias_depth = 0
        self.unsupported: list[_Unsupported] = []  # in document order

    def document(self, node: Node) -> Any:
        """The document's value; the first value or key JSON cannot carry left in it is the error."""
        self.count(node)  # go-yaml's document node, decoded first
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
        """go-yaml v2's count at each node it decodes (GY decode.go:350-357): refused once more than
        100 decodes came from aliases, more than 1,000 in all, and the aliases' share is above
        ``allowed_alias_ratio``."""
        self.decodes += 1
        if self.alias_depth:
            self.aliased += 1
        if (self.aliased > ALIAS_MIN_ALIASED and self.decodes > ALIAS_MIN_DECODES
                and self.aliased / self.decodes > allowed_alias_ratio(self.decodes)):
            raise node_error(node, "document contains excessive aliasing")

    def build(self, node: Node) -> Any:
        self.count(node)
        if isinstance(node, _ALIASES):  # the alias is one decode, what it names as many as it has (GY decode.go:390-401)
            self.alias_depth += 1
            try:
                return self.build(node.target)
            finally:
                self.alias_depth -= 1
        if isinstance(node, ScalarNode):
            return self.jsonable(json_number, scalar(node), node)
        # a collection's tag, whatever it is (!!map, !!str, !custom), is never read: go-yaml's parser
        # does not record it and decodes the map or sequence as it is (GY decode.go:201-221; kubectl
        # v1.37.1 sends !!str {x: a} and !custom [1] as a map and a list). Nothing is built from it.
        if isinstance(node, SequenceNode):
            return [self.build(item) for item in node.value]
        return self.mapping(cast(MappingNode, node))  # the third kind of node

    def mapping(self, node: MappingNode) -> dict[str, Any]:
        """Keys in document order, as go-yaml v2 decodes them: a later key replaces an earlier one,
        and a ``<<`` merge writes its keys over those before it (decode.go ``mapping``, ``merge``)."""
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if _is_merge(key_node):
                for source in reversed(self._merge_sources(value_node)):  # earlier maps take precedence
                    out.update(self.build(source))  # each decoded, as go-yaml's merge decodes it
                continue
            if not isinstance(key_node, ScalarNode):
                raise node_error(key_node, "unsupported map key: a key must be a scalar")
            self.count(key_node)  # a key keeps go-yaml's value: JSON's number rules apply to values only
            if isinstance(key_node, _AliasScalar):
                self.alias_depth += 1
                self.count(key_node.target)
                self.alias_depth -= 1
            out[self.jsonable(key_string, scalar(key_node), key_node)] = self.build(value_node)
        return out

    @staticmethod
    def _merge_sources(node: Node) -> list[MappingNode]:
        """What a ``<<`` merges: a map, an alias of a map, or a sequence (written, not an alias) of
        maps and aliases of maps (GY decode.go:782-815)."""
        if isinstance(node, MappingNode):
            return [node]
        if isinstance(node, SequenceNode) and not isinstance(node, _AliasSequence) and all(
                isinstance(n, MappingNode) for n in node.value):
            return list(node.value)
        raise node_error(node, "map merge requires map or sequence of maps as the value")


def _is_merge(node: Node) -> bool:
    """go-yaml's ``isMerge``: a plain ``<<`` or one tagged ``!!merge``; a quoted "<<" is a key."""
    return isinstance(node, ScalarNode) and node.value == "<<" and node.tag in (PLAIN, CORE + "merge")


class _Open:
    """A collection being composed: its node, the key awaiting a value, its anchor, and the
    indentation levels go-yaml's scanner has pushed by the time it starts."""

    __slots__ = ("node", "key", "anchor", "indents")
    node: SequenceNode | MappingNode
    key: Node | None
    anchor: str | None
    indents: int

    def __init__(self, node: SequenceNode | MappingNode, anchor: str | None, indents: int) -> None:
        self.node, self.key, self.anchor, self.indents = node, None, anchor, indents

    def attach(self, node: Node) -> None:
        """An item of a sequence; a mapping's key, or the value of the key awaiting one."""
        if isinstance(self.node, SequenceNode):
            self.node.value.append(node)
        elif self.key is None:
            self.key = node
        else:
            self.node.value.append((self.key, node))
            self.key = None


def compose(parser: CParser, nodes: NodeBudget) -> Node | None:
    """One document's node tree, composed from libyaml's event stream without recursion.

    pyyaml's composers recurse once per level (a 50,000-deep flow sequence overflows the C stack);
    this loop keeps an explicit stack and refuses, as go-yaml does, more than ``MAX_DEPTH`` nested
    flow or block collections. A document within those limits but nested more than ``MAX_DEPTH``
    deep in all is refused at its end, as kubectl's JSON decoding refuses it after the YAML is read.
    Every node is counted in ``nodes`` before it is made, so no input holds more than the run allows.
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
        nodes.take(*_position(event))
        if isinstance(event, yaml.AliasEvent):
            node = _aliased(event, stack, anchors)
        elif isinstance(event, yaml.ScalarEvent):
            # go-yaml resolves only untagged plain scalars: a quoted one, or one with the non-specific
            # tag "!" (``! 1``), is a string
            tag = event.tag or (PLAIN if event.implicit[0] else CORE + "str")
            tag = CORE + "str" if tag == "!" else tag
            # libyaml's marks are yaml._yaml.Mark, with the line and column of the stubs' yaml.error.Mark
            node = ScalarNode(tag, event.value, event.start_mark)  # type: ignore[arg-type]  # libyaml's mark
            if event.anchor is not None:
                anchors[event.anchor] = node
        else:  # a collection starts
            start = cast(yaml.CollectionStartEvent, event)  # a SequenceStartEvent or a MappingStartEvent
            kind = SequenceNode if isinstance(start, yaml.SequenceStartEvent) else MappingNode
            # go-yaml ignores a collection's tag; an untagged one (or "!") has none here (None, where
            # the stubs' Node.tag is a str), as Builder.build expects
            node = kind(None if start.tag == "!" else start.tag, [], start.start_mark,  # type: ignore[arg-type]  # tag None, libyaml's mark
                        flow_style=start.flow_style)
            outer = stack[-1] if stack else None
            indents = outer.indents if outer else 0
            if start.flow_style:
                flows += 1
                if flows > MAX_DEPTH:
                    raise _mark_error(event, DEPTH_ERROR)
            elif outer is None or start.start_mark.column > outer.node.start_mark.column:  # type: ignore[union-attr]  # libyaml marks every event
                # go-yaml pushes an indentation level for a block collection right of the one
                # around it; a "- " list at its key's column (an indentless sequence) pushes none
                indents += 1
                if indents > MAX_DEPTH:
                    raise _mark_error(event, DEPTH_ERROR)
            if len(stack) >= MAX_DEPTH and too_deep is None:  # this collection is the 10,001st level
                too_deep = _mark_error(event, JSON_DEPTH_ERROR)
        if stack:
            stack[-1].attach(node)
        else:
            root = node
        if isinstance(node, (SequenceNode, MappingNode)) and not isinstance(event, yaml.AliasEvent):
            stack.append(_Open(node, start.anchor, indents))  # the collection that started above


def _aliased(event: Any, stack: list[_Open], anchors: dict[str, Node]) -> Node:
    """The node an alias names: an anchor of a collection still open (a cycle) or never seen is an error."""
    if any(o.anchor == event.anchor for o in stack):
        raise _mark_error(event, f"anchor {_quote_name(event.anchor)} value contains itself")
    if event.anchor not in anchors:
        raise _mark_error(event, f"unknown anchor {_quote_name(event.anchor)} referenced")
    return alias_to(anchors[event.anchor])


def _position(event: Any) -> tuple[int, int]:
    """1-based line and column where an event starts (libyaml marks every event)."""
    return event.start_mark.line + 1, event.start_mark.column + 1


def _mark_error(event: Any, message: str) -> YAMLInputError:
    return YAMLInputError(message, *_position(event))


def _quote_name(name: str) -> str:
    return repr(excerpt(name))

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
        libyaml._set_max_nest_level(LIBYAML_NEST_LIMIT)  # type: ignore[attr-defined]  # PyYAML 6.0.4's, not in the stubs


_BOM = "\ufeff".encode()
#: Private-use characters that stand for a byte order mark inside a chunk while libyaml reads it.
_BOM_STAND_INS = ("\uf8ff", "\uf8fe", "\uf8fd", "\ue000")


def _inner_boms_kept(chunk: bytes) -> tuple[bytes, str | None]:
    """The chunk with each byte order mark after its start written as a stand-in libyaml reads as
    text, and the stand-in (None if there is none, or no stand-in is free).

    go-yaml's reader drops the mark at the start of a chunk, and its scanner skips one at the start
    of a line only when its buffer begins with one (GY scannerc.go:1451 with yamlprivateh.go:81-83:
    ``is_bom`` reads ``b[0]``, not the position): any other U+FEFF is a character of the text, so
    ``---`` then a BOM'd line gives a key starting with U+FEFF (kube-apiserver v1.36.2: ``unknown
    field "\ufeffx"``). libyaml skips it wherever a line starts with one."""
    start = 0
    while chunk.startswith(_BOM, start) and start < 2 * len(_BOM):  # the mark, and one right after it
        start += len(_BOM)
    if _BOM not in chunk[start:]:
        return chunk, None
    stand_in = next((c for c in _BOM_STAND_INS if c.encode() not in chunk), None)
    if stand_in is None:
        return chunk, None
    return chunk[:start] + chunk[start:].replace(_BOM, stand_in.encode()), stand_in


def _bom_restored(root: Node, stand_in: str) -> None:
    """Every scalar of the tree (keys too) with ``stand_in`` written back as U+FEFF."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            node.value = node.value.replace(stand_in, "\ufeff")
        elif isinstance(node, SequenceNode):
            stack += node.value
        elif isinstance(node, MappingNode):
            stack += [part for pair in node.value for part in pair]


def first_document(chunk: bytes, nodes: NodeBudget) -> Node | None:
    """The node tree of the first document of a chunk (go-yaml's Unmarshal reads no further), its
    nodes counted in ``nodes``."""
    lift_libyaml_nest_limit()
    chunk, stand_in = _inner_boms_kept(chunk)
    parser = CParser(chunk)
    try:
        parser.get_event()  # the stream's start
        if isinstance(parser.get_event(), yaml.StreamEndEvent):
            return None  # no document: blank lines and comments
        root = compose(parser, nodes)
        if root is not None and stand_in is not None:
            _bom_restored(root, stand_in)
        return root
    except yaml.MarkedYAMLError as exc:
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        mark = exc.problem_mark  # libyaml marks every scanner and parser error with its problem
        raise YAMLInputError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1) from None  # type: ignore[union-attr]  # see above
    except yaml.reader.ReaderError as exc:  # binary junk, bad encoding: libyaml gives a byte offset
        before = chunk[:exc.position]
        problem = str(exc).split("\n")[0]  # without '  in "<byte string>", position N'
        raise YAMLInputError(f"invalid YAML: {problem}", before.count(b"\n") + 1, len(before) - before.rfind(b"\n")) from None
    finally:
        parser.dispose()

