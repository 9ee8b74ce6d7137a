"""Controllers for the fake: what kube-controller-manager would do, played on demand.

An API server stores and serves; it never writes a Deployment's status or creates Pods itself.
``DeploymentController`` plays the controller (status and pods) when a test calls ``sync()``: it
writes straight into the fake's store, under its lock, a new object with a new resourceVersion for
each change, so WATCH sees the change as it would see a controller's write through the API.
"""

from __future__ import annotations

import copy
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .server import FakeAPIServer


class DeploymentController:
    """Plays kube-controller-manager for tests: writes Deployment status (merge patch to /status, as
    in transcript 16) and creates or deletes Pods so the reconciler has something to observe."""

    def __init__(self, api: FakeAPIServer) -> None:
        self.api = api

    def sync(self, available: bool = True) -> None:
        api = self.api
        with api.lock:
            for key, dep in list(api.objects.items()):
                if key[1] != "deployments":
                    continue
                ns, name = key[2], key[3]
                replicas = dep["spec"].get("replicas", 1)
                ready = replicas if available else 0
                status = {"observedGeneration": dep["metadata"].get("generation", 1), "replicas": replicas,
                          "updatedReplicas": replicas}
                if ready:
                    status |= {"readyReplicas": ready, "availableReplicas": ready}
                if replicas - ready:
                    status["unavailableReplicas"] = replicas - ready
                status["conditions"] = [
                    {"type": "Available", "status": "True" if available else "False",
                     "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                     "message": "Deployment has minimum availability." if available else "Deployment does not have minimum availability.",
                     "lastUpdateTime": api.clock(), "lastTransitionTime": api.clock()},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                     "message": f'ReplicaSet "{name}-5d9c8b7f6d" has successfully progressed.',
                     "lastUpdateTime": api.clock(), "lastTransitionTime": api.clock()},
                ]
                if dep.get("status") != status:  # a new object, so the change reaches WATCH with its old state
                    dep = {**copy.deepcopy(dep), "status": status}
                    dep["metadata"]["resourceVersion"] = api._next_rv()
                    api.objects[key] = dep
                labels = dep["spec"]["template"]["metadata"].get("labels", {})
                pods = sorted(k for k in api.objects if k[1] == "pods" and k[2] == ns and k[3].startswith(f"{name}-5d9c8b7f6d-"))
                for extra in pods[replicas:]:
                    del api.objects[extra]
                for i in range(len(pods), replicas):
                    pod_name = f"{name}-5d9c8b7f6d-{i:05x}"
                    api.objects[("", "pods", ns, pod_name)] = {
                        "kind": "Pod", "apiVersion": "v1",
                        # the ReplicaSet's pod-template-hash label and controller reference, as transcript 35 shows
                        "metadata": {"name": pod_name, "namespace": ns, "uid": str(uuid.uuid4()), "resourceVersion": api._next_rv(),
                                     "labels": {**labels, "pod-template-hash": "5d9c8b7f6d"}, "creationTimestamp": api.clock(),
                                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-5d9c8b7f6d",
                                                          "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{ns}/{name}")),
                                                          "controller": True, "blockOwnerDeletion": True}]},
                        "spec": copy.deepcopy(dep["spec"]["template"]["spec"]),
                        "status": {"phase": "Running" if available else "Pending"},
                    }
