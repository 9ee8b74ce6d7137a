"""The diff verb against a cluster: rendered Deployments compared with the live ones as the
reconciler would compare them (plan.py), and the drift printed."""

from __future__ import annotations

import sys
from typing import Any

from .main import connect


def diff_live(rendered: list[dict[str, Any]], namespace: str, kubeconfig: str | None, context: str | None,
              host: str | None = None, ignores: dict[tuple[str, str], tuple[tuple[str, ...], ...]] | None = None) -> int:
    """Compare rendered Deployments with the cluster as the reconciler would (plan.py: a kept
    selector, an HPA's replicas, the CR's ignored paths, keyed by (namespace, name) in ``ignores``);
    print the drift report; 0 none, 1 drift, 2 error. Ignored drift is listed and does not count."""
    from ..client.api import APIError, collection_path, is_forbidden, is_not_found, object_path
    from ..decisions.autoscalers import autoscalers_by_target
    from ..decisions.plan import plan
    from ..decisions.vocabulary import AUTOSCALERS, DEPLOYMENTS, IGNORE_PATHS_ANNOTATION
    from .cycle import Options

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
    for desired in (m for m in rendered if m["kind"] == DEPLOYMENTS.kind):  # what the reconciler corrects
        ns = desired["metadata"].get("namespace") or namespace
        name = desired["metadata"]["name"]
        try:
            live = api.request("GET", object_path(*DEPLOYMENTS.gvr, ns, name))
        except APIError as exc:
            if not is_not_found(exc):
                print(f"error: {ns}/{name}: {exc}", file=sys.stderr)
                return 2
            live = None
        planned = plan(desired, live, Options().field_manager, autoscalers.get((ns, name), ""), (ignores or {}).get((ns, name), ()))
        for d in planned.drift:
            drifted = True
            print(f"{ns}/{name}: " + ("missing: the Deployment does not exist" if live is None else d.describe()))
        for d in planned.ignored:
            print(f"{ns}/{name}: ignored ({IGNORE_PATHS_ANNOTATION}): {d.describe()}")
    return 1 if drifted else 0
