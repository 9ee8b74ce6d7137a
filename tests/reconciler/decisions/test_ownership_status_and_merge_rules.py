"""Five rules that a realistic one-line bug could break without any other test failing.

Each test below fails when its rule is broken on purpose (see docs/design/testing.md, mutation testing
section): a controller ownerReference counts only with this CR's uid; a condition's
lastTransitionTime stays when only its reason changes; a port's defaulted ``protocol: TCP`` takes
part in its merge key; a manager that owns an atomic parent owns everything below it; an atomic
write flushes and fsyncs before it renames.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from memcached_gitops.foundation.files import write_atomic
from memcached_gitops.reconciler.decisions.drift import compare, removal_patch
from memcached_gitops.reconciler.decisions.managedfields import owners_of
from memcached_gitops.reconciler.decisions.status import Observation, desired_status
from memcached_gitops.render import render
from memcached_gitops.schemas import Validator, load_crd

from fakeapi.server import FakeAPIServer
from tests.support.fakecluster import condition, deployment, make_cr, post, reconciler_for, writes


def rendered(name: str = "m", size: int = 1) -> dict:
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": "default"},
          "spec": {"size": size}}
    return render(Validator(load_crd()).validate(cr).obj)[0]


# ---- a Deployment controlled by another owner is never written to

@pytest.mark.parametrize("adopt", [False, True], ids=["without-adopt", "with-adopt"])
def test_a_deployment_controlled_by_another_memcached_uid_is_never_written(adopt: bool) -> None:
    """The Memcached was deleted and created again under the same name: the old Deployment, still
    controlled by the old uid until the garbage collector removes it (transcript 36), carries our
    labels and a controller ownerReference of our kind and name. Only the uid tells it apart."""
    with FakeAPIServer(namespaces=("default",)) as cluster:
        old = rendered()
        old["metadata"]["ownerReferences"] = [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "m",
                                               "uid": "0a0a0a0a-old-memcached", "controller": True, "blockOwnerDeletion": True}]
        old["spec"]["replicas"] = 3  # drift that an owner would correct
        post(cluster, "/apis/apps/v1/namespaces/default/deployments", old, "?fieldManager=memcached-gitops")
        before = deployment(cluster, "m")
        cr = make_cr(cluster, "m")
        assert cr["metadata"]["uid"] != "0a0a0a0a-old-memcached"
        cluster.reset_log()
        report = reconciler_for(cluster, adopt=adopt).run_cycle()
        assert [o.action for o in report.outcomes] == ["not-owned"]
        assert not [w for w in writes(cluster) if "/deployments" in w], writes(cluster)
        assert deployment(cluster, "m") == before
        degraded = condition(cluster, "m", "Degraded")
        assert degraded["status"] == "True" and degraded["reason"] == "ResourceNotOwned"


# ---- lastTransitionTime moves only when a condition's status flips

def test_last_transition_time_stays_when_only_the_reason_changes() -> None:
    """metav1.Condition: lastTransitionTime is when the status last changed. Degraded stays False
    and its reason goes from GitOpsApplied to AsExpected (the Deployment was adopted)."""
    before = desired_status(Observation(1, 1, None, (), applied_by="argocd-controller"), None, "2026-01-01T00:00:00Z")
    degraded_before = next(c for c in before["conditions"] if c["type"] == "Degraded")
    assert (degraded_before["status"], degraded_before["reason"]) == ("False", "GitOpsApplied")
    after = desired_status(Observation(1, 1, None, ()), before, "2026-01-01T00:05:00Z")
    degraded_after = next(c for c in after["conditions"] if c["type"] == "Degraded")
    assert (degraded_after["status"], degraded_after["reason"]) == ("False", "AsExpected")
    assert degraded_after["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    available = next(c for c in after["conditions"] if c["type"] == "Available")
    assert available["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_last_transition_time_moves_when_the_status_flips() -> None:
    before = desired_status(Observation(1, 1, None, ()), None, "2026-01-01T00:00:00Z")
    after = desired_status(Observation(1, 1, None, (), "ApplyFailed", "apply failed: 503"), before, "2026-01-01T00:05:00Z")
    degraded = next(c for c in after["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and degraded["lastTransitionTime"] == "2026-01-01T00:05:00Z"


# ---- the defaulted protocol is part of a port's merge key

def test_a_live_port_without_protocol_is_one_protocol_drift_not_an_unwanted_port() -> None:
    """The API server defaults ``protocol: TCP`` before a port's identity (containerPort, protocol)
    is computed, so a live port without it is the same item as ours: one ``.protocol`` drift."""
    desired = rendered()
    live = rendered()
    del live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"]
    [drift] = compare(desired, live)
    assert drift.field == '.spec.template.spec.containers[name="memcached"].ports[containerPort=11211,protocol="TCP"].protocol'
    assert drift.desired == "TCP" and not drift.unwanted
    assert removal_patch(live, [drift]) == []


# ---- a manager that owns an atomic parent owns what is below it

NODE_SELECTOR = (("f", "spec"), ("f", "template"), ("f", "spec"), ("f", "nodeSelector"))


def test_the_owner_of_an_atomic_parent_is_named_for_a_drift_below_it() -> None:
    """nodeSelector is an atomic map (+mapType=atomic): fieldsV1 records ``f:nodeSelector: {}`` and
    the manager owns every key in it."""
    managed = [
        {"manager": "memcached-gitops", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:nodeSelector": {}}}}}},
    ]
    assert owners_of(managed, NODE_SELECTOR + (("f", "disktype"),)) == ("kubectl-edit",)
    desired = rendered()
    desired["spec"]["template"]["spec"]["nodeSelector"] = {"disktype": "ssd"}
    live = rendered()
    live["spec"]["template"]["spec"]["nodeSelector"] = {"disktype": "hdd"}
    live["metadata"]["managedFields"] = managed
    [drift] = compare(desired, live)
    # compared whole, as the API server owns it: one key changed is the map changed
    assert drift.field == ".spec.template.spec.nodeSelector" and drift.managers == ("kubectl-edit",)
    live["spec"]["template"]["spec"]["nodeSelector"] = {"disktype": "ssd", "zone": "a"}
    [drift] = compare(desired, live)
    assert drift.field == ".spec.template.spec.nodeSelector", "a key added by someone else is drift of the whole map"


# ---- an atomic write is durable before it is visible

def test_write_atomic_flushes_and_fsyncs_the_temporary_file_before_replacing(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "out" / "m.yaml"
    text = "kind: Deployment\n"  # shorter than the write buffer: only a flush puts it in the file
    calls: list[tuple[str, int]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        assert st.st_size == len(text.encode()), "flushed before fsync"
        calls.append(("fsync", st.st_ino))
        real_fsync(fd)

    def replace(src, dst) -> None:
        calls.append(("replace", os.stat(src).st_ino))
        assert Path(dst) == target and Path(src).parent == target.parent
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_atomic(target, text)
    assert [c[0] for c in calls] == ["fsync", "replace"]
    assert calls[0][1] == calls[1][1], "the file fsynced is the file renamed"
    assert target.read_text() == text
    assert [p.name for p in target.parent.iterdir()] == ["m.yaml"]
