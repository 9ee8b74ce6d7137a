"""The diff verb against a cluster: the rendered Deployments, Services and budgets compared with
the live ones as the reconciler would compare them (plan.py), and the drift printed."""

from __future__ import annotations

import sys
from typing import Any

from .main import connect


def diff_live(rendered: list[dict[str, Any]], namespace: str, kubeconfig: str | None, context: str | None,
              host: str | None = None, ignores: dict[tuple[str, str], dict[str, tuple[tuple[str, ...], ...]]] | None = None) -> int:
    """Compare rendered objects with the cluster as the reconciler would (plan.py: a kept selector,
    an HPA's replicas, the CR's ignored paths of each kind, keyed by the CR's (namespace, name) in
    ``ignores``); print the drift report, each line named by the CR; 0 none, 1 drift, 2 error.
    Ignored drift is listed and does not count."""
    from ..client.api import APIError, collection_path, is_forbidden, is_not_found
    from ..decisions.autoscalers import autoscalers_by_target
    from ..decisions.vocabulary import AUTOSCALERS

    api = connect(kubeconfig, context, host)
    if api is None:
        return 2
    autoscalers: dict[tuple[str, str], str] = {}
    for ns in sorted({d["metadata"].get("namespace") or namespace for d in rendered}):
        try:
            autoscalers |= autoscalers_by_target(api.list_all(collection_path(*AUTOSCALERS.gvr, ns), None))
        except APIError as exc:  # not allowed to read HPAs: replicas are compared with spec.size
            if not (is_forbidden(exc) or is_not_found(exc)):
                print(f"error: {ns}: {exc}", file=sys.stderr)
                return 2
    drifted = False
    kept: dict[tuple[str, str], dict[str, Any]] = {}  # the live selector of a Deployment taken over, by CR
    for desired in rendered:  # each CR's Deployment first (render's order): its companions select as it does
        found = _compare(api, desired, namespace, autoscalers, ignores or {}, kept)
        if found is None:
            return 2
        for line, counts in found:
            drifted = drifted or counts
            print(line)
    return 1 if drifted else 0


def _compare(api: Any, desired: dict[str, Any], namespace: str, autoscalers: dict[tuple[str, str], str],
             ignores: dict[tuple[str, str], dict[str, tuple[tuple[str, ...], ...]]],
             kept: dict[tuple[str, str], dict[str, Any]]) -> list[tuple[str, bool]] | None:
    """The report lines of one rendered object (each with whether it counts as drift), None on an
    error; objects the reconciler does not write (another kind passed through) have none."""
    from memcached_gitops.render import INSTANCE_LABEL
    from memcached_gitops.render.companions import BY_KIND

    from ..client.api import APIError, is_not_found, object_path
    from ..decisions.companions import selecting
    from ..decisions.plan import ignoring, plan
    from ..decisions.selectors import has_kept_selector, selector_of
    from ..decisions.vocabulary import COMPANIONS, DEPLOYMENTS, IGNORE_PATHS_ANNOTATION
    from .cycle import Options

    kind, name = desired["kind"], desired["metadata"]["name"]
    resource = next((r for r in (DEPLOYMENTS, *COMPANIONS) if r.kind == kind), None)
    if resource is None:
        return []
    ns = desired["metadata"].get("namespace") or namespace
    cr = desired["metadata"].get("labels", {}).get(INSTANCE_LABEL, name)
    try:
        live = api.request("GET", object_path(*resource.gvr, ns, name))
    except APIError as exc:
        if not is_not_found(exc):
            print(f"error: {ns}/{name}: {exc}", file=sys.stderr)
            return None
        live = None
    pointers = ignores.get((ns, cr), {}).get(kind, ())
    field_manager = Options().field_manager
    if kind == DEPLOYMENTS.kind:
        planned, what = plan(desired, live, field_manager, autoscalers.get((ns, name), ""), pointers), ""
        if live is not None and has_kept_selector(live) and (selector := selector_of(live)) is not None:
            kept[(ns, cr)] = selector
    else:
        planned = ignoring(selecting(desired, kept.get((ns, cr))), live, field_manager, pointers, BY_KIND[kind].rules)
        what = f"{kind} {name}: "
    the = kind if kind == DEPLOYMENTS.kind else f"{kind} {name}"
    if live is None:
        return [(f"{ns}/{cr}: missing: the {the} does not exist", True)]
    if _left_alone(live, kind, cr):  # the reconciler's Degraded ResourceNotOwned: no field of it is corrected
        return [(f"{ns}/{cr}: the {the} exists and is not controlled by this Memcached; the reconciler leaves it alone", True)]
    return ([(f"{ns}/{cr}: {what}{d.describe()}", True) for d in planned.drift]
            + [(f"{ns}/{cr}: {what}ignored ({IGNORE_PATHS_ANNOTATION}): {d.describe()}", False) for d in planned.ignored])


def _left_alone(live: dict[str, Any], kind: str, cr: str) -> bool:
    """Whether the reconciler leaves ``live`` alone as another's (ownership.classify for the
    Deployment, companions.relation for the others): controlled by anything but the Memcached named
    ``cr``, or by nothing and not labelled as its rendering. diff reads no CR, so a controller that
    is a Memcached of that name is taken for this one."""
    from memcached_gitops.foundation.identities import KIND

    from ..decisions.companions import Move, relation
    from ..decisions.ownership import Ownership, classify, controller_of
    from ..decisions.vocabulary import DEPLOYMENTS

    controller = controller_of(live) or {}
    uid = controller.get("uid") if (controller.get("kind"), controller.get("name")) == (KIND, cr) else None
    ref = {"metadata": {"name": cr, "uid": uid}}
    return classify(live, ref) is Ownership.FOREIGN if kind == DEPLOYMENTS.kind else relation(live, ref) is Move.FOREIGN
