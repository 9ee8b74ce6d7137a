"""Replay every exchange recorded from kube-apiserver v1.36.2 against the fake API server.

Each recorded request is sent over HTTP, in order, with the recorded User-Agent and content type.
The fake's answer must have the recorded status code, the recorded Warning headers, and the same
body once the values that differ on every run are scrubbed: uids, resourceVersions, timestamps
and continue tokens are compared by presence, managedFields by (manager, operation, apiVersion,
subresource, whether ``time`` is set, the leaf fields owned). Whether an object's
resourceVersion moved since the previous answer about it is compared too, since a no-op must not
write. Values a request takes from an earlier answer (a continue token, a resourceVersion, a uid,
a generated name) are taken from the fake's own earlier answers.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from fakeapi import fields as F
from fakeapi.server import FakeAPIServer
from tests.conftest import TRANSCRIPTS

# Transcripts the fake does not replay yet (the Deployment controller's statuses, garbage collection),
# or should not: 38 records the validator's rules, and the fake validates Memcacheds with the validator,
# so test_validator.py replays its creates through the validator instead. A test below keeps the list
# honest about which recorded files are not replayed.
NOT_REPLAYED = {
    "35-deployment-controller-status", "36-garbage-collection", "38-validator-differential",
    # 43 records how quantities are stored; render/sizing.py follows it and tests/render/test_sizing.py replays
    # it through canonical_quantity (the fake serves no Pods)
    "43-resource-quantities",
}
FILES = sorted(p for p in TRANSCRIPTS.glob("[0-9][0-9]-*.json") if p.stem not in NOT_REPLAYED)
VOLATILE = {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "time", "firstTimestamp", "lastTimestamp",
            "lastUpdateTime", "renewTime" if False else "_none_"}
TOO_OLD = re.compile(r"too old resource version: \d+ \(\d+\)")  # resourceVersions, checked in test_fake_watch
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# Exchanges where the fake is known to answer differently, and why. Each stays an xfail (never a pass)
# so that a fix shows up as XPASS.
KNOWN_DIFFERENCES: dict[str, str] = {
    "00-crd-server-side-apply#0": "the recorded cluster already had the CRD (applied earlier by kubectl), so the apply "
    "answered 200 and added a manager without time; the fake starts empty and answers 201",
    "00-crd-server-side-apply#1": "same history: the recorded read-back shows kubectl's and kube-apiserver's entries, "
    "spec.conversion defaulted and the Established condition's messages, which the fake does not model for CRDs",
    "42-ssa-service-and-pdb#21": "the cluster IP the recorded server allocated (10.96.31.19) is not the fake's",
    "42-ssa-service-and-pdb#23": "the same allocated cluster IP, read back",
}


@dataclass
class Setup:
    """What a file's notes describe but did not record: who sent the requests, the Role's rules from
    a given exchange on, namespaces created by an administrator, the admission plugins switched on,
    and (in BEFORE_EXCHANGE) the writes the administrator made."""

    user: str
    namespaces: tuple[str, ...]
    roles: dict[int, list[dict[str, Any]]]
    owner_references_permission_enforcement: bool = False


def _rules(*grants: tuple[str, str, tuple[str, ...]]) -> list[dict[str, Any]]:
    return [{"apiGroups": [g], "resources": [r], "verbs": list(v)} for g, r, v in grants]


def _argocd_applies_mc_b(api: FakeAPIServer) -> None:
    """37's note: the administrator applied mc-b without ownerReferences as argocd-controller."""
    data = json.loads((TRANSCRIPTS / "37-ownerreferences-permission-enforcement.json").read_text())
    body = json.loads(data["exchanges"][4]["request"]["body"])
    del body["metadata"]["ownerReferences"]
    path = data["exchanges"][4]["request"]["path"] + "?fieldManager=argocd-controller&fieldValidation=Strict&force=false"
    rules, api.rbac_rules = api.rbac_rules, None
    code, _, answer = api.handle("PATCH", path, {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/apply-patch+yaml"},
                                 json.dumps(body).encode())
    api.rbac_rules = rules
    assert code == 201, answer


_REVIEWS_41 = (("authentication.k8s.io", "tokenreviews", ("create",)), ("authorization.k8s.io", "subjectaccessreviews", ("create",)))
_NS_41 = "tx41-reviews"


def _tokens_41(api: FakeAPIServer) -> None:
    """41's notes: ServiceAccounts reconciler, scraper and stranger, each with a token."""
    for sa in ("reconciler", "scraper", "stranger"):
        api.tokens[f"<token:{sa}>"] = {
            "username": f"system:serviceaccount:{_NS_41}:{sa}", "uid": str(uuid.uuid4()),
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{_NS_41}", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": ["<jti>"]}}


_DEPLOYMENTS_34 = ("apps", "deployments", ("get", "list", "patch"))
_DEPLOYMENTS_37 = ("apps", "deployments", ("get", "list", "patch", "create"))
_MEMCACHEDS_37 = ("cache.example.com", "memcacheds", ("list",))
SETUPS = {
    "34-rbac-apply-needs-create": Setup(
        "system:serviceaccount:tx34-rbac-rec2:reconciler", ("tx34-rbac-rec2",),
        {0: _rules(_DEPLOYMENTS_34), 2: _rules(_DEPLOYMENTS_34, ("apps", "deployments", ("create",))), 3: _rules(_DEPLOYMENTS_34)}),
    "37-ownerreferences-permission-enforcement": Setup(
        "system:serviceaccount:tx37-ownerref-permission:reconciler", ("tx37-ownerref-permission",),
        {0: _rules(_MEMCACHEDS_37, _DEPLOYMENTS_37),
         5: _rules(_MEMCACHEDS_37, _DEPLOYMENTS_37, ("apps", "deployments", ("delete",))),
         6: _rules(_MEMCACHEDS_37, _DEPLOYMENTS_37, ("apps", "deployments", ("delete",)),
                   ("cache.example.com", "memcacheds/finalizers", ("update",))),
         8: _rules(_MEMCACHEDS_37, _DEPLOYMENTS_37)},
        owner_references_permission_enforcement=True),
    "41-token-and-access-reviews": Setup(f"system:serviceaccount:{_NS_41}:reconciler", (_NS_41,), {0: [], 2: _rules(*_REVIEWS_41)}),
}


# Things that happened to the recorded cluster between two requests, done to the fake before the
# labelled exchange.
def _disruption_controller(generation: int) -> Callable[[FakeAPIServer], None]:
    """42's notes: the disruption controller wrote the budget's status between two requests."""

    def write(api: FakeAPIServer) -> None:
        condition = {"type": "DisruptionAllowed", "status": "False", "observedGeneration": generation,
                     "lastTransitionTime": "2026-11-27T01:37:58Z", "reason": "InsufficientPods", "message": ""}
        status = {"observedGeneration": generation, "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                  "expectedPods": 0, "conditions": [condition]}
        rules, api.rbac_rules = api.rbac_rules, None
        code, _, answer = api.handle("PATCH", "/apis/policy/v1/namespaces/tx42-companions/poddisruptionbudgets/mc-memcached/status",
                                     {"User-Agent": "kube-controller-manager/v1.36.2 (linux/amd64) kubernetes/$Format",
                                      "Content-Type": "application/merge-patch+json"}, json.dumps({"status": status}).encode())
        api.rbac_rules = rules
        assert code == 200, answer

    return write


BEFORE_EXCHANGE: dict[str, Callable[[FakeAPIServer], None]] = {
    # "etcd was compacted at revision 342 and the apiserver restarted" before the first WATCH (32's notes)
    "32-watch-errors-compacted-future-bad-selector#4": lambda api: api.compact(),
    "37-ownerreferences-permission-enforcement#4": _argocd_applies_mc_b,
    "41-token-and-access-reviews#0": _tokens_41,
    "42-ssa-service-and-pdb#11": _disruption_controller(1),
    "42-ssa-service-and-pdb#16": _disruption_controller(2),
    "42-ssa-service-and-pdb#17": _disruption_controller(3),
    "41-token-and-access-reviews#6": lambda api: api.grant_non_resource(
        f"system:serviceaccount:{_NS_41}:scraper", ("/metrics",), ("get",), "tx41-metrics-reader", "tx41-metrics-reader"),
}


def tutorial_crd() -> str:
    data = json.loads((TRANSCRIPTS / "00-crd-server-side-apply.json").read_text())
    return data["exchanges"][0]["request"]["body"]


def scrub(value: Any, mapping: dict[str, str]) -> Any:
    """Remove what differs on every run; keep presence."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "managedFields" and isinstance(v, list):
                # entry order follows timestamps of second granularity: not comparable across runs
                out[k] = sorted([
                    {"manager": e.get("manager"), "operation": e.get("operation"), "apiVersion": e.get("apiVersion"),
                     "subresource": e.get("subresource"), "time": "time" in e,
                     "fields": sorted(scrub(F.format_field_path(p), mapping) for p in F.leaves(F.from_fields_v1(e.get("fieldsV1", {}))))}
                    for e in v
                ], key=lambda e: (e["manager"], e["operation"], e["subresource"] or ""))
            elif k in VOLATILE and isinstance(v, (str, int)):
                out[k] = "<set>"
            elif k == "continue":
                out[k] = "<token>" if v else ""
            elif k == "storageVersionHash":
                out[k] = "<hash>"
            elif k == "causes" and isinstance(v, list):  # their order is not stable on a real server (06)
                out[k] = sorted((scrub(c, mapping) for c in v), key=lambda c: json.dumps(c, sort_keys=True))
            else:
                out[k] = scrub(v, mapping)
        return out
    if isinstance(value, list):
        return [scrub(v, mapping) for v in value]
    if isinstance(value, str):
        text = TOO_OLD.sub("too old resource version: <rv> (<rv>)", UUID.sub("<uid>", value))
        for recorded, fake in mapping.items():
            if fake in text and len(fake) > 4:
                text = text.replace(fake, recorded)
        return text
    return value


def learn(recorded: Any, fake: Any, mapping: dict[str, str], generated: bool = False) -> None:
    """Pair the run-specific values of a recorded answer with the fake's (same position); names
    only where the server generated them."""
    if isinstance(recorded, dict) and isinstance(fake, dict):
        for k, v in recorded.items():
            if k == "name" and "generateName" not in recorded and not generated:
                continue
            if k in ("uid", "resourceVersion", "continue", "name") and isinstance(v, str) and isinstance(fake.get(k), str):
                if v and v != fake[k]:
                    mapping[v] = fake[k]
            else:
                learn(v, fake.get(k), mapping, generated)
    elif isinstance(recorded, list) and isinstance(fake, list):
        for a, b in zip(recorded, fake, strict=False):
            learn(a, b, mapping, generated)


def substitute(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: substitute(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, mapping) for v in value]
    if isinstance(value, str):
        return mapping.get(value, value)
    return value


def substitute_text(text: str, mapping: dict[str, str]) -> str:
    for recorded, fake in mapping.items():
        if UUID.fullmatch(recorded):
            text = text.replace(recorded, fake)
        text = re.sub(rf"(resourceVersion: ['\"]?){re.escape(recorded)}(['\"]?)", rf"\g<1>{fake}\g<2>", text)
    return text


def object_key(path: str) -> str:
    parts = path.rstrip("/").split("/")
    return "/".join(parts[:-1] if parts[-1] in ("status", "scale") else parts)


def open_request(url: str, request: dict[str, Any], mapping: dict[str, str]) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """Send a recorded request, with the values it takes from earlier answers taken from the fake's."""
    path = "/".join(mapping.get(seg, seg) for seg in request["path"].split("/"))
    query = {k: mapping.get(v, v) for k, v in (request.get("query") or {}).items()}
    body = request.get("body")
    if isinstance(body, str):
        data = substitute_text(body, mapping).encode()
    elif body is None:
        data = None
    else:
        data = json.dumps(substitute(body, mapping)).encode()
    headers = {"User-Agent": request["user_agent"], "Accept": "application/json"}
    if request.get("content_type"):
        headers["Content-Type"] = request["content_type"]
    host = urlsplit(url)
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    conn.request(request["method"], path + ("?" + urlencode(query) if query else ""), body=data, headers=headers)
    return conn, conn.getresponse()


def send(url: str, request: dict[str, Any], mapping: dict[str, str]) -> tuple[int, Any, list[str]]:
    conn, resp = open_request(url, request, mapping)
    raw = resp.read().decode()
    warnings = [w.strip() for w in (resp.getheader("Warning") or "").split(", ") if w.strip()]
    conn.close()
    ctype = resp.getheader("Content-Type") or ""
    return resp.status, (json.loads(raw) if "json" in ctype else raw), warnings


def _cases():
    for path in FILES:
        yield pytest.param(path, id=path.stem)


def test_every_transcript_is_replayed_or_listed() -> None:
    recorded = {p.stem for p in TRANSCRIPTS.glob("[0-9][0-9]-*.json")}
    assert recorded == {p.stem for p in FILES} | NOT_REPLAYED
    assert not {p.stem for p in FILES} & NOT_REPLAYED


def test_known_differences_still_differ() -> None:
    """The list above is a statement of fact: an entry the fake now matches must be removed."""
    files = {label.split("#")[0] for label in KNOWN_DIFFERENCES}
    differing = set()
    for name in files:
        differing |= replay(TRANSCRIPTS / f"{name}.json")
    assert set(KNOWN_DIFFERENCES) <= differing


@pytest.mark.parametrize("path", list(_cases()))
def test_replay(path: Path) -> None:
    replay(path)


def replay(path: Path) -> set[str]:
    """Replay one file; fail on an unexpected difference; return the labels that differed."""
    data = json.loads(path.read_text())
    crds = [] if path.name.startswith("00-") else [tutorial_crd()]
    state = Replay(mapping={}, last_rv_recorded={}, last_rv_fake={}, failures=[], differing=set())
    setup = SETUPS.get(path.stem)
    extra = {"namespaces": ("default",) + setup.namespaces, "rbac_user": setup.user,
             "owner_references_permission_enforcement": setup.owner_references_permission_enforcement} if setup else {}
    with FakeAPIServer(crd_texts=crds, **{"namespaces": ("default",), **extra}) as api:
        for i, ex in enumerate(data["exchanges"]):
            if setup:
                api.rbac_rules = next(rules for at, rules in sorted(setup.roles.items(), reverse=True) if at <= i)
            label = f"{path.stem}#{i}"
            if label in BEFORE_EXCHANGE:
                BEFORE_EXCHANGE[label](api)
            if "stream" in ex["response"]:
                replay_watch(api.url, label, ex, state)
            else:
                status, body, warnings = send(api.url, ex["request"], state.mapping)
                state.check(label, ex, status, body, warnings)
    if state.failures:
        pytest.fail("\n\n".join(state.failures), pytrace=False)
    return state.differing


@dataclass
class Replay:
    """What one file's replay has learned and found so far."""

    mapping: dict[str, str]
    last_rv_recorded: dict[str, str]
    last_rv_fake: dict[str, str]
    failures: list[str]
    differing: set[str]

    def check(self, label: str, ex: dict[str, Any], status: int, body: Any, warnings: list[str]) -> None:
        """Compare one answer with the recorded one."""
        req, rec = ex["request"], ex["response"]
        mapping = self.mapping
        if isinstance(rec["body"], (dict, list)) and isinstance(body, (dict, list)):
            generated = isinstance(req.get("body"), dict) and "generateName" in (req["body"].get("metadata") or {})
            learn(rec["body"], body, mapping, generated)
        problems = []
        if status != rec["status"]:
            problems.append(f"status {status} != recorded {rec['status']}: {json.dumps(body)[:400]}")
        else:
            if sorted(warnings) != sorted(rec.get("warnings") or []):
                problems.append(f"warnings {warnings} != {rec.get('warnings')}")
            want, got = scrub(rec["body"], mapping), scrub(body, mapping)
            if want != got:
                problems.append("body differs:\n" + _diff(want, got))
            if isinstance(rec["body"], dict) and isinstance(body, dict) and "metadata" in rec["body"] and req["method"] != "DELETE":
                key = object_key(req["path"]) if req["method"] != "POST" else f"{req['path']}/{rec['body']['metadata'].get('name')}"
                rv_r, rv_f = rec["body"]["metadata"].get("resourceVersion"), body.get("metadata", {}).get("resourceVersion")
                if key in self.last_rv_recorded and rv_r is not None:
                    moved = (rv_r != self.last_rv_recorded[key], rv_f != self.last_rv_fake.get(key))
                    if moved[0] != moved[1]:
                        problems.append(f"resourceVersion moved: recorded {moved[0]}, fake {moved[1]}")
                if rv_r is not None:
                    self.last_rv_recorded[key], self.last_rv_fake[key] = rv_r, rv_f
        self.report(label, ex, problems)

    def report(self, label: str, ex: dict[str, Any], problems: list[str]) -> None:
        if problems:
            self.differing.add(label)
        if problems and label not in KNOWN_DIFFERENCES:
            req = ex["request"]
            self.failures.append(f"{label} {req['method']} {req['path']} ({(ex.get('note') or '')[:80]}):\n  " + "\n  ".join(problems))


def replay_watch(url: str, label: str, ex: dict[str, Any], state: Replay) -> None:
    """A WATCH (30-33): open the stream, send the writes recorded while it was open (each compared
    as an ordinary exchange), read the stream to its end, then compare the events in order (types
    and scrubbed objects), whether each event's resourceVersion repeats the previous one's, and how
    the stream ended: at once after an ERROR, else not before the recorded close."""
    req, rec = ex["request"], ex["response"]
    conn, resp = open_request(url, req, state.mapping)
    if resp.status != 200:  # a refused WATCH is an ordinary answer, recorded as the stream's one item (32)
        raw = resp.read().decode()
        conn.close()
        ctype = resp.getheader("Content-Type") or ""
        body = json.loads(raw) if "json" in ctype else raw
        state.check(label, {**ex, "response": {"status": rec["status"], "body": rec["stream"][0]["event"]}}, resp.status, body, [])
        return
    opened = time.monotonic()
    events: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: events.extend(json.loads(line) for line in resp), daemon=True)
    reader.start()
    for j, cex in enumerate(ex.get("concurrent_exchanges") or []):
        status, body, warnings = send(url, cex["request"], state.mapping)
        state.check(f"{label}.{j}", cex, status, body, warnings)
    timeout = float((req.get("query") or {}).get("timeoutSeconds") or 30)
    reader.join(timeout + 5)
    elapsed_ms = (time.monotonic() - opened) * 1000
    conn.close()
    recorded = [item["event"] for item in rec["stream"]]
    for want, got in zip(recorded, events, strict=False):
        learn(want["object"], got["object"], state.mapping)
    problems = []
    if reader.is_alive():
        problems.append(f"the stream did not end within timeoutSeconds ({timeout} s) + 5 s")
    want_events, got_events = scrub(recorded, state.mapping), scrub(events, state.mapping)
    if [e["type"] for e in want_events] != [e["type"] for e in got_events]:
        problems.append(f"event types {[e['type'] for e in got_events]} != recorded {[e['type'] for e in want_events]}")
    elif want_events != got_events:
        problems.append("events differ:\n" + _diff(want_events, got_events))
    if _rv_repeats(recorded) != _rv_repeats(events):
        problems.append(f"resourceVersion repeats {_rv_repeats(events)} != recorded {_rv_repeats(recorded)}")
    recorded_ms = int(re.search(r"after (\d+) ms", rec["end"]).group(1))
    if recorded and recorded[-1]["type"] == "ERROR" and elapsed_ms > 1000:
        problems.append(f"the stream stayed open {elapsed_ms:.0f} ms after its ERROR event")
    if elapsed_ms < recorded_ms - 500:
        problems.append(f"the stream ended after {elapsed_ms:.0f} ms, recorded {recorded_ms} ms")
    state.report(label, ex, problems)


def _rv_repeats(events: list[dict[str, Any]]) -> list[bool]:
    """For each event, whether its object's resourceVersion equals the previous event's (a BOOKMARK
    reporting the last change's resourceVersion, 30, 31)."""
    rvs = [(e.get("object") or {}).get("metadata", {}).get("resourceVersion") for e in events]
    return [i > 0 and rv is not None and rv == rvs[i - 1] for i, rv in enumerate(rvs)]


def _diff(want: Any, got: Any, where: str = "") -> str:
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got), key=str):
            if want.get(k, "<absent>") != got.get(k, "<absent>"):
                out.append(_diff(want.get(k, "<absent>"), got.get(k, "<absent>"), f"{where}.{k}"))
        return "\n".join(out)
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return "\n".join(_diff(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(want, got, strict=True)) if a != b)
    return f"    {where}: recorded {json.dumps(want)[:300]} | fake {json.dumps(got)[:300]}"
