"""The informer's cache update of one Deployment watch event, in-process: compacted alone, or against
the version the store holds (what ``Informer._watch`` does).

Three events of one rendered Deployment, with the managedFields and status a real API server adds:
a status change (resourceVersion, observedGeneration), a ``kubectl scale`` (replicas, and kubectl's
managedFields entry added, ours losing ``f:replicas``) and our correction of it (the reverse). Each is
timed with ``timeit`` (median of 7 repeats). Not a test: nothing here asserts a time.

    python bench/cache_update.py
"""

from __future__ import annotations

import copy
import statistics
import timeit
from typing import Any

from memcached_gitops.reconciler.client.informer import Kind, slim
from memcached_gitops.render import render_deployment

DEPLOYMENTS = Kind("Deployment", "apps", "v1", "deployments", keep_managed_fields=True)


def fields(value: Any) -> dict[str, Any]:
    """The FieldsV1 set of a map: every key as ``f:key``, lists of maps as a whole (enough for the shape)."""
    return {f"f:{k}": fields(v) if isinstance(v, dict) else {} for k, v in value.items()} if isinstance(value, dict) else {}


def events() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """name -> (the stored version's event, the next event)."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
          "metadata": {"name": "c1", "namespace": "ns", "uid": "0b9e1c3e-2f1a-4d4e-9a57-6a1f0e2d3c4b"}, "spec": {"size": 2}}
    ours = render_deployment(cr)
    ours["metadata"].update({"resourceVersion": "1000", "generation": 1, "creationTimestamp": "2026-11-26T10:00:00Z",
                             "uid": "5e0c2b1a-7d3f-4c8e-b1a2-9f8e7d6c5b4a",
                             "managedFields": [{"manager": "memcached-gitops", "operation": "Apply", "apiVersion": "apps/v1",
                                                "time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1",
                                                "fieldsV1": {k: v for k, v in fields(ours).items() if k in ("f:metadata", "f:spec")}}]})
    ours["status"] = {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "unavailableReplicas": 2,
                      "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
                                      "lastUpdateTime": "2026-11-26T10:00:00Z", "lastTransitionTime": "2026-11-26T10:00:00Z"}]}
    status = copy.deepcopy(ours)
    status["metadata"]["resourceVersion"] = "1001"
    status["status"]["observedGeneration"] = 2
    scaled = copy.deepcopy(ours)
    scaled["metadata"].update({"resourceVersion": "1002", "generation": 2})
    scaled["spec"]["replicas"] = 7
    del scaled["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"]
    scaled["metadata"]["managedFields"].append({"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                                                "time": "2026-11-26T10:01:00Z", "fieldsType": "FieldsV1",
                                                "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"})
    corrected = copy.deepcopy(ours)
    corrected["metadata"].update({"resourceVersion": "1003", "generation": 3})
    return {"status only": (ours, status), "kubectl scale": (ours, scaled), "our correction": (scaled, corrected)}


def per_call(f: Any, number: int = 2000) -> float:
    return statistics.median(timeit.repeat(f, number=number, repeat=7)) / number


def main() -> None:
    print("one Deployment watch event into the cache (median of 7 repeats):")
    for name, (before, event) in events().items():
        stored = slim(DEPLOYMENTS, copy.deepcopy(before))
        alone = per_call(lambda e=event: slim(DEPLOYMENTS, e))
        against = per_call(lambda e=event, s=stored: slim(DEPLOYMENTS, e, s))
        assert slim(DEPLOYMENTS, event, stored) == event
        print(f"  {name:15s} compacted alone {alone * 1e6:6.1f} µs   against the stored version {against * 1e6:6.1f} µs")
    print("reproduce: python bench/cache_update.py")


if __name__ == "__main__":
    main()
