"""What the log and the Events say of a Deployment's apply, word for word, in each of its three
forms (a correction of drift, the adoption of a Deployment Argo CD applied, the in-place takeover
of the Go operator's) and each way it can end: written, not written (``--dry-run``), refused by
the API server. The on-call person reads these lines to know what was, or would have been, done:
a dry run must tell the same correction a real run makes, and a refused apply what it was for."""

from __future__ import annotations

import json
import logging

import pytest

from fakeapi.server import FakeAPIServer, Fault
from tests.support.fakecluster import argocd_applies, make_cr, reconciler_for, scale
from tests.support.go_operator import go_operator_deployment, seed_000_labels

IMAGE = "memcached:1.6.99"
VERSION = '.metadata.labels.app.kubernetes.io/version: live "1.6.26-alpine3.19", desired "1.6.99" (set by {m})'
REPLICAS = ".spec.replicas: live {live}, desired {desired} (set by {m})"
POD_VERSION = '.spec.template.metadata.labels.app.kubernetes.io/version: live "1.6.26-alpine3.19", desired "1.6.99" (set by {m})'
CONTAINER = ('.spec.template.spec.containers[name="memcached"].image: live "memcached:1.6.26-alpine3.19", '
             'desired "memcached:1.6.99" (set by {m})')
ARGOCD = "argocd-controller"
#: each case: how the cluster is set up, the summary of the apply, the Event's reason and text after it
SUMMARY = {
    "corrected": "corrected " + REPLICAS.format(live=3, desired=1, m="kubectl (scale)"),
    "adopted": f"took over the Deployment applied by {ARGOCD} (controller ownerReference added)",
    "inherited": "took over the Deployment manager created, in place, keeping its selector app.kubernetes.io/name=project",
}
EVENT = {
    "corrected": ("DriftCorrected", SUMMARY["corrected"]),
    "adopted": ("Adopted", SUMMARY["adopted"] + "; corrected " + "; ".join(
        [VERSION.format(m=ARGOCD), REPLICAS.format(live=2, desired=3, m=ARGOCD), POD_VERSION.format(m=ARGOCD),
         CONTAINER.format(m=ARGOCD)])),
}


def set_up(api: FakeAPIServer, case: str) -> dict:
    """The cluster before the cycle measured, and the reconciler's options for it."""
    if case == "corrected":  # ours, scaled by a person
        make_cr(api, "a", size=1)
        reconciler_for(api).run_cycle()
        scale(api, "a", 3)
        return {}
    if case == "adopted":  # Argo CD applied it (size 2, the default image); the CR now asks 3 and another image
        argocd_applies(api, "a", size=2)
        make_cr(api, "a", size=3)
        return {"adopt": True, "image": IMAGE}
    cr = make_cr(api, "a", size=3)  # the Go operator of seed 000 created it
    go_operator_deployment(api, cr, seed_000_labels("a"))
    return {"adopt": True}


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.levelname} {r.getMessage()}" for r in caplog.records if r.getMessage().startswith("default/a: ")]


def events(api: FakeAPIServer) -> list[tuple[str, str, str]]:
    _, _, body = api.handle("GET", "/api/v1/namespaces/default/events", {}, b"")
    return [(e["type"], e["reason"], e["message"]) for e in json.loads(body)["items"]]


@pytest.mark.parametrize("case", SUMMARY)
def test_a_dry_run_says_the_apply_it_would_make(cluster: FakeAPIServer, caplog: pytest.LogCaptureFixture, case: str) -> None:
    options = set_up(cluster, case)
    before = events(cluster)
    caplog.set_level(logging.INFO)
    reconciler_for(cluster, dry_run=True, **options).run_cycle()
    assert f"INFO default/a: not written (dry run): {SUMMARY[case]}" in said(caplog), said(caplog)
    assert events(cluster) == before  # a dry run posts no Event


@pytest.mark.parametrize("case", SUMMARY)
def test_a_refused_apply_says_why_and_what_it_was_for(cluster: FakeAPIServer, caplog: pytest.LogCaptureFixture, case: str) -> None:
    options = set_up(cluster, case)
    cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=422, times=5))
    caplog.set_level(logging.INFO)
    reconciler_for(cluster, **options).run_cycle()
    refused = "Deployment default/a: apply refused: HTTP 422: injected fault 422"
    assert f"WARNING default/a: {refused} (to do: {SUMMARY[case]})" in said(caplog), said(caplog)
    assert ("Warning", "ApplyFailed", refused) in events(cluster)


@pytest.mark.parametrize("case", EVENT)
def test_a_written_apply_is_logged_and_told_in_its_event(cluster: FakeAPIServer, caplog: pytest.LogCaptureFixture, case: str) -> None:
    """An adoption's Event also lists what the apply changed besides the ownerReference (a person
    reading ``kubectl describe memcached`` learns the takeover changed replicas and the image)."""
    options = set_up(cluster, case)
    caplog.set_level(logging.INFO)
    reconciler_for(cluster, **options).run_cycle()
    assert f"INFO default/a: {SUMMARY[case]}" in said(caplog), said(caplog)
    reason, text = EVENT[case]
    mine = [e for e in events(cluster) if e[1] == reason]
    assert len(mine) == 1 and mine[0][0] == "Normal", events(cluster)
    assert mine[0][2] == text or mine[0][2].startswith(text + "; Service "), (mine[0][2], text)
