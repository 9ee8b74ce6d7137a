"""The diff verb against a cluster: the rendered Deployments, Services and budgets compared with
the live ones as the reconciler would compare them (plan.py), and the drift printed."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .main import connect

if TYPE_CHECKING:
    from ..decisions.vocabulary import Resource


def diff_live(rendered: list[dict[str, Any]], namespace: str, kubeconfig: str | None, context: str | None,
              host: str | None = None, ignores: dict[tuple[str, str], dict[str, tuple[tuple[str, ...], ...]]] | None = None) -> int:
    """Compare rendered objects with the cluster as the reconciler would (plan.py: a kept selector,
    an HPA's replicas, the CR's ignored paths of each kind, keyed by the CR's (namespace, name) in
    ``ignores``); print the drift report, each line named by the CR; 0 none, 1 drift, 2 error.
    Ignored drift is listed and does not count."""
    from ..client.api import APIError, collection_path, is_forbidden, is_not_found
    from ..decisions.autoscalers import autoscalers_by_target
    from ..decisions.vocabulary import AUTOSCALERS, DEPLOYMENTS

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
    deployments: dict[tuple[str, str], dict[str, Any] | None] = {}  # each CR's live Deployment, as read
    wanted = _rendered_by_cr(rendered, namespace)
    for desired in rendered:  # each CR's Deployment first (render's order): its companions select as it does
        found = _compare(api, desired, namespace, autoscalers, ignores or {}, deployments)
        ns, cr = _cr_of(desired, namespace)
        live = deployments.get((ns, cr))
        if found is not None and desired["kind"] == DEPLOYMENTS.kind and not (live and _left_alone(live, DEPLOYMENTS.kind, cr)):
            extra = _no_longer_wanted(api, ns, cr, wanted)  # a Deployment left alone: so are its companions
            found = None if extra is None else found + extra
        if found is None:
            return 2
        for line, counts in found:
            drifted = drifted or counts
            print(line)
    return 1 if drifted else 0


def _compare(api: Any, desired: dict[str, Any], namespace: str, autoscalers: dict[tuple[str, str], str],
             ignores: dict[tuple[str, str], dict[str, tuple[tuple[str, ...], ...]]],
             deployments: dict[tuple[str, str], dict[str, Any] | None]) -> list[tuple[str, bool]] | None:
    """The report lines of one rendered object (each with whether it counts as drift), None on an
    error; objects the reconciler does not write (another kind passed through) have none."""
    from memcached_gitops.render.companions import BY_KIND

    from ..decisions.companions import selecting
    from ..decisions.plan import ignoring, plan
    from ..decisions.selectors import has_kept_selector, selector_of
    from ..decisions.vocabulary import COMPANIONS, DEPLOYMENTS, IGNORE_PATHS_ANNOTATION
    from .cycle import Options

    kind, name = desired["kind"], desired["metadata"]["name"]
    resource = next((r for r in (DEPLOYMENTS, *COMPANIONS) if r.kind == kind), None)
    if resource is None:
        return []
    ns, cr = _cr_of(desired, namespace)
    read, live = _read(api, resource, ns, name)
    if not read:
        return None
    pointers = ignores.get((ns, cr), {}).get(kind, ())
    field_manager = Options().field_manager
    if kind == DEPLOYMENTS.kind:
        planned, what = plan(desired, live, field_manager, autoscalers.get((ns, name), ""), pointers), ""
        deployments[(ns, cr)] = live
    else:
        ours = deployments.get((ns, cr))
        kept = selector_of(ours) if ours is not None and has_kept_selector(ours) else None
        planned = ignoring(selecting(desired, kept), live, field_manager, pointers, BY_KIND[kind].rules)
        what = f"{kind} {name}: "
    the = kind if kind == DEPLOYMENTS.kind else f"{kind} {name}"
    if live is None:
        return [(f"{ns}/{cr}: missing: the {the} does not exist", True)]
    if _left_alone(live, kind, cr):  # the reconciler's Degraded ResourceNotOwned: no field of it is corrected
        return [(f"{ns}/{cr}: the {the} exists and is not controlled by this Memcached; the reconciler leaves it alone", True)]
    return ([(f"{ns}/{cr}: {what}{d.describe()}", True) for d in planned.drift]
            + [(f"{ns}/{cr}: {what}ignored ({IGNORE_PATHS_ANNOTATION}): {d.describe()}", False) for d in planned.ignored])


def _read(api: Any, resource: Resource, ns: str, name: str) -> tuple[bool, dict[str, Any] | None]:
    """GET one object: (True, it), (True, None) when it does not exist, (False, None) on any other
    error, said on stderr as ``error: ns/name: ...``."""
    from ..client.api import APIError, is_not_found, object_path

    try:
        return True, api.request("GET", object_path(*resource.gvr, ns, name))
    except APIError as exc:
        if is_not_found(exc):
            return True, None
        print(f"error: {ns}/{name}: {exc}", file=sys.stderr)
        return False, None


def _cr_of(rendered: dict[str, Any], namespace: str) -> tuple[str, str]:
    """The (namespace, name) of the CR a rendered object is of: its instance label names it."""
    from memcached_gitops.render import INSTANCE_LABEL

    meta = rendered["metadata"]
    return meta.get("namespace") or namespace, (meta.get("labels") or {}).get(INSTANCE_LABEL, meta["name"])


def _rendered_by_cr(rendered: list[dict[str, Any]], namespace: str) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """The (kind, name) of each object rendered, by the CR it is of."""
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for obj in rendered:
        out.setdefault(_cr_of(obj, namespace), set()).add((obj["kind"], obj["metadata"]["name"]))
    return out


def _no_longer_wanted(api: Any, ns: str, cr: str, wanted: dict[tuple[str, str], set[tuple[str, str]]]) -> list[tuple[str, bool]] | None:
    """The lines of the companions the reconciler deletes (decisions/companions.steps): one of the
    CR's name that its rendering no longer has (a budget once spec.size is 1), live and controlled by
    the Memcached; None on an error. A budget Argo CD applied is its to prune, not the reconciler's."""
    from memcached_gitops.render.companions import object_name

    from ..decisions.companions import Move, relation
    from ..decisions.vocabulary import COMPANIONS

    lines = []
    name = object_name(cr)
    for resource in COMPANIONS:
        if (resource.kind, name) in wanted.get((ns, cr), set()):
            continue
        read, live = _read(api, resource, ns, name)
        if not read:
            return None
        if live is not None and relation(live, _as_this_cr(live, cr)) is Move.KEEP:
            lines.append((f"{ns}/{cr}: {resource.kind} {name}: not in the rendering; the reconciler deletes it", True))
    return lines


def _as_this_cr(live: dict[str, Any], cr: str) -> dict[str, Any]:
    """The CR ``cr`` as far as diff knows it (it reads no CR): a controller that is a Memcached of that
    name is taken for this one, so its uid is the CR's."""
    from memcached_gitops.foundation.identities import KIND

    from ..decisions.ownership import controller_of

    controller = controller_of(live) or {}
    uid = controller.get("uid") if (controller.get("kind"), controller.get("name")) == (KIND, cr) else None
    return {"metadata": {"name": cr, "uid": uid}}


def _left_alone(live: dict[str, Any], kind: str, cr: str) -> bool:
    """Whether the reconciler leaves ``live`` alone as another's (ownership.classify for the
    Deployment, companions.relation for the others): controlled by anything but the Memcached named
    ``cr``, or by nothing and not labelled as its rendering. diff reads no CR, so a controller that
    is a Memcached of that name is taken for this one."""
    from ..decisions.companions import Move, relation
    from ..decisions.ownership import Ownership, classify
    from ..decisions.vocabulary import DEPLOYMENTS
    from .cycle import Options

    ref = _as_this_cr(live, cr)
    if kind == DEPLOYMENTS.kind:
        return classify(live, ref, Options().field_manager) is Ownership.FOREIGN
    return relation(live, ref) is Move.FOREIGN
