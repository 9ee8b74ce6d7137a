"""Record transcript 42: server-side apply of the two companions the product renders beside the
Deployment (the headless Service and the PodDisruptionBudget), a person's edits between our
applies, the immutable clusterIP, a PDB switched from maxUnavailable to minAvailable, its DELETE,
and our apply (without force) over a foreign Service of the same name.

    python -m tests.record_companions KUBECONFIG    # writes tests/fixtures/apiserver-transcripts/42-*.json

Sent as tests/record_transcript.py's record() sends: urllib3 from the kubernetes client's own pool
(KubeAPI.connect), the recorded User-Agent, each answer kept whole (status and decoded body, and the
Warning headers when there are any). A request may take a value from an earlier answer (``{uid:N}``:
the uid in answer N); where it does, the exchange says so in request_uses_values_from_earlier_responses.
Opt-in, never in CI: it needs a disposable cluster with kube-controller-manager's disruption controller.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from memcached_gitops.reconciler.client.api import KubeAPI
from memcached_gitops.render import render

from tests.record_transcript import send

HERE = Path(__file__).parent / "fixtures" / "apiserver-transcripts"
STEM = "42-ssa-service-and-pdb"
NS = "tx42-companions"
PYTHON_UA = "OpenAPI-Generator/37.0.2/python"
OURS_UA = "memcached-gitops/0.1.0 (python)"
KUBECTL_UA = "kubectl/v1.37.1 (linux/amd64) kubernetes/$Format"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
FORCED = {"fieldManager": "memcached-gitops", "force": "true"}
EDIT = {"fieldManager": "kubectl-edit"}
CREATE = {"fieldManager": "kubectl-create", "fieldValidation": "Strict"}


def _ex(note: str, method: str, path: str, body: Any = None, query: dict[str, str] | None = None, ua: str = OURS_UA,
        ctype: str | None = "application/json", setup: bool = False, wait: float = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"note": note}
    if setup:
        out["setup"] = True
    out["request"] = {"method": method, "path": path, "query": query or {}, "content_type": ctype, "body": body, "user_agent": ua}
    if wait:
        out["_wait"] = wait  # seconds to sleep before sending; not written
    return out


def scenario(ns: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "mc", "namespace": ns},
          "spec": {"size": 2, "containerPort": 11211}}
    objs = render(cr)
    service = [o for o in objs if o["kind"] == "Service"][0]
    pdb = [o for o in objs if o["kind"] == "PodDisruptionBudget"][0]
    owner = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "mc", "uid": "{uid:1}",
             "controller": True, "blockOwnerDeletion": True}
    service["metadata"]["ownerReferences"] = [owner]
    pdb["metadata"]["ownerReferences"] = [owner]
    svc_name, pdb_name = service["metadata"]["name"], pdb["metadata"]["name"]
    svc_path = f"/api/v1/namespaces/{ns}/services/{svc_name}"
    pdb_path = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{pdb_name}"
    min_available = json.loads(json.dumps(pdb))
    del min_available["spec"]["maxUnavailable"]
    min_available["spec"]["minAvailable"] = 1
    their_ports = [*service["spec"]["ports"], {"name": "metrics", "port": 9150, "targetPort": 9150}]
    foreign = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc_name, "namespace": ns},
               "spec": {"type": "ClusterIP", "selector": {"app": "legacy-memcached"},
                        "ports": [{"name": "memcache", "port": 11211, "targetPort": 11211}]}}
    delete = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    meta = {
        "title": "Server-side apply of the headless Service and the PodDisruptionBudget",
        "what_it_shows": (
            "Our apply of the headless Service creates it (201) with one Apply entry; the server adds clusterIPs [None], "
            "ipFamilies, ipFamilyPolicy SingleStack, sessionAffinity None, internalTrafficPolicy Cluster and status.loadBalancer, "
            "owned by no manager. The identical apply is a no-op (resourceVersion unchanged). A person's merge patch of one "
            "selector key takes the whole (atomic) selector into a kubectl-edit Update entry; a merge patch adding a port "
            "gives kubectl-edit that port only. Our forced apply restores the selector and keeps the person's port (we do not "
            "own it), and kubectl-edit's entry stays with that port. Setting a clusterIP on the headless Service, or type "
            "NodePort, is 422. Our apply of the PodDisruptionBudget creates it (201, status with zero counts); the disruption "
            "controller writes observedGeneration and a DisruptionAllowed False / InsufficientPods condition within a second "
            "(a kube-controller-manager Update entry); identical applies are no-ops. A person's maxUnavailable 2 (generation "
            "bump) is put back to 1 by our forced apply, which removes kubectl-edit's entry. Our apply switching to "
            "minAvailable 1 and leaving maxUnavailable out is accepted: maxUnavailable is removed. DELETE with a DeleteOptions "
            "body (Background) answers 200 with a Success Status, then GET is 404. Our apply without force over a foreign "
            "Service of the same name that kubectl created is 409 with three conflicts (selector, the port's name and "
            "targetPort), none on clusterIP, which kubectl-create does not own; nothing is written."),
        "recorded_from": "kube-apiserver v1.36.2 (etcd 3.5.1, --service-cluster-ip-range=10.96.0.0/16) with kube-controller-manager "
                         "v1.36.2 (garbagecollector, deployment, replicaset, namespace, serviceaccount, resourcequota, "
                         "horizontal-pod-autoscaler, disruption and endpointslice controllers; no scheduler or kubelet), "
                         "the CRD of transcript 00 (schemas/memcached-crd.yaml, already installed)",
        "namespace": ns,
    }
    return meta, [
        _ex("setup: a fresh namespace for this transcript", "POST", "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, ua=PYTHON_UA, setup=True),
        _ex("the Memcached, created the way `kubectl create -f` does (its uid is the owner of both companions)", "POST",
            f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds", cr, CREATE, ua=KUBECTL_UA),
        # the Service
        _ex("apply of the rendered headless Service (controller reference to the Memcached); it does not exist yet", "PATCH",
            svc_path, json.dumps(service), FORCED, ctype=APPLY),
        _ex("the identical apply again", "PATCH", svc_path, json.dumps(service), FORCED, ctype=APPLY),
        _ex("GET the Service: what the server defaulted", "GET", svc_path),
        _ex("a person's drift: kubectl-style merge patch of spec.selector (one key changed)", "PATCH", svc_path,
            {"spec": {"selector": {"app.kubernetes.io/instance": "mc-canary"}}}, EDIT, ua=KUBECTL_UA, ctype=MERGE),
        _ex("a person's drift: a merge patch adding a port (a JSON merge patch replaces the whole list, so it carries ours too)",
            "PATCH", svc_path, {"spec": {"ports": their_ports}}, EDIT, ua=KUBECTL_UA, ctype=MERGE),
        _ex("our apply again (force): what it restores and what it leaves", "PATCH", svc_path, json.dumps(service), FORCED,
            ctype=APPLY),
        _ex("a person sets a clusterIP on the headless Service", "PATCH", svc_path, {"spec": {"clusterIP": "10.96.0.50"}}, EDIT,
            ua=KUBECTL_UA, ctype=MERGE),
        _ex("a person changes the headless Service's type to NodePort", "PATCH", svc_path, {"spec": {"type": "NodePort"}}, EDIT,
            ua=KUBECTL_UA, ctype=MERGE),
        # the PodDisruptionBudget
        _ex("apply of the rendered PodDisruptionBudget (maxUnavailable 1); it does not exist yet", "PATCH", pdb_path,
            json.dumps(pdb), FORCED, ctype=APPLY),
        _ex("the identical apply again", "PATCH", pdb_path, json.dumps(pdb), FORCED, ctype=APPLY),
        _ex("GET the PodDisruptionBudget at once", "GET", pdb_path),
        _ex("GET it again about 3 s later (the disruption controller has had time to write status; no Pods match)", "GET",
            pdb_path, wait=3),
        _ex("the identical apply once more, now that the controller's status write is in", "PATCH", pdb_path, json.dumps(pdb),
            FORCED, ctype=APPLY),
        _ex("a person's drift: merge patch maxUnavailable 2", "PATCH", pdb_path, {"spec": {"maxUnavailable": 2}}, EDIT,
            ua=KUBECTL_UA, ctype=MERGE),
        _ex("our apply again (force)", "PATCH", pdb_path, json.dumps(pdb), FORCED, ctype=APPLY),
        _ex("our apply with minAvailable 1 instead of maxUnavailable 1 (maxUnavailable left out)", "PATCH", pdb_path,
            json.dumps(min_available), FORCED, ctype=APPLY),
        _ex("DELETE the PodDisruptionBudget with a DeleteOptions body, propagationPolicy Background", "DELETE", pdb_path, delete),
        _ex("GET it afterwards", "GET", pdb_path),
        # a foreign Service of the same name
        _ex("setup: DELETE our Service, so that a foreign one can take its name", "DELETE", svc_path, delete, setup=True),
        _ex("a foreign Service of the same name, created the way `kubectl create -f` does: a plain ClusterIP Service, another "
            "selector and port name, no ownerReferences", "POST", f"/api/v1/namespaces/{ns}/services", foreign, CREATE,
            ua=KUBECTL_UA),
        _ex("our apply of the rendered Service over it WITHOUT force (no force parameter): we do not force", "PATCH", svc_path,
            json.dumps(service), {"fieldManager": "memcached-gitops"}, ctype=APPLY),
        _ex("GET the foreign Service after the refused apply", "GET", svc_path),
    ]


def _fill(value: Any, answers: list[dict[str, Any]]) -> Any:
    text = json.dumps(value)
    text = re.sub(r"\{uid:(\d+)\}", lambda m: answers[int(m.group(1))]["metadata"]["uid"], text)
    text = re.sub(r"\{rv:(\d+)\}", lambda m: answers[int(m.group(1))]["metadata"]["resourceVersion"], text)
    return json.loads(text)


def _uses(request: dict[str, Any]) -> dict[str, str]:
    """Where a request takes values from earlier answers: {"body.metadata...uid": "exchanges[N].response.body.metadata.uid"}."""
    found: dict[str, str] = {}
    fields = {"uid": "metadata.uid", "rv": "metadata.resourceVersion"}

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")
        elif isinstance(value, str):
            for kind, n in re.findall(r"\{(uid|rv):(\d+)\}", value):
                found[where] = f"exchanges[{n}].response.body.{fields[kind]}"

    body = request["body"]
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            pass
    walk(body, "body")
    return found


def _same(a: dict[str, Any], b: dict[str, Any]) -> str:
    return "unchanged" if a["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"] else "changed"


def _same_entry(a: dict[str, Any], b: dict[str, Any], manager: str) -> str:
    def entry(obj: dict[str, Any]) -> Any:
        return [m for m in obj["metadata"].get("managedFields", []) if m["manager"] == manager]
    return "unchanged" if entry(a) == entry(b) else "changed"


def _owned(obj: dict[str, Any], manager: str) -> str:
    entries = [m for m in obj["metadata"].get("managedFields", []) if m["manager"] == manager]
    spec = entries[0]["fieldsV1"].get("f:spec", {}) if entries else {}
    return ", ".join(k[2:] if k.startswith("f:") else k for k in spec)


def _edit_entry(obj: dict[str, Any]) -> Any:
    return [m["fieldsV1"] for m in obj["metadata"].get("managedFields", []) if m["manager"] == "kubectl-edit"]


def _managers(obj: dict[str, Any]) -> str:
    return ", ".join(f"{m['manager']} {m['operation']}" for m in obj["metadata"].get("managedFields", []))


def observations(exchanges: list[dict[str, Any]]) -> list[str]:
    """Facts read from the recorded answers (indexes are those of scenario())."""
    r = [e["response"] for e in exchanges]
    b = [x["body"] for x in r]
    spec = b[4]["spec"]
    svc_applied = json.loads(exchanges[2]["request"]["body"])["spec"]
    defaulted = sorted(k for k in spec if k not in svc_applied)
    port = spec["ports"][0]
    out = [
        f"Service apply on a missing object: {r[2]['status']}; managedFields: {_managers(b[2])}; spec fields it owns: "
        f"{_owned(b[2], 'memcached-gitops')}",
        f"identical Service apply: {r[3]['status']}, resourceVersion {_same(b[2], b[3])}; managedFields time "
        f"{'unchanged' if b[2]['metadata']['managedFields'] == b[3]['metadata']['managedFields'] else 'changed'}",
        f"Service spec keys the server added: {', '.join(defaulted)} "
        f"({', '.join(f'{k}={json.dumps(spec[k])}' for k in defaulted)}); clusterIP {json.dumps(spec['clusterIP'])}; "
        f"the port as stored: {json.dumps(port)}; status {json.dumps(b[4].get('status'))}",
        f"merge patch of one selector key: {r[5]['status']}, selector now {json.dumps(b[5]['spec']['selector'])}; "
        f"managedFields: {_managers(b[5])}",
        f"merge patch adding a port: {r[6]['status']}, ports {json.dumps(b[6]['spec']['ports'])}; managedFields: {_managers(b[6])}",
        f"our forced apply after the edits: {r[7]['status']}, selector {json.dumps(b[7]['spec']['selector'])}, ports "
        f"{json.dumps(b[7]['spec']['ports'])}; managedFields: {_managers(b[7])}; kubectl-edit keeps: "
        f"{json.dumps(_edit_entry(b[7]))}",
        f"merge patch of clusterIP on the headless Service: {r[8]['status']} {b[8].get('reason')}: {b[8].get('message')}",
        f"merge patch of type NodePort on the headless Service: {r[9]['status']} {b[9].get('reason')}: {b[9].get('message')}",
        f"PDB apply on a missing object: {r[10]['status']}; status in the answer {json.dumps(b[10].get('status'))}",
        f"identical PDB apply: {r[11]['status']}, resourceVersion {_same(b[10], b[11])} from the create's answer "
        f"({b[10]['metadata']['resourceVersion']} -> {b[11]['metadata']['resourceVersion']}); managedFields in this answer: "
        f"{_managers(b[11])}; our Apply entry's time {_same_entry(b[10], b[11], 'memcached-gitops')}",
        f"PDB GET at once: resourceVersion {_same(b[11], b[12])} from the re-apply's answer; status {json.dumps(b[12].get('status'))}",
        f"PDB GET about 3 s later: resourceVersion {_same(b[12], b[13])}, status {json.dumps(b[13].get('status'))}; "
        f"managedFields: {_managers(b[13])}",
        f"identical PDB apply after the status write: {r[14]['status']}, resourceVersion {_same(b[13], b[14])}, generation "
        f"{b[14]['metadata'].get('generation')}",
        f"merge patch maxUnavailable 2: {r[15]['status']}, maxUnavailable {b[15]['spec'].get('maxUnavailable')}, "
        f"generation {b[13]['metadata'].get('generation')} -> {b[15]['metadata'].get('generation')}; managedFields: {_managers(b[15])}",
        f"our forced apply: {r[16]['status']}, maxUnavailable {b[16]['spec'].get('maxUnavailable')}, generation "
        f"{b[16]['metadata'].get('generation')}; managedFields: {_managers(b[16])}",
    ]
    if r[17]["status"] < 300:
        out.append(f"apply switching to minAvailable 1: {r[17]['status']}, spec {json.dumps(b[17]['spec'])}, generation "
                   f"{b[17]['metadata'].get('generation')}")
    else:
        out.append(f"apply switching to minAvailable 1: {r[17]['status']} {b[17].get('reason')}: {b[17].get('message')}")
    out += [
        f"DELETE of the PDB with DeleteOptions Background: {r[18]['status']} kind={b[18].get('kind')} status={b[18].get('status')}",
        f"GET afterwards: {r[19]['status']} {b[19].get('message')}",
        f"our apply over the foreign Service without force: {r[22]['status']} {b[22].get('reason')}: {b[22].get('message')}",
        f"the foreign Service as created: clusterIP {b[21]['spec']['clusterIP']}; kubectl-create owns spec fields: "
        f"{_owned(b[21], 'kubectl-create')}; owned by no one: "
        f"{', '.join(k for k in b[21]['spec'] if k not in _owned(b[21], 'kubectl-create').split(', '))}",
        f"the foreign Service afterwards: resourceVersion {_same(b[21], b[23])}, selector {json.dumps(b[23]['spec']['selector'])}, "
        f"no ownerReferences: {'ownerReferences' not in b[23]['metadata']}",
    ]
    return out


def record(kubeconfig: str, ns: str = NS, out: Path | None = None) -> Path:
    meta, exchanges = scenario(ns)
    api = KubeAPI.connect(kubeconfig)
    pool, host = api.client.rest_client.pool_manager, api.client.configuration.host.rstrip("/")
    answers: list[dict[str, Any]] = []
    for exchange in exchanges:
        time.sleep(exchange.pop("_wait", 0))
        uses = _uses(exchange["request"])
        request = _fill(exchange["request"], answers)
        if uses:
            exchange.pop("request")
            exchange["request_uses_values_from_earlier_responses"] = uses
        exchange["request"] = request
        exchange["response"] = send(pool, host, request)
        decoded = exchange["response"]["body"]
        answers.append(decoded if isinstance(decoded, dict) else {})
    out = out or HERE / f"{STEM}.json"
    notes = ["recorded by python -m tests.record_companions KUBECONFIG",
             "the Service and the PodDisruptionBudget are render()'s for Memcached mc (size 2, containerPort 11211), with "
             "metadata.ownerReferences set to a controller reference to that Memcached",
             "every ownerReference uid was taken from exchanges[1].response.body.metadata.uid",
             "a person's edits carry kubectl's User-Agent and fieldManager=kubectl-edit, sent as JSON merge patches",
             "no Deployment or Pods exist in this namespace: the disruption controller sees no Pods",
             "the second PDB apply may find the disruption controller's first status write already in (its answer then has "
             "a new resourceVersion and the kube-controller-manager entry, while our Apply entry is unchanged); the apply "
             "after the 3 s GET is the clean no-op check",
             "not in this file, seen on the same server: the same apply over the foreign Service WITH force (dryRun=All) is "
             "422, spec.clusterIPs[0]: Invalid value: [\"None\"]: may not change once set; forcing would not take the "
             "Service over either"]
    out.write_text(json.dumps({**meta, "notes": notes, "exchanges": exchanges, "observations": observations(exchanges)},
                              indent=1) + "\n")
    return out


if __name__ == "__main__":
    # python -m tests.record_companions KUBECONFIG [NAMESPACE [OUT]]: another namespace and file for a trial run
    args = sys.argv[1:]
    print(record(args[0], args[1] if len(args) > 1 else NS, Path(args[2]) if len(args) > 2 else None))
