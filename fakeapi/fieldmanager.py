"""The field manager: managedFields and server-side apply, as kube-apiserver keeps them.

Written from the Kubernetes documentation ("Server-Side Apply": field management, conflicts,
merge strategy) and the recorded transcripts; fields.py holds the field sets themselves (paths,
fieldsV1, what an applied or updated object owns), this module what a write does with them:

- ``fieldManager``: required for an apply (422), at most 128 bytes; a write without one is
  recorded under its User-Agent up to the first ``/`` (22).
- An Update (POST, PUT, a merge, strategic or JSON patch) gives its manager the fields it changed
  and takes them from the others; the main resource never owns status and ``/status`` owns nothing
  else; a ``/scale`` write is an Update of subresource scale. Entries list Apply before Update,
  each by time, then manager (09, 10).
- An apply (``application/apply-patch+yaml``) applies the first document only (17); a field the
  schema does not declare is a 500 whatever ``fieldValidation`` says (23, 20); a field another
  manager owns with a different value is a 409 conflict, unless ``force=true`` takes it; fields
  dropped from the manager's applied configuration go, with their named parents, unless someone
  else still owns them (08); associative lists merge by key, live items keeping their place (20);
  stripped managedFields are first owned by a synthetic ``before-first-apply`` manager (19); an
  apply that changes nothing stores nothing, and the entry's time moves only when a value does (09).

``FieldManager`` is one part of ``FakeAPIServer`` (server.py); an apply goes through admission and
the store's last write step like any other write.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml
from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents
from memcached_gitops.schemas.structural import prune_and_default

from . import fields as F
from .admission import _undeclared_in_deployment
from .errors import APIError, bad_request, conflict_modified, not_found, status_body
from .resources import KEY_DEFAULTS, Resource
from .storage import _same


def manager_from_user_agent(ua: str) -> str:
    """Writes without fieldManager take the User-Agent up to the first '/', cut to 128 bytes (22)."""
    return ua.split("/", 1)[0][:128]


class FieldManager:
    """managedFields bookkeeping for every write, and server-side apply."""

    def _check_field_manager(self, query: dict[str, str], ua: str, required: bool = False) -> str:
        manager = query.get("fieldManager")
        if manager is None:
            if required:
                raise APIError(422, status_body(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
                                                {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]}))
            return manager_from_user_agent(ua)
        if len(manager.encode()) > 128:
            message = 'Too long: may not be more than 128 bytes'
            raise APIError(422, status_body(422, "Invalid", f'PatchOptions.meta.k8s.io "" is invalid: fieldManager: {message}',
                                            {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueTooLong", "message": message, "field": "fieldManager"}]}))
        return manager

    def _entries(self, obj: dict[str, Any] | None) -> list[dict[str, Any]]:
        return copy.deepcopy((obj or {}).get("metadata", {}).get("managedFields") or [])

    @staticmethod
    def _entry_id(e: dict[str, Any]) -> tuple:
        return (e.get("manager"), e.get("operation"), e.get("subresource", ""))

    def _record_update(self, res: Resource, old: dict[str, Any] | None, new: dict[str, Any], manager: str, sub: str | None,
                       entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
        """Ownership after an Update (POST/PUT/patch): the writer gains what it changed, others lose it."""
        changed, removed = F.update_set(old or {}, new, res.types)
        if res.status:  # the main resource never owns status, /status owns nothing else (reset fields)
            wanted = sub == "status"
            changed = {p for p in changed if (p[:1] == (("f", "status"),)) == wanted}
            removed = {p for p in removed if (p[:1] == (("f", "status"),)) == wanted}
        if not changed and not removed:
            return entries, False
        out = []
        for e in entries:
            paths = F.from_fields_v1(e.get("fieldsV1", {}))
            paths = {p for p in paths if not any(p[: len(c)] == c for c in changed | removed)}
            if self._entry_id(e) == (manager, "Update", sub or "") :
                continue
            if paths:
                e["fieldsV1"] = F.to_fields_v1(paths)
                out.append(e)
        mine = next((e for e in entries if self._entry_id(e) == (manager, "Update", sub or "")), None)
        mine_paths = F.from_fields_v1(mine["fieldsV1"]) if mine else set()
        mine_paths = {p for p in mine_paths if not any(p[: len(r)] == r for r in removed)} | changed
        if mine_paths:
            entry = {"manager": manager, "operation": "Update", "apiVersion": res.api_version if sub != "scale" else "apps/v1"}
            if sub != "scale":
                entry["time"] = self.clock()
            entry |= {"fieldsType": "FieldsV1", "fieldsV1": F.to_fields_v1(mine_paths)}
            if sub:
                entry["subresource"] = sub
            out.append(entry)
        return _sort_entries(out), True

    def _apply(self, res: Resource, ns: str, name: str, sub: str | None, query: dict[str, str], body: bytes):
        manager = query.get("fieldManager")
        if manager is None:
            self._check_field_manager(query, "", required=True)
        self._check_field_manager(query, "")
        dry_run = self._check_dry_run(query)
        force = query.get("force") == "true"
        if sub and self._key(res, ns, name) not in self.objects:
            # a subresource never creates: StatusREST.Update passes forceAllowCreate=false to the store
            # (apiextensions-apiserver registry/customresource/etcd.go), whose Update answers NotFound
            # before the patch is decoded (apiserver registry/generic/registry/store.go). No transcript records
            # this exchange: the body is assumed to be the store's NotFound, as transcript 12 records for a GET
            raise not_found(res, name)
        try:
            docs = list(iter_documents(body))
        except YAMLInputError:
            try:
                list(yaml.load_all(body, Loader=yaml.CSafeLoader))
            except yaml.MarkedYAMLError as exc:
                line = exc.problem_mark.line if exc.problem_mark else 0
                raise bad_request(f"error decoding YAML: error converting YAML to JSON: yaml: line {line}: {exc.problem}") from None
            raise bad_request("error decoding YAML") from None
        applied = docs[0].value if docs else None  # several documents: only the first is applied (17)
        if not isinstance(applied, dict):
            got = "array" if isinstance(applied, list) else "string"
            raise bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
                              f"{got} into Go value of type map[string]interface {{}}")
        if applied.get("apiVersion") != res.api_version or applied.get("kind") != res.kind:
            raise bad_request(f"invalid object type: {applied.get('apiVersion') or '/'}, Kind={applied.get('kind') or ''}")
        meta = applied.setdefault("metadata", {})
        if not meta.get("name"):
            raise bad_request(f"the name of the object ({name} based on URL) was undeterminable: name must be provided")
        if meta["name"] != name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ns
        if "managedFields" in meta:
            raise bad_request("metadata.managedFields must be nil")
        key = self._key(res, ns, name)
        old = self.objects.get(key)
        if old is None:  # an apply that creates is authorised as create too, also under dryRun=All (34)
            self._require(res.group, res.plural, sub, "create", name, ns or None)
        if old is None and res.namespaced:
            self._namespace_must_exist(ns)
        if old is not None and meta.get("resourceVersion") and meta["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise conflict_modified(res, name)
        # the main resource ignores status and /status ignores everything else (09, 16); a dropped
        # stanza still counts as a change for the managedFields time, as SMD merged it first (09)
        dropped_change = False
        if res.status and old is not None:
            other_part = ("spec",) if sub == "status" else ("status",)
            dropped_change = any(k in applied and applied[k] != old.get(k) for k in other_part)
        if res.status:
            if sub == "status":
                applied = {"apiVersion": applied["apiVersion"], "kind": applied["kind"], "metadata": {"name": name, **({"namespace": ns} if res.namespaced else {})},
                           **({"status": applied["status"]} if "status" in applied else {})}
            else:
                applied.pop("status", None)
        self._undeclared_fields(res, applied, ns, name)
        if res.group == "apiextensions.k8s.io":
            self._install_crd(applied, manager or "")
            stored = self.objects[key]
            if old is not None:
                stored["metadata"]["uid"] = old["metadata"]["uid"]
                stored["metadata"]["creationTimestamp"] = old["metadata"]["creationTimestamp"]
            return (200 if old is not None else 201), copy.deepcopy(stored), {}
        normalized = self._normalize_applied(res, applied)
        applied_paths = F.applied_set(applied, res.types)
        applied_paths = {p for p in applied_paths if p[:1] != (("f", "metadata"),) or p[1][1] in ("labels", "annotations", "ownerReferences", "finalizers")}
        entries = self._entries(old)
        if old is not None and not entries:
            # managedFields were stripped: a synthetic Update manager owns every existing field (19)
            owned, _ = F.update_set({}, {k: v for k, v in old.items() if k != "status"}, res.types)
            entries = [{"manager": "before-first-apply", "operation": "Update", "apiVersion": res.api_version,
                        "time": self.clock(), "fieldsType": "FieldsV1", "fieldsV1": F.to_fields_v1(owned)}]
        me = (manager, "Apply", sub or "")
        conflicts: list[tuple[dict[str, Any], F.Path]] = []
        base = copy.deepcopy(old) if old else {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": name, **({"namespace": ns} if res.namespaced else {})}}
        for e in entries:
            if self._entry_id(e) == me:
                continue
            for p in F.from_fields_v1(e.get("fieldsV1", {})):
                if p in applied_paths and F.value_at(base, p, res.types) != F.value_at(normalized, p, res.types):
                    if not _is_member_only(p, applied_paths):
                        conflicts.append((e, p))
        if conflicts and not force:
            raise self._conflict_error(sorted(conflicts, key=lambda c: _set_order(c[1])))
        mine_before = next((F.from_fields_v1(e["fieldsV1"]) for e in entries if self._entry_id(e) == me), set())
        others = set().union(*(F.from_fields_v1(e.get("fieldsV1", {})) for e in entries if self._entry_id(e) != me)) if entries else set()
        if force and conflicts:
            others -= {p for _, p in conflicts}
        result = copy.deepcopy(base)
        keep = others | applied_paths
        for p in sorted(mine_before - applied_paths, key=len):  # items before their fields
            if F.covers(keep, p) or F.value_at(result, p, res.types) is F._ABSENT:
                continue
            # SMD prunes the named parents too (EnsureNamedFieldsAreMembers) unless someone still owns
            # something under them: a dropped readinessProbe goes with its defaulted fields (08).
            while len(p) > 1 and p[-2][0] == "f" and not any(q[: len(p) - 1] == p[:-1] for q in keep):
                p = p[:-1]
            _remove(result, p, res.types)
        _merge_into(result, normalized, res.types)
        if res.plural == "deployments" and "replicas" not in (result.get("spec") or {}):
            pass  # defaulting below puts 1 back (21)
        warnings: list[str] = []
        result["metadata"].pop("managedFields", None)
        result["metadata"].pop("resourceVersion", None)
        if old is not None and res.status and "status" in old:
            result["status"] = copy.deepcopy(old["status"]) if sub != "status" else result.get("status", {})
        prepared = self._prepare(res, result, old, {**query, "fieldValidation": "Ignore"}, warnings)
        self._allocate(res, prepared, old)  # type: ignore[attr-defined]  # Admission's
        # ownership
        new_entries = []
        conflict_paths: dict[tuple, set] = {}
        for e, p in conflicts:
            conflict_paths.setdefault(self._entry_id(e), set()).add(p)
        for e in entries:
            if self._entry_id(e) == me:
                continue
            paths = F.from_fields_v1(e.get("fieldsV1", {})) - conflict_paths.get(self._entry_id(e), set())
            if paths:
                e["fieldsV1"] = F.to_fields_v1(paths)
                new_entries.append(e)
        values_changed = old is None or not _same(old, prepared) or dropped_change
        mine_old_entry = next((e for e in entries if self._entry_id(e) == me), None)
        mine = {"manager": manager, "operation": "Apply", "apiVersion": res.api_version}
        if values_changed:
            mine["time"] = self.clock()
        elif mine_old_entry and "time" in mine_old_entry:
            mine["time"] = mine_old_entry["time"]
        mine |= {"fieldsType": "FieldsV1", "fieldsV1": F.to_fields_v1(applied_paths)}
        if sub:
            mine["subresource"] = sub
        if applied_paths:
            new_entries.append(mine)
        new_entries = _sort_entries(new_entries)
        if old is not None and not values_changed and _entries_equal(new_entries, self._entries(old)):
            return 200, copy.deepcopy(old), {}
        prepared["metadata"]["managedFields"] = new_entries
        out = self._finish_write(res, key, old, prepared, dry_run)
        return (201 if old is None else 200), out, self._warning_headers(warnings)

    def _normalize_applied(self, res: Resource, applied: dict[str, Any]) -> dict[str, Any]:
        """The applied configuration as the server compares it: defaulted list keys, canonical quantities."""
        out = copy.deepcopy(applied)
        if res.plural == "deployments":
            from .defaults import canonical_quantity

            for c in (out.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []):
                for port in c.get("ports") or []:
                    for k, v in KEY_DEFAULTS[("spec", "template", "spec", "containers", "ports")].items():
                        port.setdefault(k, v)
                for section in ("limits", "requests"):
                    if isinstance((c.get("resources") or {}).get(section), dict):
                        c["resources"][section] = {k: canonical_quantity(v) for k, v in c["resources"][section].items()}
        return out

    def _undeclared_fields(self, res: Resource, applied: dict[str, Any], ns: str, name: str) -> None:
        """An apply with a field the schema does not declare is a 500 (23, 20), whatever fieldValidation says."""
        path = None
        if res.custom:
            version = res.crd.versions[res.version]
            probe = copy.deepcopy(applied)
            pruned = sorted(prune_and_default(probe, version.schema))
            if pruned:
                path = "." + ".".join(str(p) for p in pruned[0])
        elif res.plural == "deployments":
            path = _undeclared_in_deployment(applied)
        if path:
            where = f"{ns}/{name}" if ns else name
            message = f"failed to create typed patch object ({where}; {res.api_version}, Kind={res.kind}): {path}: field not declared in schema"
            raise APIError(500, status_body(500, "", message))

    def _conflict_error(self, conflicts: list[tuple[dict[str, Any], F.Path]]) -> APIError:
        def who(e: dict[str, Any]) -> str:
            text = f'"{e["manager"]}"'
            if e.get("subresource"):
                text += f' with subresource "{e["subresource"]}"'
            if e.get("operation") == "Update":
                text += f' using {e.get("apiVersion")}'
            return text

        by_manager: dict[str, list[str]] = {}
        causes = []
        for e, p in conflicts:
            by_manager.setdefault(who(e), []).append(F.format_field_path(p))
            causes.append({"reason": "FieldManagerConflict", "message": f"conflict with {who(e)}", "field": F.format_field_path(p)})
        n = len(conflicts)
        if n == 1:
            (m, [p]), = by_manager.items()
            message = f"Apply failed with 1 conflict: conflict with {m}: {p}"
        else:
            blocks = "\n".join(f"conflicts with {m}:\n" + "\n".join(f"- {p}" for p in paths) for m, paths in by_manager.items())
            message = f"Apply failed with {n} conflicts: {blocks}"
        return APIError(409, status_body(409, "Conflict", message, {"causes": causes}))


def _set_order(path: F.Path) -> tuple[Any, ...]:
    """structured-merge-diff's fieldpath.Set order, in which conflicts are listed (42): at each level
    the members (paths that end there) before the children, each group by its path element (a field
    name before a key). Recorded once (42: a member before a child, fields in name order); the order
    of a key against a field is assumed from structured-merge-diff's PathElement.Compare."""
    return tuple((0 if i == len(path) - 1 else 1, 0 if kind == "f" else 1, json.dumps(value, sort_keys=True, default=str))
                 for i, (kind, value) in enumerate(path))


def _entries_equal(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    def norm(es: list[dict[str, Any]]) -> list:
        return sorted((e.get("manager"), e.get("operation"), e.get("subresource", ""), json.dumps(e.get("fieldsV1"), sort_keys=True)) for e in es)
    return norm(a) == norm(b)


def _sort_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Apply entries first, then Update; within each, by time (none first), then manager (09, 10)."""
    return sorted(entries, key=lambda e: (e.get("operation") != "Apply", e.get("time", ""), e.get("manager", "")))


def _is_member_only(path: F.Path, paths: set[F.Path]) -> bool:
    """An associative-list item that only marks presence never conflicts on its own."""
    return path[-1][0] == "k" and any(len(q) > len(path) and q[: len(path)] == path for q in paths)


def _remove(obj: dict[str, Any], path: F.Path, types: F.Types) -> None:
    parent_path, last = path[:-1], path[-1]
    parent = F.value_at(obj, parent_path, types) if parent_path else obj
    if parent is F._ABSENT:
        return
    kind, value = last
    if kind == "f" and isinstance(parent, dict):
        parent.pop(value, None)
    elif kind == "k" and isinstance(parent, list):
        parent[:] = [i for i in parent if not (isinstance(i, dict) and all(i.get(k) == v for k, v in value))]
    elif kind == "v" and isinstance(parent, list) and value in parent:
        parent.remove(value)


def _merge_into(target: Any, applied: Any, types: F.Types, path: tuple[str, ...] = ()) -> Any:
    """Merge an applied configuration into the live object: maps by key, associative lists by key,
    everything else replaced (SMD merge)."""
    for key, value in applied.items():
        sub = path + (key,)
        if isinstance(value, dict) and isinstance(target.get(key), dict) and value and not types.is_atomic_struct(sub):
            _merge_into(target[key], value, types, sub)
            continue
        kind, keys = types.list_kind(sub)
        if isinstance(value, list) and kind == "map" and isinstance(target.get(key), list):
            # live items keep their place (merged with the applied ones); new items are appended (20)
            merged = []
            for cur in target[key]:
                match = next((i for i in value if types.item_key(i, sub) == types.item_key(cur, sub)), None)
                merged_item = copy.deepcopy(cur)
                if match is not None:
                    if sub in types.atomic_structs:
                        merged_item = copy.deepcopy(match)
                    else:
                        _merge_into(merged_item, match, types, sub)
                merged.append(merged_item)
            live_keys = {types.item_key(cur, sub) for cur in target[key]}
            merged += [copy.deepcopy(i) for i in value if types.item_key(i, sub) not in live_keys]
            target[key] = merged
        elif isinstance(value, list) and kind == "set" and isinstance(target.get(key), list):
            target[key] = list(dict.fromkeys(target[key] + value))
        else:
            target[key] = copy.deepcopy(value)
    return target
