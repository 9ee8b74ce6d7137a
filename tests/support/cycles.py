"""The recorded cycles: every output of one ``reconcile --once`` cycle, for each cluster state and
each mode, in a form that can be compared byte for byte with the one recorded in
tests/golden/cycles/ (tests/reconciler/orchestration/test_recorded_cycles.py compares,
``python -m tests.record_cycles`` records).

A cell is a cluster state (``STATES``: what kubectl, Argo CD, an HPA or the Go operator left in the
fake API server, and the faults it answers with) run under a mode (``MODES``: the command's options);
some states also run in the event-driven mode (``EVENT_DRIVEN``: one worker until idle, a person's
``kubectl scale``, idle again; its writes kept, not its reads, which follow the informers' timing;
and its ``/metrics`` scrape, values that follow the timing as ``<varies>``).
The cycle runs in-process as ``reconcile --once`` runs it (loop.run_once), and the cell records what
a user can see of it:

- the exit code and the log lines (the cycle's line, each CR's, warnings; the lines of one CR sorted,
  as its Deployment and companions are written on a pool);
- the requests the reconciler sent (method, path, query, content type, body), in order per object:
  the companions are written beside the Deployment on a pool, so only each object's own order is fixed;
- every object of the cluster afterwards: the CRs' status, the Events (type, reason, message, count),
  the Deployments, Services and budgets (labels, annotations, owners, spec, and who manages which
  part: managedFields' manager, operation and subresource).

Normalised, because they differ from run to run and nobody reads them as a result: resourceVersion
and uid (each kept as ``<resourceVersion>``, ``<uid>``: a field dropped still shows), generated Event
names, and timestamps (each replaced by ``<time>``, a JSON log line's too); durations in the log (``<seconds>``). Nothing
else is: a changed word, count, field, request or exit code is a difference.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from memcached_gitops.reconciler.orchestration.loop import run_once
from memcached_gitops.render import render
from memcached_gitops.schemas import Validator, load_crd

from fakeapi.server import DeploymentController, FakeAPIServer, Fault
from tests.support.fakecluster import (
    CR_PATH,
    DEP_PATH,
    annotate,
    argocd_applies,
    argocd_applies_service,
    call,
    create_hpa,
    foreign_service,
    hpa_scales,
    make_cr,
    patch,
    post,
    reconciler_for,
    scale,
    write_kubeconfig,
)
from tests.support.go_operator import go_operator_deployment, seed_000_labels, seed_002_labels

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "cycles"
MERGE, JSON_PATCH, STRATEGIC = "application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"
SERVICE = "/api/v1/namespaces/{ns}/services/{name}"
BUDGET = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
SECONDS, SECONDS_SAID = re.compile(r"\b\d+(\.\d+)?( ?)s\b"), r"<seconds>\2s"
CR_LINE = re.compile(r"^[A-Z]+ ([a-z0-9-]+/[a-z0-9.-]+): ")
OURS = "memcached-gitops/"  # the User-Agent of every request of the reconciler's (api.py USER_AGENT, a replica's)
VOLATILE = {"resourceVersion", "uid"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
LOG_TIME = re.compile(r'"time": "[^"]*"')  # a JSON log line's time (the command logs JSON when not on a terminal)
EVENT_NAME = re.compile(r"\.[0-9a-f]{16}$")  # client-go's name of an Event: the object's and a hex time


def _ours(api: FakeAPIServer, name: str = "a", size: int = 1, ns: str = "default") -> None:
    """A CR reconciled once already: its Deployment and companions ours, as a cycle left them."""
    make_cr(api, name, ns, size=size)
    reconciler_for(api).run_cycle()


def _scaled(api: FakeAPIServer) -> None:
    _ours(api)
    scale(api, "a", 3)


def _image_set(api: FakeAPIServer) -> None:
    _ours(api)
    body = {"spec": {"template": {"spec": {"containers": [{"image": "memcached:1.5", "name": "memcached"}]}}}}
    patch(api, DEP_PATH.format(ns="default", name="a"), body, STRATEGIC, "?fieldManager=kubectl-set")


def _port_patched(api: FakeAPIServer) -> None:
    _ours(api)
    ops = [{"op": "replace", "path": "/spec/template/spec/containers/0/ports/0/containerPort", "value": 9999}]
    patch(api, DEP_PATH.format(ns="default", name="a"), ops, JSON_PATCH, "?fieldManager=kubectl-patch")


def _env_added(api: FakeAPIServer) -> None:
    """kubectl set env: an item of its own in a keyed list of ours."""
    _ours(api)
    body = {"spec": {"template": {"spec": {"containers": [{"name": "memcached", "env": [{"name": "DEBUG", "value": "1"}]}]}}}}
    patch(api, DEP_PATH.format(ns="default", name="a"), body, STRATEGIC, "?fieldManager=kubectl-set")


def _service_port_edited(api: FakeAPIServer) -> None:
    _ours(api, size=2)
    ops = [{"op": "replace", "path": "/spec/ports/0/port", "value": 11311}]
    patch(api, SERVICE.format(ns="default", name="a-memcached"), ops, JSON_PATCH, "?fieldManager=kubectl-edit")


def _service_labelled(api: FakeAPIServer) -> None:
    _ours(api)
    patch(api, SERVICE.format(ns="default", name="a-memcached"), {"metadata": {"labels": {"team": "x"}}}, MERGE,
          "?fieldManager=kubectl-label")


def _ignored_replicas(api: FakeAPIServer) -> None:
    _ours(api)
    annotate(api, "a", "spec.replicas")
    scale(api, "a", 4)


def _argocd(api: FakeAPIServer) -> None:
    argocd_applies(api, "a", size=2)
    argocd_applies_service(api, "a")
    make_cr(api, "a", size=3)


def _go_operator(api: FakeAPIServer) -> None:
    cr = make_cr(api, "a", size=3)
    go_operator_deployment(api, cr, seed_000_labels("a"))


def _hpa(api: FakeAPIServer) -> None:
    _ours(api, size=2)
    create_hpa(api, "a", min_replicas=2)
    hpa_scales(api, 4)


def _foreign_service(api: FakeAPIServer) -> None:
    foreign_service(api, "a-memcached")
    make_cr(api, "a", size=2)


def _two_namespaces(api: FakeAPIServer) -> None:
    make_cr(api, "a", "default", size=1)
    make_cr(api, "b", "shop", size=2)


def _same_name_twice(api: FakeAPIServer) -> None:
    """A CR ``a`` in two namespaces, both reconciled and their Pods running; shop's replicas left to a
    person (ignore-paths) and scaled by them, default's to an HPA: each CR's nodes, ignored fields and
    HPA are its namespace's."""
    _ours(api, "a", size=1)
    _ours(api, "a", size=2, ns="shop")
    DeploymentController(api).sync(available=True)
    annotate(api, "a", "/spec/replicas", ns="shop")
    scale(api, "a", 3, ns="shop")
    create_hpa(api, "a", min_replicas=1)  # default's replicas are its HPA's, in the first namespace read
    hpa_scales(api, 2)


def _scaled_down_to_one(api: FakeAPIServer) -> None:
    """Git's size goes from 2 to 1 after a person already scaled the Deployment to 1: the budget no
    longer wanted is the cycle's one write."""
    _ours(api, size=2)
    scale(api, "a", 1)
    patch(api, CR_PATH.format(ns="default") + "/a", {"spec": {"size": 1}}, MERGE, "?fieldManager=kubectl-edit")


def _taken_over_then_scaled(api: FakeAPIServer) -> None:
    """Seed 002's Go operator Deployment taken over with --adopt (its selector kept), then scaled by
    kubectl: the companions select by the kept selector, so only replicas drift."""
    cr = make_cr(api, "a", size=2)
    go_operator_deployment(api, cr, seed_002_labels("a"))
    DeploymentController(api).sync(available=True)
    reconciler_for(api, adopt=True).run_cycle()
    DeploymentController(api).sync(available=True)
    scale(api, "a", 3)


def _deployment_of_another_controller(api: FakeAPIServer) -> None:
    """A Deployment in the CR's name, with the CR's labels, controlled by another operator's object:
    not ours, whatever its labels say."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "a", "namespace": "default"},
          "spec": {"size": 1}}
    rendered = render(Validator(load_crd()).validate(cr).obj)[0]
    rendered["metadata"]["ownerReferences"] = [{"apiVersion": "cache.other.io/v1", "kind": "MemcachedCluster", "name": "a",
                                                "uid": "0b6c2f1e-3d4a-4e5f-8a9b-1c2d3e4f5a6b", "controller": True}]
    post(api, "/apis/apps/v1/namespaces/default/deployments", rendered, "?fieldManager=other-operator")
    make_cr(api, "a", size=1)


def _persons_service_beside_ours(api: FakeAPIServer) -> None:
    """The Deployment and budget ours and in sync; the Service deleted and made again by a person:
    theirs, left alone, the one thing that differs from Git."""
    _ours(api, size=2)
    call(api, "DELETE", SERVICE.format(ns="default", name="a-memcached"))
    foreign_service(api, "a-memcached")


def _deleting(api: FakeAPIServer) -> None:
    """A CR deleted while a finalizer of another controller holds it: deletionTimestamp set."""
    make_cr(api, "a", size=1)
    patch(api, CR_PATH.format(ns="default") + "/a", {"metadata": {"finalizers": ["example.com/hold"]}}, MERGE)
    code, _, body = api.handle("DELETE", CR_PATH.format(ns="default") + "/a", {"User-Agent": "kubectl/v1.37.1"}, b"")
    assert code in (200, 202), body


def _service_edited_twice(api: FakeAPIServer) -> None:
    """Two fields of the Service changed in one edit: its port and one of our labels."""
    _ours(api, size=2)
    ops = [{"op": "replace", "path": "/spec/ports/0/port", "value": 11311},
           {"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1component", "value": "db"}]
    patch(api, SERVICE.format(ns="default", name="a-memcached"), ops, JSON_PATCH, "?fieldManager=kubectl-edit")


def _companions_ignored(api: FakeAPIServer) -> None:
    """The CR's annotation leaves the Service's ports and the budget's maxUnavailable to others, who
    changed both."""
    _ours(api, size=2)
    annotate(api, "a", "Service:/spec/ports, PodDisruptionBudget:/spec/maxUnavailable")
    patch(api, SERVICE.format(ns="default", name="a-memcached"), [{"op": "replace", "path": "/spec/ports/0/port", "value": 11311}],
          JSON_PATCH, "?fieldManager=kubectl-edit")
    patch(api, BUDGET.format(ns="default", name="a-memcached"), [{"op": "replace", "path": "/spec/maxUnavailable", "value": 2}],
          JSON_PATCH, "?fieldManager=kubectl-edit")


def _service_partly_ignored(api: FakeAPIServer) -> None:
    """The CR leaves the Service's ports to others; a person changed the port and one of our labels:
    the label is corrected, the port kept."""
    _ours(api, size=2)
    annotate(api, "a", "Service:/spec/ports")
    ops = [{"op": "replace", "path": "/spec/ports/0/port", "value": 11311},
           {"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1component", "value": "db"}]
    patch(api, SERVICE.format(ns="default", name="a-memcached"), ops, JSON_PATCH, "?fieldManager=kubectl-edit")


def _foreign_companions(api: FakeAPIServer) -> None:
    """A person's Service and budget hold both names before the CR is made."""
    foreign_service(api, "a-memcached")
    post(api, "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
         {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "a-memcached", "namespace": "default"},
          "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}}}, "?fieldManager=someone")
    make_cr(api, "a", size=2)


def _foreign_deployment(api: FakeAPIServer) -> None:
    """A person's Deployment holds the CR's name: not ours, not our labels."""
    post(api, "/apis/apps/v1/namespaces/default/deployments",
         {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "a"}},
                   "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}},
         "?fieldManager=kubectl-create")
    make_cr(api, "a", size=2)


def _foreign_pod(api: FakeAPIServer) -> None:
    """A Pod of someone else's carries the labels the new CR's selector selects: its Service and
    budget would send clients to, or count, that Pod."""
    labels = {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a"}
    post(api, "/api/v1/namespaces/default/pods",
         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "namespace": "default", "labels": labels},
          "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}, "?fieldManager=kubectl-run")
    make_cr(api, "a", size=2)


def _faulted(method: str, path: str, status: int, times: int = 10) -> Callable[[FakeAPIServer], None]:
    def state(api: FakeAPIServer) -> None:
        _scaled(api)
        api.faults.append(Fault(method=method, path_contains=path, status=status, times=times))
    return state


def _new(api: FakeAPIServer) -> None:
    make_cr(api, "a", size=2)


#: the cluster states, each named for what a person or a tool did before the cycle
STATES: dict[str, Callable[[FakeAPIServer], None]] = {
    "new-cr": _new,
    "in-sync": _ours,
    "scaled-by-kubectl": _scaled,
    "image-set-by-kubectl": _image_set,
    "port-json-patched": _port_patched,
    "env-added-by-kubectl": _env_added,
    "service-port-edited": _service_port_edited,
    "service-labelled": _service_labelled,
    "replicas-ignored-by-annotation": _ignored_replicas,
    "applied-by-argocd": _argocd,
    "left-by-go-operator": _go_operator,
    "scaled-by-hpa": _hpa,
    "foreign-service": _foreign_service,
    "service-edited-twice": _service_edited_twice,
    "companions-ignored-by-annotation": _companions_ignored,
    "service-partly-ignored": _service_partly_ignored,
    "foreign-service-and-budget": _foreign_companions,
    "foreign-pod-shares-the-selector": _foreign_pod,
    "foreign-deployment": _foreign_deployment,
    "persons-service-beside-ours": _persons_service_beside_ours,
    "two-namespaces": _two_namespaces,
    "same-name-in-two-namespaces": _same_name_twice,
    "scaled-down-to-one-in-git": _scaled_down_to_one,
    "go-operator-taken-over-then-scaled": _taken_over_then_scaled,
    "deployment-of-another-controller": _deployment_of_another_controller,
    "cr-being-deleted": _deleting,
    "list-forbidden": _faulted("GET", "/memcacheds", 403),
    "apply-refused-422": _faulted("PATCH", "/deployments/a", 422),
    "apply-conflict-409": _faulted("PATCH", "/deployments/a", 409, times=1),
    "status-write-500": _faulted("PATCH", "/memcacheds/a/status", 500),
    "event-post-403": _faulted("POST", "/events", 403),
    "autoscalers-forbidden": _faulted("GET", "/horizontalpodautoscalers", 403),
    "autoscalers-500": _faulted("GET", "/horizontalpodautoscalers", 500),
    "autoscalers-not-served": _faulted("GET", "/horizontalpodautoscalers", 404),
    "deployment-read-500": _faulted("GET", "/deployments/a", 500),
    "budget-read-500": _faulted("GET", "/poddisruptionbudgets/a-memcached", 500),
}

#: the modes: the options of ``reconcile --once`` each cell runs under
MODES: dict[str, dict[str, Any]] = {
    "once": {},
    "dry-run": {"dry_run": True},
    "detect-only": {"detect_only": True},
    "adopt": {"adopt": True},
    "field-manager-and-image": {"field_manager": "team-cache", "image": "memcached:1.6.99"},
    "namespace-shop": {"namespaces": ("shop",)},
}
#: the states also run in the event-driven mode (not those a Deployment of another's is observed in:
#: whether the observation of a change is logged again depends on when the event comes)
EVENT_DRIVEN = ("new-cr", "scaled-by-kubectl", "service-port-edited", "scaled-by-hpa", "foreign-service", "two-namespaces",
                "cr-being-deleted")
#: the states ``diff`` is run on
DIFFED = ("new-cr", "in-sync", "scaled-by-kubectl", "port-json-patched", "service-port-edited", "replicas-ignored-by-annotation",
          "service-edited-twice", "companions-ignored-by-annotation", "foreign-service-and-budget", "foreign-deployment",
          "autoscalers-forbidden", "autoscalers-500", "deployment-read-500",
          "applied-by-argocd", "left-by-go-operator", "scaled-by-hpa", "two-namespaces", "list-forbidden",
          "same-name-in-two-namespaces", "scaled-down-to-one-in-git", "go-operator-taken-over-then-scaled",
          "deployment-of-another-controller", "budget-read-500", "persons-service-beside-ours", "autoscalers-not-served",
          "service-partly-ignored", "image-set-by-kubectl", "env-added-by-kubectl", "service-labelled", "foreign-service",
          "foreign-pod-shares-the-selector")
#: the modes beyond the three every state runs under, and the states they run on
EXTRA_MODES: dict[str, tuple[str, ...]] = {
    "adopt": ("applied-by-argocd", "left-by-go-operator", "foreign-service", "new-cr", "scaled-by-kubectl"),
    "field-manager-and-image": ("new-cr", "scaled-by-kubectl", "applied-by-argocd", "left-by-go-operator", "scaled-by-hpa",
                                "env-added-by-kubectl"),
    "namespace-shop": ("two-namespaces",),
}


class _Said(logging.Handler):
    """The product's log lines, as ``LEVEL message``."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        # a watch reopened because the machine was too busy to read it within its silence limit (31 s here) says
        # nothing of the cell: left out, as the other things that differ from run to run
        if record.name.startswith("memcached_gitops") and "the watch went silent" not in record.getMessage():
            self.lines.append(f"{record.levelname} {UUID.sub('<uid>', SECONDS.sub(SECONDS_SAID, record.getMessage()))}")


def scrub(value: Any) -> Any:
    """``value`` with what differs from run to run replaced (see the module's docstring); managedFields
    as ``manager operation [subresource]: N fields`` (N the leaves of fieldsV1: a field more or less in
    an apply changes it)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in VOLATILE:  # kept as a mark: a field dropped from a request or an object shows
                out[key] = f"<{key}>"
                continue
            out[UUID.sub("<uid>", key)] = [_managed(m) for m in item] if key == "managedFields" else scrub(item)
        return out
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str) and TIME.match(value):
        return "<time>"
    if isinstance(value, str):
        return UUID.sub("<uid>", EVENT_NAME.sub(".<id>", value))
    return value


def _managed(entry: dict[str, Any]) -> str:
    def leaves(node: Any) -> int:
        return sum(leaves(v) for v in node.values()) if isinstance(node, dict) and node else 1
    where = f" {entry['subresource']}" if entry.get("subresource") else ""
    return f"{entry.get('manager')} {entry.get('operation')}{where}: {leaves(entry.get('fieldsV1', {}))} fields"


def flatten(value: Any, path: str = "") -> dict[str, str]:
    """``{".spec.replicas": "3", ...}``: each leaf as JSON, by its path (list items by index)."""
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items() for k, v in flatten(item, f"{path}.{key}").items()}
    if isinstance(value, list) and value:
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{path}[{i}]").items()}
    return {path: json.dumps(value, sort_keys=True)}


def _request(r: Any) -> str:
    """A request in one line: method, path, query, content type, status, and its body (inline when
    short; else its size and digest: what it did shows in the cluster's changes)."""
    query = "&".join(f"{k}={v}" for k, v in sorted(r.query.items()) if k != "resourceVersion")
    line = f"{r.method} {r.path}" + (f"?{query}" if query else "") + f" -> {r.status}"
    if r.body:
        body = json.dumps(scrub(json.loads(r.body)), sort_keys=True, separators=(",", ":"))
        line += f" [{r.content_type}] " + (body if len(body) <= 1200 else
                                            f"<{len(body)} bytes, sha256 {hashlib.sha256(body.encode()).hexdigest()[:16]}>")
    return line


def _requests(api: FakeAPIServer, start: int) -> dict[str, list[str]]:
    """The reconciler's requests after ``start``, by object (a collection's path for a LIST or an
    Event's POST), each object's in the order sent."""
    by_path: dict[str, list[str]] = {}
    for r in api.log[start:]:
        if r.user_agent.startswith(OURS):
            by_path.setdefault(r.path, []).append(_request(r))
    return dict(sorted(by_path.items()))


def snapshot(api: FakeAPIServer) -> dict[str, dict[str, str]]:
    """Every object of the cluster but namespaces, Leases and CRDs, flattened, by ``plural/ns/name``;
    the Events as a person reads them (``kubectl get events``), one line each."""
    found: dict[str, dict[str, str]] = {}
    with api.lock:
        held = sorted(api.objects.items())
    for (_, plural, ns, name), obj in held:
        if plural in ("namespaces", "leases", "customresourcedefinitions"):
            continue
        if plural == "events":
            line = (f"{obj.get('type')} {obj.get('reason')} {obj['involvedObject'].get('kind')}/{obj['involvedObject'].get('name')}"
                    f" x{obj.get('count', 1)}: {obj.get('message')}")
            found.setdefault(f"events/{ns}", {})[scrub(line)] = ""
            continue
        found[f"{plural}/{ns}/{name}"] = flatten(scrub({k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}))
    return found


def changes(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """What the cycle changed, by object: ``+ path: value`` added, ``- path: value`` removed,
    ``~ path: old -> new``; an Event as ``+ line``."""
    out: dict[str, list[str]] = {}
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, {}), after.get(key, {})
        if key.startswith("events/"):
            said = [f"+ {line}" for line in new if line not in old]
        else:
            said = [f"- {p}: {old[p]}" if p not in new else f"+ {p}: {new[p]}" if p not in old else f"~ {p}: {old[p]} -> {new[p]}"
                    for p in sorted(set(old) | set(new)) if old.get(p) != new.get(p)]
        if said:
            out[key] = said
    return out


def _by_cr(lines: list[str]) -> list[str]:
    """The log in order, but the lines of one CR (``LEVEL ns/name: ...``) together, sorted, where its
    first line was: its Deployment's and its companions' lines come from writes on a pool."""
    groups: dict[str, list[str]] = {}
    out: list[str | list[str]] = []
    for line in lines:
        cr = CR_LINE.match(line)
        if cr is None:
            out.append(line)
        elif cr[1] in groups:
            groups[cr[1]].append(line)
        else:
            groups[cr[1]] = [line]
            out.append(groups[cr[1]])
    return [said for item in out for said in (sorted(item) if isinstance(item, list) else [item])]


@contextlib.contextmanager
def _said() -> Iterator[_Said]:
    """The product's log lines at INFO while the block runs."""
    said, logger = _Said(), logging.getLogger("memcached_gitops")
    level = logger.level
    logger.addHandler(said)
    logger.setLevel(logging.INFO)
    try:
        yield said
    finally:
        logger.removeHandler(said)
        logger.setLevel(level)


def run_cell(state: str, mode: str) -> dict[str, Any]:
    """One cell: the state made, one cycle run under the mode, everything it showed."""
    with FakeAPIServer(namespaces=("default", "shop")) as api:
        STATES[state](api)
        start, before = len(api.log), snapshot(api)
        with _said() as said:
            code = run_once(reconciler_for(api, **MODES[mode]))
        return {"mode": mode, "exit": code, "log": _by_cr(said.lines), "requests": _requests(api, start),
                "changes": changes(before, snapshot(api))}


def run_event_driven(state: str) -> dict[str, Any]:
    """The event-driven mode (one worker, no Lease) on the same state: started, left until no write
    has come for a while, then a person scales the Deployment (an event the watch brings), left
    again. Only the writes are kept of its requests: its reads follow the informers' timing."""
    from memcached_gitops.reconciler.orchestration.controller import Settings

    from tests.support.controller import running

    with FakeAPIServer(namespaces=("default", "shop")) as api:
        STATES[state](api)
        start, before = len(api.log), snapshot(api)
        with _said() as said, running(api, settings=Settings(workers=1, resync=3600, watch_timeout=30, silence_grace=1)) as controller:
            _idle(api, controller)
            if api.get("apps", "deployments", "default", "a") is not None:
                scale(api, "a", 5)
                _idle(api, controller)
            exposition = controller.metrics.render().decode()
            controller.stop.set()
        writes = {path: [line for line in lines if not line.startswith("GET ")] for path, lines in _requests(api, start).items()}
        return {"mode": "event-driven", "log": _by_cr([line for line in said.lines if CR_LINE.match(line)]),
                "writes": {path: lines for path, lines in writes.items() if lines and "/leases/" not in path},
                "changes": changes(before, snapshot(api)), "metrics": metrics(exposition, api.url)}


#: samples whose value follows the timing of the run, kept as ``<varies>``: the reads and the
#: reconciles, which follow the informers' and the queue's timing (two events before a worker takes
#: the key are one reconcile), and the gauges of durations. Every other value is a count of what was
#: done, or a state. Durations' buckets and sums and the series' creation times are left out (their
#: bounds: test_modes.py).
VARYING = re.compile(r"^(memcached_gitops_watch_events_total|workqueue_adds_total|controller_runtime_reconcile_total"
                     r"|(memcached_gitops_work_duration|controller_runtime_reconcile_time|workqueue_(queue|work)_duration)_seconds_count"
                     r"|workqueue_(unfinished_work|longest_running_processor)_seconds)\b"
                     r'|^rest_client_requests_total\{.*method="GET"|^memcached_gitops_api_requests_total\{.*verb="(get|list|watch)"')
LEFT_OUT = re.compile(r"^[^{ ]*(_created|_seconds_bucket|_seconds_sum)\b")


def metrics(exposition: str, url: str) -> list[str]:
    """The scrape's lines: HELP and TYPE as they are, each family's samples sorted (the registry
    lists label sets in the order they were first seen) with their value, or ``<varies>``
    (``VARYING``); the fake API server's address as ``<host>``."""
    out: list[str] = []
    samples: list[str] = []
    for line in exposition.replace(url.split("//", 1)[1], "<host>").splitlines() + ["# end"]:
        if line.startswith("#"):
            out += sorted(samples)
            samples = []
            out.append(line)
        elif line and not LEFT_OUT.match(line):
            series, _, value = line.rpartition(" ")
            samples.append(f"{series} {'<varies>' if VARYING.search(series) else value}")
    return out[:-1]


def _idle(api: FakeAPIServer, controller: Any, quiet: float = 0.3, timeout: float = 15.0) -> None:
    """Until the work queue has held nothing (waiting, in a worker, or delayed) and no write has
    come, for ``quiet`` seconds: the events of the last writes have been served."""
    deadline, since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        held = controller.queue.pending()
        last = max((r.received for r in api.writes() if "/leases/" not in r.path), default=0.0)
        if held.queued or held.processing or held.delayed or time.monotonic() - last < quiet:
            since = None
        elif since is None:
            since = time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.02)
    raise AssertionError(f"the controller never went idle: {controller.queue.pending()}")


def run_diff(state: str, in_process: bool = False) -> dict[str, Any]:
    """``memcached-gitops diff`` (the command, in a process of its own, as a person runs it in a pull
    request) of each CR of the state, as its file in Git says it: the CR's spec as the cluster holds it,
    its namespace left out when it is ``default`` (where ``--namespace`` puts a CR that names none).
    ``in_process`` runs the same command in this process (typer's runner): the same cell, where a
    mutated ``diff.py`` is the one that runs."""
    with FakeAPIServer(namespaces=("default", "shop")) as api, tempfile.TemporaryDirectory() as tmp:
        STATES[state](api)
        start = len(api.log)
        with api.lock:
            crs = [obj for (_, plural, _, _), obj in sorted(api.objects.items()) if plural == "memcacheds"]
        texts = [yaml.safe_dump({"apiVersion": cr["apiVersion"], "kind": cr["kind"], "spec": cr["spec"], "metadata": {
            k: cr["metadata"][k] for k in ("name", "namespace", "annotations") if k in cr["metadata"]
            and (k, cr["metadata"][k]) != ("namespace", "default")}}) for cr in crs]
        (Path(tmp) / "crs.yaml").write_text("---\n".join(texts))
        kubeconfig = write_kubeconfig(Path(tmp), api.url)
        args = ["diff", "--kubeconfig", str(kubeconfig), "crs.yaml"]
        code, stdout, stderr = (_in_process if in_process else _in_subprocess)(args, tmp)
        return {"mode": "diff", "exit": code, "stdout": UUID.sub("<uid>", stdout),
                "stderr": SECONDS.sub(SECONDS_SAID, LOG_TIME.sub('"time": "<time>"', UUID.sub("<uid>", stderr.replace(tmp, "<tmp>")))),
                "requests": _requests(api, start)}


def _in_subprocess(args: list[str], cwd: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "100"})
    return proc.returncode, proc.stdout, proc.stderr


def _in_process(args: list[str], cwd: str) -> tuple[int, str, str]:
    """The command run by typer's test runner in ``cwd``; the root logger (which the command
    configures) and the working directory are put back as they were."""
    from typer.testing import CliRunner

    from memcached_gitops.cli import app

    root = logging.getLogger()
    handlers, level, here = root.handlers[:], root.level, os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    finally:
        os.chdir(here)
        root.handlers[:], root.level = handlers, level
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def record(state: str) -> str:
    """The golden text of one state: each of its modes' cell."""
    cells = [run_cell(state, mode) for mode in modes_of(state)]
    if state in EVENT_DRIVEN:
        cells.append(run_event_driven(state))
    if state in DIFFED:
        cells.append(run_diff(state))
    return yaml.safe_dump({"state": state, "cells": cells}, sort_keys=False, width=200, allow_unicode=True)


def modes_of(state: str) -> list[str]:
    """Every state under the three ways a cycle can go (write, dry run, detect only); the other modes
    where the state gives them something to decide."""
    return ["once", "dry-run", "detect-only"] + [m for m, states in EXTRA_MODES.items() if state in states]
