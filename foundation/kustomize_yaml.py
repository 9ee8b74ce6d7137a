"""Read a file kustomize also reads only where our reader and kustomize's cannot disagree.

The graph check and kustomize read the same kustomization and plugin files with different YAML
readers: ours follows go-yaml v2 (a ``<<`` merge writes over the keys before it, the last duplicate
key wins), kustomize's kyaml follows go-yaml v3 (an explicit key beats a merged one; kyaml's node
lookups take the first of duplicate keys). Any such divergence lets a file read one way by the check
and another by kustomize (``kind: ConfigMapGenerator`` then ``<<: {kind: LabelTransformer}``). So
those files are refused, with their line, when they hold anything on which readers differ: a merge
key, an anchor or alias, an explicit tag, a duplicate key, or a key that is not a scalar.
"""

from __future__ import annotations

from typing import Any

import yaml

from .yamlreader import Document, NodeBudget, YAMLInputError, iter_documents


class DivergentYAML(ValueError):
    """A construct on which the check's reader and kustomize's could read different values."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.line, self.column, self.message = line, column, message


def _refuse(event: Any, what: str) -> DivergentYAML:
    mark = event.start_mark
    return DivergentYAML(mark.line + 1, mark.column + 1, f"{what}: YAML readers could differ on it; refused")


def _scan(text: str | bytes) -> None:
    """Walk the events of ``text``; raise DivergentYAML at the first construct readers could differ on."""
    frames: list[tuple[set[str], list[bool]] | None] = []  # per open collection: a mapping's keys, awaiting a key
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise _refuse(event, "an alias")
        if getattr(event, "anchor", None) is not None:
            raise _refuse(event, "an anchor")
        if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)) and event.tag is not None:
            raise _refuse(event, f"the tag {event.tag!r}")
        if not isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            if isinstance(event, yaml.CollectionEndEvent):
                frames.pop()
            continue
        top = frames[-1] if frames else None
        if top is not None and top[1][0]:  # this node is a key
            if not isinstance(event, yaml.ScalarEvent):
                raise _refuse(event, "a key that is not a scalar")
            if event.value == "<<":
                raise _refuse(event, "a merge key '<<'")
            if event.value in top[0]:
                raise _refuse(event, f"the duplicate key {event.value[:64]!r}")
            top[0].add(event.value)
        if top is not None:
            top[1][0] = not top[1][0]
        if isinstance(event, yaml.MappingStartEvent):
            frames.append((set(), [True]))
        elif isinstance(event, yaml.SequenceStartEvent):
            frames.append(None)


def read_plain(text: str | bytes, nodes: NodeBudget | None = None) -> list[Document]:
    """The documents of ``text`` read by the product's bounded reader (its nodes counted in ``nodes``),
    once no construct is one the two readers could differ on. Raises YAMLInputError (bad YAML, the
    budget spent: TooManyNodes) or DivergentYAML."""
    docs = list(iter_documents(text, nodes))  # bounded first: size, depth, alias expansion
    try:
        _scan(text)
    except yaml.YAMLError as exc:  # the bounded reader took it; libyaml's events did not
        mark = getattr(exc, "problem_mark", None)
        raise YAMLInputError(getattr(exc, "problem", None) or "not YAML", mark.line + 1 if mark else 1,
                             mark.column + 1 if mark else 1) from None
    return docs
