"""The Argo CD health check of a Memcached (Lua), run by a real Lua 5.1 interpreter (Argo CD runs its
health scripts in gopher-lua, a Lua 5.1), against test cases laid out as Argo CD lays out its own:
``resource_customizations/<group>/<kind>/health.lua``, ``health_test.yaml`` and ``testdata/*.yaml``.

The testdata are Memcacheds as the reconciler left them on the fake API server (the Deployment
statuses of transcript 35); the last test evaluates the script on CRs the current status mapping
writes, so that the Lua and reconciler/decisions/status.py cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lupa.lua51 as lua51  # the test extra's Lua interpreter
import pytest
import yaml

from fakeapi.server import FakeAPIServer
from tests.conftest import REPO

CHECK = REPO / "kustomize/components/argocd-cmp/resource_customizations/cache.example.com/Memcached"
CASES = yaml.safe_load((CHECK / "health_test.yaml").read_text())["tests"]


def health(obj: dict[str, Any]) -> dict[str, str]:
    """As Argo CD runs a health script: the resource as the global ``obj``, the returned table read back."""
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute((CHECK / "health.lua").read_text())
    return {k: result[k] for k in ("status", "message") if result[k] is not None}


@pytest.mark.parametrize("case", CASES, ids=[Path(c["inputPath"]).stem for c in CASES])
def test_health_test_yaml(case: dict[str, Any]) -> None:
    obj = yaml.safe_load((CHECK / case["inputPath"]).read_text())
    assert health(obj) == case["healthStatus"]
    # Argo CD names its testdata after the expected status
    assert case["healthStatus"]["status"].lower() == Path(case["inputPath"]).stem.split("_")[0]


def test_every_testdata_file_has_a_case() -> None:
    assert {p.name for p in (CHECK / "testdata").glob("*.yaml")} == {Path(c["inputPath"]).name for c in CASES}


def test_the_script_reads_what_the_status_mapping_writes() -> None:
    from tests.support.fakecluster import (
        DEP_PATH,
        argocd_applies,
        controller_writes,
        make_cr,
        patch,
        reconciler_on_api_clock,
        recorded_status,
    )

    def cr(api: FakeAPIServer, name: str) -> dict[str, Any]:
        return api.get("cache.example.com", "memcacheds", "default", name)

    with FakeAPIServer() as api:
        rec = reconciler_on_api_clock(api)
        make_cr(api, "deadline", size=2)
        make_cr(api, "quota", size=1)
        make_cr(api, "gitops", size=1)
        argocd_applies(api, "gitops", 1)
        rec.run_cycle()
        assert [health(cr(api, n))["status"] for n in ("deadline", "quota", "gitops")] == ["Progressing"] * 3
        patch(api, DEP_PATH.format(ns="default", name="deadline"), {"spec": {"progressDeadlineSeconds": 5}}, "application/merge-patch+json")
        controller_writes(api, "deadline", recorded_status("35", 6))
        controller_writes(api, "quota", recorded_status("35", 9))
        controller_writes(api, "gitops", recorded_status("16", 2))
        rec.run_cycle()
        assert health(cr(api, "deadline"))["status"] == "Degraded"
        assert health(cr(api, "deadline"))["message"].startswith("ProgressDeadlineExceeded: ")
        assert health(cr(api, "quota"))["status"] == "Degraded"
        assert health(cr(api, "quota"))["message"].startswith("FailedCreate: ")
        gitops = health(cr(api, "gitops"))
        assert gitops["status"] == "Healthy" and "argocd-controller" in gitops["message"]
        controller_writes(api, "quota", recorded_status("16", 2))  # the quota is freed
        rec.run_cycle()
        assert health(cr(api, "quota"))["status"] == "Healthy"


def test_an_hpa_hand_off_and_ignored_drift_are_healthy_and_a_bad_rule_is_degraded() -> None:
    """Argo CD's verdict on the other writers (issue 23): replicas the HPA owns and drift at ignored
    paths are no failure; a pointer the reconciler cannot follow is."""
    from fakeapi.server import DeploymentController
    from tests.support.fakecluster import annotate, create_hpa, hpa_scales, make_cr, reconciler_for, scale

    with FakeAPIServer() as api:
        rec = reconciler_for(api)
        for name in ("scaled", "ignored", "broken"):
            make_cr(api, name, size=1)
        rec.run_cycle()
        create_hpa(api, "scaled")
        hpa_scales(api, 3, "scaled")
        annotate(api, "ignored", "/spec/replicas")
        scale(api, "ignored", 2)
        annotate(api, "broken", "spec/replicas")
        DeploymentController(api).sync(available=True)
        rec.run_cycle()
        verdicts = {n: health(api.get("cache.example.com", "memcacheds", "default", n)) for n in ("scaled", "ignored", "broken")}
        assert verdicts["scaled"] == {"status": "Healthy", "message": "MinimumReplicasAvailable: 3 of 3 replicas available; "
                                      "replicas follow HorizontalPodAutoscaler scaled, not spec.size"}
        assert verdicts["ignored"]["status"] == "Healthy"
        assert verdicts["broken"]["status"] == "Degraded" and verdicts["broken"]["message"].startswith("InvalidIgnorePaths: annotation")
