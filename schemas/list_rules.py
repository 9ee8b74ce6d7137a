"""How an object's lists, maps and structs merge under server-side apply: the markers of its kind's
OpenAPI schema (``x-kubernetes-list-type: map`` with its keys, atomic maps and structs), as drift
comparison (reconciler/decisions/drift.py) needs them. Each kind the product renders says its own
(render/companions.py for the objects beside the Deployment); every kind shares ObjectMeta's."""

from __future__ import annotations

from typing import NamedTuple


class ListRules(NamedTuple):
    """A kind's list and struct semantics, as compare() needs them."""

    merge_keys: dict[tuple[str, ...], tuple[str, ...]]
    exclusive: frozenset[tuple[str, ...]]
    atomic: frozenset[tuple[str, ...]]


#: ObjectMeta's: ownerReferences is a list keyed by uid, each reference an atomic struct (meta/v1 API reference).
OWNER_MERGE_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {("metadata", "ownerReferences"): ("uid",)}
OWNER_ATOMIC = frozenset({("metadata", "ownerReferences", "item")})
