"""Serialize manifests deterministically, in a form kubectl reads back to the same values.

YAML goes through libyaml's emitter (the fast path). PyYAML's resolver is YAML 1.1 but not
go-yaml's: it would write ``y``, ``n``, ``0o17`` or ``1e3`` as plain scalars, which kubectl then
reads as a boolean or a number. Every string is checked with the same resolver the loader uses
(yamlreader.resolve_plain) and quoted whenever a plain scalar would not read back as itself.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterable
from typing import IO, Any

import yaml
from memcached_gitops.foundation.yamlreader import CORE, recursion_room, resolve_plain
from yaml.cyaml import CSafeDumper

_STR, _INT, _BOOL, _NULL = (CORE + tag for tag in ("str", "int", "bool", "null"))
_MAP, _SEQ = CORE + "map", CORE + "seq"


def scalar_style(data: str) -> str | None:
    """The scalar style that reads back as ``data`` itself: plain when go-yaml resolves it to the
    same string, else single-quoted; a literal block for text with line breaks."""
    style = None if resolve_plain(data) == data and not data[:1].isspace() else "'"
    if "\n" in data:
        style = "|" if not data.endswith(" ") else '"'
    return style


class _Dumper(CSafeDumper):
    """libyaml's emitter fed by a representer for the JSON types that builds nodes directly.

    PyYAML's generic path (a representer looked up along each value's type's MRO, two implicit-tag
    resolutions by regular expression per scalar) was most of a 10,000-CR render. Here the plain
    ``dict``/``list``/``str``/``int``/``bool``/``None`` of a manifest get their nodes straight away,
    and a scalar's style and tags are remembered for the rest of the dump, since a stream of
    Deployments repeats the same keys and values thousands of times. Nodes are never reused (a
    reused node would become an anchor and an alias); anything else (floats) goes through PyYAML's
    own representers, so the bytes are those of the generic path. The reader makes plain dicts,
    lists and strings only: no string ever reaches PyYAML's string representer.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._styles: dict[str, str | None] = {}
        self._tags: dict[tuple[str, tuple[bool, bool]], str] = {}

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent(self, data: Any) -> None:
        self.serialize(self.node(data))

    def node(self, data: Any) -> yaml.Node:
        """The node PyYAML's SafeRepresenter would build for ``data``, with ``default_flow_style=False``."""
        kind = type(data)
        if kind is str:
            styles = self._styles
            style = styles[data] if data in styles else styles.setdefault(data, scalar_style(data))
            return yaml.ScalarNode(_STR, data, style=style)
        if kind is dict:
            return yaml.MappingNode(_MAP, [(self.node(k), self.node(v)) for k, v in data.items()], flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [self.node(item) for item in data], flow_style=False)
        if kind is int:
            return yaml.ScalarNode(_INT, str(data))
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if data else "false")
        if data is None:
            return yaml.ScalarNode(_NULL, "null")
        return self.represent_data(data)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        """The implicit tag of a scalar, resolved once per value and way of writing it."""
        if kind is not yaml.ScalarNode:
            return str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
        key = (value, implicit)
        tag = self._tags.get(key)
        if tag is None:
            tag = self._tags[key] = str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]  # as above
        return tag



def to_yaml(objects: Iterable[dict[str, Any]]) -> str:
    """A YAML stream, one document per object, keys in the order the renderer built them."""
    out = io.StringIO()
    write_yaml(objects, out)
    return out.getvalue()


def write_yaml(objects: Iterable[dict[str, Any]], stream: IO[str]) -> None:
    """``to_yaml`` written to ``stream`` as it is emitted, without the whole output in memory at
    once (the Argo CD plugin's sidecar has 256Mi for any repository)."""
    with recursion_room():  # passed-through objects may nest as deep as the loader allows
        for empty, run in itertools.groupby(objects, key=lambda obj: obj == {}):
            if empty:
                # libyaml writes an empty mapping as "--- {}", a line kubectl's reader refuses as a document
                # separator followed by text (apimachinery util/yaml YAMLReader.Read): "{}" goes on a line of its own
                stream.write("---\n{}\n" * sum(1 for _ in run))
            else:
                yaml.dump_all(run, stream, Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True,
                              width=1 << 16)


def to_json(objects: Iterable[dict[str, Any]]) -> str:
    """A ``v1 List`` of the objects, as ``kubectl get -o json`` prints several objects."""
    out = io.StringIO()
    write_json(objects, out)
    return out.getvalue()


def write_json(objects: Iterable[dict[str, Any]], stream: IO[str]) -> None:
    """``to_json`` written to ``stream`` one item at a time.

    One item per line: ``json.dumps`` with ``indent`` falls back to the pure-Python encoder,
    which is several times slower than the C one on 10,000 Deployments.
    """
    stream.write('{"apiVersion":"v1","kind":"List","items":[\n')
    first = True
    with recursion_room():
        for obj in objects:
            stream.write(("" if first else ",\n") + json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
            first = False
    stream.write(("" if first else "\n") + "]}\n")


def to_single(obj: dict[str, Any], output: str) -> str:
    """One object in one format (one file of ``--output-dir``)."""
    if output == "json":
        with recursion_room():
            return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
    return to_yaml([obj])
