"""Deployment selectors: the one we would not have chosen, kept, and the Pods two of them share. Pure.

A Deployment's ``spec.selector`` is immutable (transcript 29: a change is a 422 ``field is
immutable``). A Deployment that another controller created for a CR (the seeds' Go operators:
seed 000 selects ``app.kubernetes.io/name: project`` for every CR of a namespace, seed 002 puts
the image tag into its selector) can therefore only be taken over with its selector as it is:
``keep_live_selector`` gives the rendered Deployment that selector, and gives its Pod template
the labels the selector needs, so that one apply rolls the Pods onto our template in place. A
kept selector may select the Pods of another Deployment (seed 000's does, for every pair of CRs in
a namespace): ``overlapping`` finds them, to be reported on both CRs.

Matching follows metav1.LabelSelectorAsSelector: every matchLabels pair and every matchExpression
(In, NotIn, Exists, DoesNotExist) must hold; an empty selector selects everything, an absent one
nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from memcached_gitops.render import selector_labels


def selector_of(deployment: dict[str, Any]) -> dict[str, Any] | None:
    return (deployment.get("spec") or {}).get("selector")


def has_kept_selector(deployment: dict[str, Any]) -> bool:
    """Whether a Deployment's selector is other than the one we render for its name (a kept one)."""
    return selector_of(deployment) != {"matchLabels": selector_labels(deployment["metadata"]["name"])}


def template_labels(deployment: dict[str, Any]) -> dict[str, str]:
    return ((((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")) or {}


def matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Whether ``selector`` (a metav1.LabelSelector) selects an object with ``labels``."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def keep_live_selector(desired: dict[str, Any], live: dict[str, Any] | None) -> dict[str, Any]:
    """``desired`` with the live Deployment's selector when the two differ (selectors are
    immutable), and with the Pod template labels that selector requires: its matchLabels, and the
    live template's values of the keys its matchExpressions name. Otherwise ``desired`` itself."""
    kept = selector_of(live) if live is not None else None
    if kept is None or kept == desired["spec"]["selector"]:
        return desired
    out = copy.deepcopy(desired)
    out["spec"]["selector"] = copy.deepcopy(kept)
    labels = out["spec"]["template"]["metadata"]["labels"]
    live_labels = template_labels(live or {})
    for expression in kept.get("matchExpressions") or []:
        key = expression.get("key")
        if key in live_labels:
            labels[key] = live_labels[key]
    labels.update(kept.get("matchLabels") or {})
    return out


def overlapping(deployment: dict[str, Any], others: Iterable[dict[str, Any]]) -> list[str]:
    """The names of the other Deployments whose Pods ``deployment`` selects, or that select its
    Pods, sorted. The Deployment controller keeps each Pod with its own ReplicaSet (controller
    references), but a Service, a PodDisruptionBudget or ``kubectl get pods -l`` built from either
    selector sees both sets of Pods."""
    name = deployment["metadata"]["name"]
    mine, my_labels = selector_of(deployment), template_labels(deployment)
    found = {
        other["metadata"]["name"]
        for other in others
        if other["metadata"]["name"] != name and (matches(mine, template_labels(other)) or matches(selector_of(other), my_labels))
    }
    return sorted(found)


def describe(selector: dict[str, Any] | None) -> str:
    """A selector as ``kubectl get -l`` would take it: ``app.kubernetes.io/name=project``."""
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        op, values = e.get("operator"), ",".join(e.get("values") or [])
        spelled = {"Exists": f"{e.get('key')}", "DoesNotExist": f"!{e.get('key')}"}
        parts.append(spelled.get(op, f"{e.get('key')} {str(op).lower()} ({values})"))
    return ",".join(parts)


def foreign_owners(deployment: str, pods: Iterable[dict[str, Any]]) -> list[str]:
    """Who owns the ``pods`` that are not the Deployment ``deployment``'s, sorted: ``Deployment ns/b``
    for a Pod of another Deployment's ReplicaSet, its controller (``StatefulSet ns/x``) otherwise,
    the Pod itself when nothing controls it. A Deployment's Pod is its ReplicaSet's, named
    ``<deployment>-<pod-template-hash>`` (transcript 35: the label and the controller reference)."""
    found = set()
    for pod in pods:
        meta = pod.get("metadata") or {}
        ns, labels = meta.get("namespace", ""), meta.get("labels") or {}
        owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
        suffix = f"-{labels['pod-template-hash']}" if labels.get("pod-template-hash") else ""
        if owner is None:
            found.add(f"Pod {ns}/{meta.get('name', '')}")
        elif owner.get("kind") == "ReplicaSet" and suffix and str(owner.get("name", "")).endswith(suffix):
            if owner["name"] != f"{deployment}{suffix}":
                found.add(f"Deployment {ns}/{owner['name'][:-len(suffix)]}")
        else:
            found.add(f"{owner.get('kind')} {ns}/{owner.get('name')}")
    return sorted(found)
