"""The write verbs: what POST, PUT and PATCH do to an object, as kube-apiserver's REST handlers
(k8s.io/apiserver/pkg/endpoints/handlers: create, update, patch) carry them out.

Each verb reads its body and options, builds the new object, and hands it on: admission
(admission.py), the managedFields an Update records (fieldmanager.py), and the store's last write
step (storage.py). The rules here:

- a body must be JSON (``error decoding body``, 400); ``dryRun`` accepts only ``All`` (422) and
  answers what would be stored without storing it;
- POST: the URL's namespace must exist and match the body's; ``generateName`` gets five random
  characters, then is validated as a subdomain (14); an existing name is 409 AlreadyExists; a
  Namespace or a CRD posted is stored as the server sets them up;
- PUT and the merge patch honour ``metadata.resourceVersion`` (409 when it is stale); a PUT of a
  Lease without one is the storage layer's 422 (15);
- PATCH: JSON merge patch (RFC 7386), strategic merge patch as kubectl sends it (maps merge,
  lists with a merge key merge by it), JSON patch (RFC 6902: add, remove, replace, test); an
  apply goes to the field manager; another content type is 415; ``force`` on a non-apply patch
  is 422; ``managedFields: []`` (or ``[{}]``) in a merge patch or a PUT strips them (19); other
  managedFields a write to the main resource carries replace the stored ones before the write's own
  changes are recorded (assumed, not recorded: the documentation's "Clearing managedFields" and
  k8s.io/apiserver fieldmanager ``decodeLiveOrNew``; what Flux's ssa.PatchReplaceFieldsManagers relies on);
- subresources: a write to ``/status`` changes only status and a write to the main resource never
  does; ``/scale`` reads and writes an autoscaling/v1 Scale whose only writable field is
  ``spec.replicas`` (04, 40);
- a write that changes nothing (values and managedFields) answers the stored object and stores
  nothing; warnings (an unknown field pruned) come back in one ``Warning`` header.

``Verbs`` is one part of ``FakeAPIServer`` (server.py).
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

from . import fields as F
from .errors import APIError, bad_request, conflict_modified, invalid, not_found, status_body
from .fieldmanager import _sort_entries
from .resources import Resource
from .storage import _event_to_core, _event_view, _same


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target: Any, patch: Any, types: F.Types, path: tuple[str, ...] = ()) -> Any:
    """Strategic merge patch as kubectl sends it: maps merge, lists with a merge key merge by it (an
    item ``{"$patch": "delete", <key>}`` removes its match), ``$setElementOrder``/``$retainKeys``
    directives are honoured only as far as ordering goes."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target)
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if v is None:
            out.pop(k, None)
            continue
        sub = path + (k,)
        kind, keys = types.list_kind(sub)
        if isinstance(v, list) and kind == "map" and isinstance(out.get(k), list):
            merged = list(out[k])
            for item in v:
                key = F.item_key(item, keys)
                idx = next((i for i, cur in enumerate(merged) if F.item_key(cur, keys) == key), None)
                if isinstance(item, dict) and item.get("$patch") == "delete":
                    # the item's delete directive, as kubectl edit's two-way patch sends a changed key
                    # (assumed from the strategic-merge-patch design document, not recorded)
                    gone = types.item_key(item, sub)
                    merged = [cur for cur in merged if types.item_key(cur, sub) != gone]
                    continue
                if idx is None:
                    merged.append(copy.deepcopy(item))
                else:
                    merged[idx] = strategic_merge_patch(merged[idx], item, types, sub)
            out[k] = merged
        elif isinstance(v, dict):
            out[k] = strategic_merge_patch(out.get(k, {}), v, types, sub)
        else:
            out[k] = copy.deepcopy(v)
    return out


def json_patch(target: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 (add, remove, replace, test). An operation that cannot apply (a test that fails, a path
    or an index that is not there) is the API server's answer to any JSON patch error: 422 with the
    library's words as the one cause (apiserver endpoints/handlers/patch.go ``applyJSPatch``:
    ``NewGenericServerResponse(http.StatusUnprocessableEntity, ..., err.Error(), 0, false)``). No transcript
    records a JSON patch that fails: the status, reason and message are read in that source, the cause's
    words follow evanphx/json-patch and are assumed, not recorded."""
    doc = copy.deepcopy(target)
    for op in ops:
        try:
            _apply_one(doc, op)
        except (IndexError, KeyError, ValueError, TypeError):
            raise _patch_failed(f"{op.get('op')} operation does not apply: doc is missing path: \"{op.get('path')}\": missing value") from None
    return doc


def _patch_failed(cause: str) -> APIError:
    """apimachinery errors.NewGenericServerResponse for 422, as kubectl prints it: "The request is invalid:
    the server rejected our request due to an error in our request"."""
    return APIError(422, status_body(422, "Invalid", "the server rejected our request due to an error in our request",
                                     {"causes": [{"reason": "UnexpectedServerResponse", "message": cause}]}))


def _index(items: list[Any], token: str, adding: bool = False) -> int:
    """A list index as RFC 6902 takes it: ASCII digits only (Python's ``-1`` is no index, nor is "²",
    which str.isdigit takes), within the list (one past its end where an add inserts)."""
    if not (token.isascii() and token.isdigit()) or int(token) > len(items) - (0 if adding else 1):
        raise IndexError(token)
    return int(token)


def _apply_one(doc: Any, op: dict[str, Any]) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    parent = doc
    for p in parts[:-1]:
        parent = parent[_index(parent, p)] if isinstance(parent, list) else parent[p]
    last = parts[-1]
    if op["op"] in ("add", "replace"):
        if isinstance(parent, list):
            if last == "-" and op["op"] == "add":
                parent.append(op["value"])
            elif op["op"] == "add":
                parent.insert(_index(parent, last, adding=True), op["value"])
            else:
                parent[_index(parent, last)] = op["value"]
        else:
            if op["op"] == "replace" and last not in parent:
                raise KeyError(last)
            parent[last] = op["value"]
    elif op["op"] == "remove":
        del parent[_index(parent, last) if isinstance(parent, list) else last]
    elif op["op"] == "test":
        cur = parent[_index(parent, last)] if isinstance(parent, list) else parent.get(last)
        if cur != op["value"]:  # evanphx/json-patch: errors.Wrapf(ErrTestFailed, "testing value %s failed", path)
            raise _patch_failed(f"testing value {op['path']} failed: test failed")


class Verbs:
    """create, update and patch (apply excepted), their subresources, and their options."""

    @staticmethod
    def _json_body(body: bytes) -> Any:
        try:
            return json.loads(body or b"null")
        except ValueError as exc:
            raise bad_request(f"error decoding body: {exc}") from None

    def _check_dry_run(self, query: dict[str, str]) -> bool:
        value = query.get("dryRun")
        if value is None:
            return False
        if value != "All":
            message = f'Unsupported value: ["{value}"]: supported values: "All"'
            raise APIError(422, status_body(422, "Invalid", f'PatchOptions.meta.k8s.io "" is invalid: dryRun: {message}',
                                            {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueNotSupported", "message": message, "field": "dryRun"}]}))
        return True

    @staticmethod
    def _warning_headers(warnings: list[str]) -> dict[str, str]:
        return {"Warning": ", ".join(warnings)} if warnings else {}

    def _create(self, res: Resource, ns: str, query: dict[str, str], ua: str, ctype: str, body: bytes):
        obj = self._json_body(body)
        if not isinstance(obj, dict):
            raise bad_request("the body must be an object")
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
            self._namespace_must_exist(ns)
            meta["namespace"] = ns
        manager = self._check_field_manager(query, ua)
        dry_run = self._check_dry_run(query)
        if res.plural == "namespaces":
            name = meta.get("name", "")
            if ("", "namespaces", "", name) in self.objects:
                raise APIError(409, status_body(409, "AlreadyExists", f'namespaces "{name}" already exists', {"name": name, "kind": "namespaces"}))
            self._store_namespace(name)
            stored = self.objects[("", "namespaces", "", name)]
            stored["metadata"]["managedFields"] = [{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": self.clock(),
                                                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}}]
            return 201, copy.deepcopy(stored), {}
        if res.group == "apiextensions.k8s.io":
            self._install_crd(obj, manager)
            return 201, self._must_get(res, "", meta["name"]), {}
        if not meta.get("name") and meta.get("generateName"):
            prefix = meta["generateName"]
            meta["name"] = prefix + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
            # the name is generated first, then generateName is validated as a subdomain (14)
            if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", prefix.rstrip("-")) or prefix.endswith("."):
                causes = [("FieldValueInvalid", "metadata.generateName",
                           f'Invalid value: "{prefix}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')')]
                raise invalid(res, meta["name"], causes)
        name = meta.get("name", "")
        key = self._key(res, ns, name)
        if key in self.objects:
            details = {"name": name, **({"group": res.group} if res.group else {}), "kind": res.plural}
            raise APIError(409, status_body(409, "AlreadyExists", f'{res.group_resource} "{name}" already exists', details))
        warnings: list[str] = []
        if res.status and not res.custom:
            obj.pop("status", None)
        if res.custom and res.status:
            obj.pop("status", None)
        self._check_kind_specific(res, obj, None)
        new = self._prepare(res, obj, None, query, warnings)
        meta = new["metadata"]
        meta.pop("managedFields", None)
        entries, _ = self._record_update(res, None, new, manager, None, [])
        meta["managedFields"] = entries
        self._allocate(res, new, None)
        if res.plural == "events":
            new = _event_to_core(res, new)
        out = self._finish_write(res, key, None, new, dry_run)
        if res.plural == "events":
            out = _event_view(res, out)
        return 201, out, self._warning_headers(warnings)

    def _update(self, res: Resource, ns: str, name: str, sub: str | None, query: dict[str, str], ua: str, body: bytes):
        obj = self._json_body(body)
        key = self._key(res, ns, name)
        old = self.objects.get(key)
        if old is None:
            raise not_found(res, name)
        manager = self._check_field_manager(query, ua)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if not rv and res.plural == "leases":  # the storage layer's error: resource plural, not Kind (15)
            message = "metadata.resourceVersion: Invalid value: 0: must be specified for an update"
            raise APIError(422, status_body(422, "Invalid", f'{res.group_resource} "{name}" is invalid: {message}', {
                "name": name, "group": res.group, "kind": res.plural, "causes": [
                    {"reason": "FieldValueInvalid", "message": "Invalid value: 0: must be specified for an update", "field": "metadata.resourceVersion"}]}))
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict_modified(res, name)
        if sub == "scale":  # an autoscaling/v1 Scale, as the HPA controller PUTs it (40)
            return self._write_scale(res, key, old, obj, manager, query)
        self._check_kind_specific(res, obj, old)
        new = self._merge_subresource(res, old, obj, sub)
        return self._commit_update(res, key, old, new, manager, sub, query)

    def _patch(self, res: Resource, ns: str, name: str, sub: str | None, query: dict[str, str], ua: str, ctype: str, body: bytes):
        if ctype == "application/apply-patch+yaml":
            return self._apply(res, ns, name, sub, query, body)
        if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json"):
            raise APIError(415, status_body(415, "UnsupportedMediaType", "415: Unsupported Media Type", {}))
        if "force" in query:
            raise APIError(422, status_body(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
                                            {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueForbidden", "message": "Forbidden: may not be specified for non-apply patch", "field": "force"}]}))
        manager = self._check_field_manager(query, ua)
        key = self._key(res, ns, name)
        old = self.objects.get(key)
        if old is None:
            raise not_found(res, name)
        patch = self._json_body(body)
        if sub == "scale":
            return self._write_scale(res, key, old, patch, manager, query)
        view = copy.deepcopy(old)
        if ctype == "application/merge-patch+json":
            rv = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict_modified(res, name)
            merged = merge_patch(view, patch)
            if isinstance(patch, dict) and "managedFields" in (patch.get("metadata") or {}):
                merged["metadata"]["managedFields"] = patch["metadata"]["managedFields"]
        elif ctype == "application/strategic-merge-patch+json":
            merged = strategic_merge_patch(view, patch, res.types)
        else:
            merged = json_patch(view, patch)
        merged = self._merge_subresource(res, old, merged, sub)
        return self._commit_update(res, key, old, merged, manager, sub, query)

    def _merge_subresource(self, res: Resource, old: dict[str, Any], incoming: dict[str, Any], sub: str | None) -> dict[str, Any]:
        """A write to /status changes only status; a write to the main resource never changes status."""
        new = copy.deepcopy(incoming)
        if not res.status:
            return new
        if sub == "status":
            out = copy.deepcopy(old)
            if "status" in new:
                out["status"] = new["status"]
            else:
                out.pop("status", None)
            return out
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
        return new

    def _commit_update(self, res: Resource, key: tuple, old: dict[str, Any], new: dict[str, Any], manager: str,
                       sub: str | None, query: dict[str, str]):
        dry_run = self._check_dry_run(query)
        warnings: list[str] = []
        new.setdefault("metadata", {})
        new["metadata"]["name"] = old["metadata"]["name"]
        if res.namespaced:
            new["metadata"]["namespace"] = old["metadata"]["namespace"]
        incoming_mf = new["metadata"].pop("managedFields", None)
        new = self._prepare(res, new, old, query, warnings)
        entries = self._entries(old)
        if incoming_mf is not None and (incoming_mf == [] or incoming_mf == [{}]):
            entries = []  # merge patch / PUT with managedFields [] or [{}] strips them (19)
        replaced = sub is None and bool(incoming_mf) and isinstance(incoming_mf, list) and incoming_mf not in ([{}], entries)
        if replaced:
            entries = _sort_entries(copy.deepcopy(incoming_mf))  # assumed: decodeLiveOrNew takes the request's
        stripped = incoming_mf is not None and (not entries and bool(self._entries(old)) or replaced)
        entries, changed = self._record_update(res, old, new, manager, sub, entries)
        new["metadata"]["managedFields"] = entries
        self._allocate(res, new, old)
        if not changed and not stripped and _same(old, new):
            return 200, copy.deepcopy(old), self._warning_headers(warnings)
        if not entries:
            new["metadata"].pop("managedFields", None)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        out = self._finish_write(res, key, old, new, dry_run)
        return 200, out, self._warning_headers(warnings)

    def _write_scale(self, res: Resource, key: tuple, old: dict[str, Any], scale: Any, manager: str, query: dict[str, str]):
        """A write to /scale (a merge patch, 04; a PUT of a Scale, 40): only spec.replicas changes, and the
        writer's entry is an Update of subresource scale."""
        replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
        target = copy.deepcopy(old)
        if replicas is not None:
            target["spec"]["replicas"] = replicas
        code, obj, headers = self._commit_update(res, key, old, target, manager, "scale", query)
        return code, self._scale_view(res, obj), headers

    def _scale_view(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        selector = ",".join(f"{k}={v}" for k, v in sorted((obj["spec"]["selector"].get("matchLabels") or {}).items()))
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
                "spec": {"replicas": obj["spec"].get("replicas", 1)},
                "status": {"replicas": obj.get("status", {}).get("replicas", 0), "selector": selector}}
