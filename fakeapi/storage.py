"""Storage: the objects the fake serves, as the API server's registry stores them.

One store for every resource, keyed ``(group, plural, namespace, name)``, behind one lock, as
k8s.io/apiserver's generic registry keeps its objects in etcd:

- one resourceVersion counter for every resource (etcd's revision); each write stores a new
  object with the next one (a write that changes nothing never reaches the store: no new
  resourceVersion, no event);
- on create: ``uid``, ``creationTimestamp`` and, for types that have it, ``generation`` 1; on
  update they are kept, and ``generation`` moves when the spec changes, semantically (64Mi is
  67108864; Deployments: also the annotations; Leases have none) (29, 15, 25);
- metadata keys in the server's order; a custom resource's JSON with sorted keys, a Deployment's
  in its Go struct's order;
- DELETE with a uid precondition; ``propagationPolicy: Foreground`` sets ``deletionTimestamp`` and
  the ``foregroundDeletion`` finalizer and keeps the object; an object with finalizers gets a
  ``deletionTimestamp`` and stays, until a write removes its last finalizer;
- one Event store behind both Event APIs (core/v1 and events.k8s.io/v1, converted on the way in
  and out, 14);
- installing a CRD serves its resource at once (``Established`` already true).

Every set or delete on the store is recorded as a change in the watch cache (watch.py), so WATCH
sees each stored change. ``Storage`` is one part of ``FakeAPIServer`` (server.py), which holds the
state it works on; the write's last step runs the OwnerReferencesPermissionEnforcement admission
check first, on dry runs too (37).
"""

from __future__ import annotations

import copy
import datetime as dt
import threading
import uuid
from collections.abc import Callable
from typing import Any

from memcached_gitops.schemas.crd import CRDError, _from_document

from .defaults import order_deployment, semantic
from .errors import APIError, not_found, status_body
from .resources import Resource, custom_types
from .watch import Change, WatchCache


class _RecordingStore(dict):
    """The fake's object store: every set or delete is reported, so WATCH sees each stored change."""

    def __init__(self, on_change: Callable[[Any, Any, Any], None]) -> None:
        super().__init__()
        self._on_change = on_change

    def __setitem__(self, key: Any, value: Any) -> None:
        old = self.get(key)
        super().__setitem__(key, value)
        self._on_change(key, old, value)

    def __delitem__(self, key: Any) -> None:
        old = self[key]
        super().__delitem__(key)
        self._on_change(key, old, None)


class Storage:
    """The store's operations: resourceVersion, keys, reads, the write's last step, DELETE, CRDs."""

    lock: threading.RLock  # every request and every test control holds it while it reads or writes the store
    rv: int  # the last resourceVersion handed out
    objects: dict[tuple[str, str, str, str], dict[str, Any]]  # a _RecordingStore
    watch_cache: WatchCache
    resources: dict[tuple[str, str], Resource]  # (group, plural) -> the type served; a CRD adds one
    clock: Callable[[], str]  # creationTimestamp, deletionTimestamp and managedFields times

    def _tick(self) -> str:
        """A clock that moves one second per reading, so that managedFields order by time as on a
        real server, where writes are seconds apart (09, 10)."""
        self._now = getattr(self, "_now", dt.datetime.now(dt.UTC).replace(microsecond=0)) + dt.timedelta(seconds=1)
        return self._now.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _record(self, key: tuple[str, str, str, str], old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Every stored change becomes a watch event; a no-op write stores nothing, so it has none (30, 31).
        The history shares the stored dicts: a write stores a new object, it never edits one in place."""
        if new is None:  # a delete is a write of its own: the DELETED object carries the new resourceVersion (30)
            assert old is not None
            new = {**old, "metadata": {**old["metadata"], "resourceVersion": self._next_rv()}}
            change = Change(self.rv, "DELETED", key, old, new)
        else:
            change = Change(int(new["metadata"]["resourceVersion"]), "MODIFIED" if old is not None else "ADDED", key, old, new)
        self.watch_cache.record(change)

    def _key(self, res: Resource, ns: str, name: str) -> tuple[str, str, str, str]:
        group = "" if res.plural == "events" else res.group  # one Event store behind both APIs (14)
        return (group, res.plural, ns if res.namespaced else "", name)

    def _must_get(self, res: Resource, ns: str, name: str) -> dict[str, Any]:
        obj = self.objects.get(self._key(res, ns, name))
        if obj is None:
            raise not_found(res, name)
        return _event_view(res, obj) if res.plural == "events" else copy.deepcopy(obj)

    def _namespace_must_exist(self, ns: str) -> None:
        if ns and ("", "namespaces", "", ns) not in self.objects:
            raise APIError(404, status_body(404, "NotFound", f'namespaces "{ns}" not found', {"name": ns, "kind": "namespaces"}))

    def _store_namespace(self, name: str) -> None:
        self.objects[("", "namespaces", "", name)] = {
            "kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": name, "uid": str(uuid.uuid4()), "resourceVersion": self._next_rv(),
                         "creationTimestamp": self.clock(), "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"},
        }

    def _install_crd(self, crd: dict[str, Any], manager: str) -> None:
        try:
            parsed = _from_document(crd, "fake apiserver")
        except CRDError as exc:
            raise APIError(422, status_body(422, "Invalid", str(exc))) from None
        names = crd["spec"]["names"]
        for v in parsed.versions.values():
            self.resources[(parsed.group, parsed.plural)] = Resource(
                parsed.plural, parsed.group, v.name, parsed.kind, namespaced=parsed.namespaced, status=v.status_subresource,
                custom=True, types=custom_types(v.schema), generation="spec", crd=parsed,
            )
        stored = copy.deepcopy(crd)
        meta = stored.setdefault("metadata", {})
        meta.update({"uid": meta.get("uid") or str(uuid.uuid4()), "resourceVersion": self._next_rv(), "generation": 1,
                     "creationTimestamp": self.clock()})
        stored["status"] = {
            "acceptedNames": {k: v for k, v in names.items()},
            "conditions": [{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
                           {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}],
            "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
        }
        self.objects[("apiextensions.k8s.io", "customresourcedefinitions", "", meta["name"])] = stored

    def _bump(self, res: Resource, old: dict[str, Any], new: dict[str, Any]) -> None:
        """generation moves on spec changes (Deployments: also annotations); Leases have none (29, 15)."""
        if not res.generation:
            return
        changed = semantic(old.get("spec")) != semantic(new.get("spec"))  # 64Mi == 67108864 (25)
        if "annotations" in res.generation:
            changed = changed or old["metadata"].get("annotations") != new["metadata"].get("annotations")
        new["metadata"]["generation"] = old["metadata"].get("generation", 1) + (1 if changed else 0)

    def _finish_write(self, res: Resource, key: tuple, old: dict[str, Any] | None, new: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        self._admit_owner_references(res, key[2], key[3], old, new)  # admission sees dry runs too (37)
        meta = new["metadata"]
        if old is None:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self.clock()
            if res.generation:
                meta["generation"] = 1
        else:
            for k in ("uid", "creationTimestamp", "deletionTimestamp"):
                if k in old["metadata"]:
                    meta[k] = old["metadata"][k]
            self._bump(res, old, new)
        meta = {k: meta[k] for k in _META_ORDER if k in meta} | {k: v for k, v in meta.items() if k not in _META_ORDER}
        new["metadata"] = meta
        if dry_run:
            if old is None:
                meta.pop("resourceVersion", None)
            else:
                meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            return new
        meta["resourceVersion"] = self._next_rv()
        new = _ordered(res, new)
        if old is not None and "deletionTimestamp" in meta and not meta.get("finalizers"):
            # the last finalizer of an object being deleted removed: it goes (the registry's
            # shouldDeleteDuringUpdate; documented under "Finalizers", assumed, not recorded)
            self.objects.pop(key, None)
            return copy.deepcopy(new)
        self.objects[key] = new
        return copy.deepcopy(new)

    def _delete(self, res: Resource, ns: str, name: str, body: bytes):
        key = self._key(res, ns, name)
        old = self.objects.get(key)
        if old is None:
            raise not_found(res, name)
        options = self._json_body(body) if body else {}
        pre = (options or {}).get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
            kind_group = f"{res.kind}.{res.group}" if res.group else res.kind
            message = (f'Operation cannot be fulfilled on {kind_group} "{name}": the UID in the precondition ({pre["uid"]}) does not '
                       f'match the UID in record ({old["metadata"]["uid"]}). The object might have been deleted and then recreated')
            raise APIError(409, status_body(409, "Conflict", message, {"name": name, **({"group": res.group} if res.group else {}), "kind": res.kind}))
        if (options or {}).get("propagationPolicy") == "Foreground":
            obj = copy.deepcopy(old)
            meta = obj["metadata"]
            if "deletionTimestamp" not in meta:
                meta["deletionTimestamp"] = self.clock()
                meta["deletionGracePeriodSeconds"] = 0
                meta.setdefault("finalizers", [])
                if "foregroundDeletion" not in meta["finalizers"]:
                    meta["finalizers"].append("foregroundDeletion")
                if res.generation:
                    meta["generation"] = meta.get("generation", 1) + 1
                meta["resourceVersion"] = self._next_rv()
                self.objects[key] = obj
            return 200, copy.deepcopy(obj), {}
        if old["metadata"].get("finalizers"):
            obj = copy.deepcopy(old)
            if "deletionTimestamp" not in obj["metadata"]:
                obj["metadata"]["deletionTimestamp"] = self.clock()
                obj["metadata"]["resourceVersion"] = self._next_rv()
                self.objects[key] = obj
            return 200, copy.deepcopy(obj), {}
        del self.objects[key]
        if res.plural == "services":  # the Service registry returns the deleted object (ReturnDeletedObject, 42)
            return 200, copy.deepcopy(old), {}
        details = {"name": name, **({"group": res.group} if res.group else {}), "kind": res.plural, "uid": old["metadata"]["uid"]}
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}, {}


_EVENT_FIELDS = {  # core/v1 <-> events.k8s.io/v1 (pkg/apis/events/v1 conversion)
    "involvedObject": "regarding", "message": "note", "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp", "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount", "reportingComponent": "reportingController",
}


def _event_to_core(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    if res.group != "events.k8s.io":
        return obj
    back = {v: k for k, v in _EVENT_FIELDS.items()}
    out = {back.get(k, k): v for k, v in obj.items()}
    out["apiVersion"], out["kind"] = "v1", "Event"
    return out


def _event_view(res: Resource, stored: dict[str, Any]) -> dict[str, Any]:
    """An Event as the API it is read through shows it, with that API's empty defaults."""
    core = copy.deepcopy(stored)
    for key, empty in (("eventTime", None), ("reportingComponent", ""), ("reportingInstance", ""),
                       ("firstTimestamp", None), ("lastTimestamp", None), ("source", {})):
        core.setdefault(key, empty)
    if res.group != "events.k8s.io":
        core["apiVersion"], core["kind"] = "v1", "Event"
        return core
    out = {_EVENT_FIELDS.get(k, k): v for k, v in core.items()}
    out["apiVersion"], out["kind"] = "events.k8s.io/v1", "Event"
    for key in ("reportingController", "reportingInstance"):
        if out.get(key) == "":
            del out[key]
    return out


_META_ORDER = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
               "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
               "managedFields")


def _ordered(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """CR JSON comes back with sorted keys; built-in types in struct order (README)."""
    if res.custom:
        def sort(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: sort(v[k]) for k in sorted(v)}
            if isinstance(v, list):
                return [sort(i) for i in v]
            return v
        return sort(obj)
    return order_deployment(obj) if res.plural == "deployments" else obj


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    def strip(o: dict[str, Any]) -> dict[str, Any]:
        o = copy.deepcopy(o)
        for k in ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"):
            o.get("metadata", {}).pop(k, None)
        return o
    return strip(old) == strip(new)
