"""The informers' stores and the indexes kept beside them: what a worker reads instead of a GET.

client-go's seam between a controller and its caches: an informer per kind and namespace in scope
(informer.py), each with its store, plus three indexes that the events keep up to date and that the
per-CR step asks for (the Pods of a CR, the Deployments with a kept selector in a namespace, the HPA
that scales a Deployment). Nothing here queues or writes: the controller routes the events
(controller.py) and the share decides what a replica keeps (the ``keep`` filters).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from memcached_gitops.foundation.identities import KIND, MANAGED_BY_LABEL
from memcached_gitops.render import MANAGED_BY
from memcached_gitops.render.deployment import APP_LABELS

from ..decisions.autoscalers import scale_target
from ..decisions.selectors import has_kept_selector, matches, selector_of, template_labels
from ..decisions.vocabulary import AUTOSCALERS, COMPANIONS, DEPLOYMENTS, INSTANCE_LABEL, PODS, SELECTOR, Resource
from .api import KubeAPI
from .informer import Handler, Informer, Kind, key_of, slim

Key = tuple[str, str]
#: The kinds whose objects sit beside each Deployment (decisions/companions.py), by kind name.
COMPANION_KINDS = frozenset(r.kind for r in COMPANIONS)
#: The kinds a CR creates by name (its Deployment and companions): for each, a name index of every object
#: of that kind in scope, labelled or not (metadata only, ``names_kind``), so that creating one needs no GET
#: to see whether a foreign object already holds the name.
NAMED = (DEPLOYMENTS, *COMPANIONS)


def names_kind(resource: Resource) -> str:
    """The informer name of ``resource``'s name index (``DeploymentNames``)."""
    return f"{resource.kind}Names"


NAMES_KINDS = frozenset(names_kind(r) for r in NAMED)
#: The Pods watched: every Pod our selectors could select (each selects ``APP_LABELS`` and a CR's
#: instance), ours and any other's (``Caches.selected``), metadata only.
POD_SELECTOR = ",".join(f"{k}={v}" for k, v in APP_LABELS.items())


def owner_name(obj: dict[str, Any]) -> str:
    """The CR a Deployment, Service or budget belongs to: its controller, else our instance label,
    else its own name."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == KIND:
            controller: str = ref.get("name", "")
            return controller
    named: str = (meta.get("labels") or {}).get(INSTANCE_LABEL) or meta.get("name", "")
    return named


def watched_kinds(cr_kind: Kind) -> dict[str, Kind]:
    """What the controller watches: the CRs, their Deployments and companions by our label, the Pods
    our selectors could select (metadata only, ``POD_SELECTOR``), every HPA in scope (the users'
    objects, without our labels), and the name index of each kind a CR creates (metadata only,
    every object in scope: ``Caches.absent``)."""
    return {
        KIND: cr_kind,
        DEPLOYMENTS.kind: Kind(DEPLOYMENTS.kind, *DEPLOYMENTS.gvr, SELECTOR, keep_managed_fields=True),
        PODS.kind: Kind(PODS.kind, *PODS.gvr, POD_SELECTOR, metadata_only=True),
        AUTOSCALERS.kind: Kind(AUTOSCALERS.kind, *AUTOSCALERS.gvr),
        **{r.kind: Kind(r.kind, *r.gvr, SELECTOR, keep_managed_fields=True) for r in COMPANIONS},
        **{names_kind(r): Kind(names_kind(r), *r.gvr, metadata_only=True) for r in NAMED},
    }


class Caches:
    """An informer per kind and namespace in scope, and the indexes the events keep."""

    def __init__(self, api: KubeAPI, kinds: dict[str, Kind], handler: Handler, scopes: tuple[str | None, ...],
                 keep: Mapping[str, Callable[[dict[str, Any]], bool]] | None = None, **informer_settings: Any) -> None:
        """``informer_settings`` go to every Informer (watch timeout, heartbeat, metrics...); ``keep``
        filters a kind's store (the share's Deployments, Services and budgets with --shards)."""
        self.kinds = kinds
        keep = keep or {}

        def informer(kind: Kind, namespace: str | None, keep: Callable[[dict[str, Any]], bool] | None = None) -> Informer:
            return Informer(api, kind, handler, namespace=namespace, keep=keep, **informer_settings)

        self._informer = informer
        self.informers: dict[str, list[Informer]] = {
            name: [informer(kind, ns, keep.get(name)) for ns in scopes] for name, kind in kinds.items()
        }
        self._pods: dict[Key, set[str]] = {}  # a CR -> its Pods (our label)
        self._others: dict[Key, set[str]] = {}  # an instance -> the Pods that carry its labels but not ours
        self._pods_lock = threading.Lock()
        self._kept: dict[str, set[str]] = {}  # namespace -> Deployments with a kept selector (selectors.py)
        self._kept_lock = threading.Lock()
        self._autoscalers: dict[Key, set[str]] = {}  # a scaled Deployment -> the HPAs that name it
        self._autoscalers_lock = threading.Lock()

    def watch(self, name: str, kind: Kind, namespace: str) -> None:
        """One more kind, watched in one namespace only (the ring's Leases)."""
        self.kinds[name] = kind
        self.informers[name] = [self._informer(kind, namespace)]

    def all(self) -> list[Informer]:
        return [i for group in self.informers.values() for i in group]

    # ---- the stores
    def cached(self, kind: str, key: Key) -> dict[str, Any] | None:
        """The object of ``kind`` at ``key`` in the informers' stores (None when not cached)."""
        for informer in self.informers[kind]:
            if informer.namespace in (None, key[0]):
                return informer.store.get(key)
        return None

    def put(self, kind: str, obj: dict[str, Any]) -> None:
        """What a write of ours returned, unless the store holds a newer version (write-through)."""
        ns = key_of(obj)[0]
        for informer in self.informers[kind]:
            if informer.namespace in (None, ns):
                informer.store.put_if_newer(slim(self.kinds[kind], obj))

    def fill(self, kind: str, obj: dict[str, Any]) -> None:
        """An object read by a GET: kept unless the watch saw it go."""
        ns = key_of(obj)[0]
        for informer in self.informers[kind]:
            if informer.namespace in (None, ns):
                informer.store.fill([slim(self.kinds[kind], obj)])

    def absent(self, resource: Resource, ns: str, name: str) -> bool:
        """Whether no object of ``resource`` named ``name`` exists in ``ns``, as far as its name index
        knows: True only once the index has synced without error and holds no such name. controller-runtime's
        cache-backed client answers the same question from its cache; a foreign object created in the
        watch's latency is the same race a GET followed by an apply has always had."""
        for informer in self.informers.get(names_kind(resource), ()):
            if informer.namespace in (None, ns):
                return informer.synced.is_set() and not informer.error and informer.store.get((ns, name)) is None
        return False

    def stalled(self) -> str | None:
        """Why an informer stopped making progress, or None: the liveness probe (Metrics.liveness)."""
        for informer in self.all():
            problem = informer.stalled()
            if problem:
                return problem
        return None

    def cr_keys(self) -> list[Key]:
        return [k for informer in self.informers[KIND] for k in informer.store.keys()]

    def count(self, kind: str) -> int:
        return sum(len(i.store) for i in self.informers[kind])

    # ---- the indexes
    def pods_of(self, key: Key) -> tuple[str, ...]:
        with self._pods_lock:
            return tuple(sorted(self._pods.get(key, ())))

    def track_pod(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[Key]:
        """Index a Pod by its CR (its instance label): ours, or another's that carries the CR's
        selector labels (``selected``); the CRs whose Pods changed. A Pod relabelled (another instance
        or manager, or no instance label) leaves the entry its ``old`` self was filed under, as a LIST
        by each CR's selector would show it."""
        name = (obj.get("metadata") or {}).get("name", "")
        now = None if type_ == "DELETED" else _pod_entry(obj)
        was = {_pod_entry(o) for o in (old, obj if type_ == "DELETED" else None) if o is not None} - {None, now}
        changed: list[Key] = []
        with self._pods_lock:
            for entry, add in [(e, False) for e in sorted(e for e in was if e)] + ([(now, True)] if now else []):
                ours, key = entry
                index = self._pods if ours else self._others
                names = index.setdefault(key, set())
                size = len(names)
                (names.add if add else names.discard)(name)
                if not names:  # an entry per CR with Pods only: names come and go, memory does not grow with them
                    del index[key]
                if len(names) != size and key not in changed:
                    changed.append(key)
        return changed

    def selected(self, ns: str, selector: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The cached Pods of ``ns`` that a CR's own selector (``selector_labels``) selects, ours and any
        other's, as a LIST with that selector would return them; None when the Pods' cache has not
        synced or ``selector`` is not of that form (a kept one: a LIST answers)."""
        instance = (selector.get("matchLabels") or {}).get(INSTANCE_LABEL)
        if not instance or selector.get("matchExpressions") or not matches({"matchLabels": APP_LABELS}, selector["matchLabels"]):
            return None
        informers = [i for i in self.informers[PODS.kind] if i.namespace in (None, ns)]
        if not informers or not all(i.synced.is_set() and not i.error for i in informers):
            return None
        with self._pods_lock:
            names = self._pods.get((ns, instance), set()) | self._others.get((ns, instance), set())
        pods = [self.cached(PODS.kind, (ns, n)) for n in sorted(names)]
        return [p for p in pods if p is not None and matches(selector, (p.get("metadata") or {}).get("labels") or {})]

    def kept_peers(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        """Track the Deployments with a kept selector; when one comes, goes, or changes its selector
        or Pod labels, the other such Deployments of its namespace, whose overlap report may change."""
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        kept = type_ != "DELETED" and has_kept_selector(obj)
        changed = (type_ in ("ADDED", "DELETED") or old is None or selector_of(old) != selector_of(obj)
                   or template_labels(old) != template_labels(obj))
        with self._kept_lock:
            names = self._kept.setdefault(ns, set())
            was = name in names
            if kept:
                names.add(name)
            else:
                names.discard(name)
            return sorted(names - {name}) if (kept or was) and changed else []

    def kept_deployments(self, ns: str) -> list[dict[str, Any]]:
        """The cached Deployments of ``ns`` with a kept selector (the overlap report's neighbours)."""
        with self._kept_lock:
            names = sorted(self._kept.get(ns, ()))
        return [d for d in (self.cached(DEPLOYMENTS.kind, (ns, n)) for n in names) if d is not None]

    def track_autoscaler(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Key]:
        """Index an HPA by the Deployment it scales; the Deployments whose replicas changed hands."""
        name = (obj.get("metadata") or {}).get("name", "")
        before = scale_target(old) if old is not None else None
        after = scale_target(obj) if type_ != "DELETED" else None
        with self._autoscalers_lock:
            if before is not None and before != after:
                self._autoscalers.get(before, set()).discard(name)
            if after is not None:
                self._autoscalers.setdefault(after, set()).add(name)
        return [t for t in {before, after} if t is not None]

    def autoscaler_of(self, key: Key) -> str:
        """The HPA that scales this CR's Deployment ("" when none): the first by name, as in the once mode."""
        with self._autoscalers_lock:
            names = self._autoscalers.get(key)
            return min(names) if names else ""


def _pod_entry(pod: dict[str, Any]) -> tuple[bool, Key] | None:
    """Where a Pod is filed: whether we manage it, and the key of the CR its instance label names
    (None without one)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    instance = labels.get(INSTANCE_LABEL)
    return (labels.get(MANAGED_BY_LABEL) == MANAGED_BY, (meta.get("namespace", ""), instance)) if instance else None
