"""HorizontalPodAutoscalers: who owns a Deployment's ``spec.replicas``. Pure.

An autoscaling/v2 HorizontalPodAutoscaler whose ``scaleTargetRef`` names a Memcached's Deployment
owns that Deployment's replicas: the HPA controller writes them through the scale subresource (a GET
then a PUT of an autoscaling/v1 Scale; its managedFields entry is ``kube-controller-manager`` /
Update / ``subresource: scale``, and our Apply entry loses ``spec.replicas``: transcript 40). Our
applies then hand the field over by Flux's rule for an ignored field (kustomize-controller,
``.spec.ignore``): drop it when another manager owns it (dropping it changes nothing: 40), or carry
the live value when we are its only owner (dropping it would set it back to the default of 1:
transcript 21). So the value never jumps to a default in between, and the fight detector never
sees a replicas correction. Once the HPA is gone, ``spec.size`` rules again: one forced apply takes
the field back, straight from the HPA's value to the CR's (40).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memcached_gitops.foundation.identities import DEPLOYMENTS

from .managedfields import owners_of

REPLICAS = (("f", "spec"), ("f", "replicas"))


def scale_target(hpa: dict[str, Any]) -> tuple[str, str] | None:
    """The (namespace, name) of the Deployment an HPA scales, or None when it scales something else."""
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    # an apiVersion without a group ("v1", or "apps" alone) is the core group's, as the HPA controller parses it
    if ref.get("kind") != DEPLOYMENTS.kind or not str(ref.get("apiVersion")).startswith("apps/") or not ref.get("name"):
        return None
    return hpa["metadata"]["namespace"], str(ref["name"])


def autoscalers_by_target(hpas: Iterable[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """Each scaled Deployment's HPA (by name; the first in name order when several name it)."""
    found: dict[tuple[str, str], str] = {}
    for hpa in sorted(hpas, key=lambda h: h["metadata"]["name"]):
        target = scale_target(hpa)
        if target is not None:
            found.setdefault(target, hpa["metadata"]["name"])
    return found


def hand_off_replicas(desired: dict[str, Any], live: dict[str, Any] | None, field_manager: str) -> dict[str, Any]:
    """``desired`` as our apply should carry it while an HPA owns replicas (a new dict; ``desired``
    is not changed): without replicas when another manager owns them, with the live value when we
    alone do, unchanged when there is no live Deployment yet (the CR's size starts it)."""
    if live is None:
        return desired
    spec = dict(desired["spec"])
    if replicas_setters(live, field_manager):
        del spec["replicas"]
    else:
        spec["replicas"] = live["spec"]["replicas"]  # the API server defaults it: always there
    return {**desired, "spec": spec}


def replicas_setters(live: dict[str, Any], field_manager: str) -> str:
    """The managers other than ours that own the Deployment's ``spec.replicas`` (``kube-controller-manager
    (scale)``, ``kubectl (scale)``, ``argocd-controller``), ", " between them; "" when none does. An HPA's
    hand-off reads it, and so does the status of a CR whose ignore-paths leaves the replicas to others
    (the Replicas-By column)."""
    owners = owners_of((live.get("metadata") or {}).get("managedFields") or [], REPLICAS)
    return ", ".join(dict.fromkeys(m for m in owners if m != field_manager))
