"""The names the product and the objects it renders, reads and writes go by, each spelled once.

The renderer (render/) and the reconciler (reconciler/) both name a Deployment, a Service and a
PodDisruptionBudget; the validator (schemas/) and the reconciler both name the Memcached kind; the
reconciler's annotations, labels and Leases share the product's group and name; the labels every
rendered object carries are how the reconciler finds them again. They sit here, on
the lowest floor, so that no floor spells one of them again.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .product import NAME

#: The API group of the product's custom resource; its annotations and labels are named under it.
GROUP = "cache.example.com"
#: The kind of the product's custom resource: in a file of several CRDs, the first CRD of this kind judges.
KIND = "Memcached"


class Resource(NamedTuple):
    """A resource's identity, said once: its group, version and plural (the GVR of its paths) and its kind."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def gvr(self) -> tuple[str, str, str]:
        """(group, version, plural): the first arguments of ``api.object_path`` and ``collection_path``."""
        return self.group, self.version, self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
PODS = Resource("", "v1", "pods", "Pod")
EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
#: the HPAs in scope: which one scales a CR's Deployment (reconciler/decisions/autoscalers.py)
AUTOSCALERS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
#: rendered beside the Deployment (render/companions.py's COMPANIONS), applied and corrected like it
SERVICES = Resource("", "v1", "services", "Service")
BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")

#: Every object rendered for a CR carries it, with the product's name: the reconciler selects by it.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
#: The label naming an object's CR: in the Deployment's selector, and how the reconciler maps Pods back to CRs.
INSTANCE_LABEL = "app.kubernetes.io/instance"

#: A person's say on one CR, as Flux's ``kustomize.toolkit.fluxcd.io/reconcile: disabled``:
#: ``disabled`` (nothing written for it but one status condition saying so), ``detect-only`` (drift reported, never
#: corrected, as --detect-only for the whole process), ``enabled`` (the default).
RECONCILE_ANNOTATION = f"{GROUP}/reconcile"
#: Reconcile now, as Flux's ``reconcile.fluxcd.io/requestedAt``: any new value (a time, a token) is a
#: request; the next reconcile of the CR, in either mode, writes it to ``status.lastHandledReconcileAt``,
#: so ``kubectl wait --for=jsonpath='{.status.lastHandledReconcileAt}'=VALUE`` follows it.
REQUESTED_AT_ANNOTATION = f"{GROUP}/requestedAt"
#: JSON Pointers (RFC 6901) into the objects a Memcached owns whose drift is left alone (reconciler/decisions/ignore.py).
IGNORE_PATHS_ANNOTATION = f"{GROUP}/ignore-paths"
#: The label that gathers a shard ring's member Leases (reconciler/client/shards.py).
RING_LABEL = f"{GROUP}/shard-ring"
#: The member list a shard ring's member last saw, on its own Lease (reconciler/client/shards.py).
VIEW_ANNOTATION = f"{GROUP}/shard-view"

#: The Lease of leader election (reconciler/client/leader.py), which ``leader_election_master_status`` names.
LEADER_LEASE = f"{NAME}-leader"
#: The start of each shard ring member's Lease name; the member's identity follows.
SHARD_LEASE_PREFIX = f"{NAME}-shard-"


def owner_reference(cr: dict[str, Any]) -> dict[str, Any]:
    """The controller ownerReference to the custom resource ``cr`` (its uid known: read from the
    cluster), that the reconciler sets on every object it applies for it, so the garbage collector
    removes them with it and no other controller adopts them."""
    meta = cr["metadata"]
    return {"apiVersion": cr["apiVersion"], "kind": cr["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}
