"""The in-cluster drift reconciler: server-side apply, status conditions, events, leader election.

The kubernetes client is imported only below this package, so that ``render`` and ``validate``
start fast. Layers: api.py talks to the API server; drift.py, managedfields.py, status.py and
fights.py are pure; cycle.py decides and writes (one CR, or a LIST-based cycle); informer.py,
workqueue.py and controller.py make the event-driven mode; loop.py, leader.py and metrics.py run them.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from typing import Any

from memcached_gitops.schemas import CRD

from .api import USER_AGENT


def _connect(kubeconfig: str | None, context: str | None, host: str | None, **kwargs: Any) -> Any:
    """The API client, or None after a clear one-line error (the callers exit 2)."""
    from .api import KubeAPI

    try:
        return KubeAPI.connect(kubeconfig, context, host=host, **kwargs)
    except Exception as exc:  # no usable configuration
        if kubeconfig or host:
            print(f"error: cannot configure the Kubernetes client: {exc}", file=sys.stderr)
        else:  # client-go's last fallback (in-cluster) speaks of a Service host: say what was looked for instead
            found = os.environ.get("KUBECONFIG") or os.path.exists(os.path.expanduser("~/.kube/config"))
            why = f": {exc}" if found else ""
            print(f"error: no Kubernetes cluster configured (tried {kubeconfig_sources()}){why}; "
                  "give --kubeconfig or set $KUBECONFIG", file=sys.stderr)
        return None


def kubeconfig_sources() -> str:
    """The places kubectl looks for a cluster, and what each held, for the one-line error of a run
    that found none (client-go's loading rules: $KUBECONFIG, ~/.kube/config, then in-cluster)."""
    env = os.environ.get("KUBECONFIG")
    home = os.path.expanduser("~/.kube/config")
    in_cluster = "KUBERNETES_SERVICE_HOST " + ("set" if os.environ.get("KUBERNETES_SERVICE_HOST") else "unset")
    return "; ".join([f"$KUBECONFIG={env}" if env else "$KUBECONFIG unset",
                      f"{home} " + ("present" if os.path.exists(home) else "not found"),
                      f"in-cluster ({in_cluster})"])


def run(*, once: bool, interval: float | None, namespaces: tuple[str, ...], field_manager: str, dry_run: bool,
        kubeconfig: str | None, context: str | None, crd: CRD, image: str, leader_elect: bool, lease_namespace: str,
        metrics_port: int, host: str | None = None,
        metrics_bind_address: str = "0.0.0.0", adopt: bool = False, detect_only: bool = False, workers: int = 4,
        shards: bool = False) -> int:
    """Connect and run ``--once`` (one LIST-based cycle) or the event-driven mode; returns the exit code."""
    from .controller import DEFAULT_RESYNC, Controller, Settings, lease_client
    from .cycle import Options, Reconciler
    from .leader import LeaderElector
    from .loop import install_stop_handlers, run_once
    from .metrics import Metrics, serve
    from .shards import ShardRing

    stop = threading.Event()
    identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    api = _connect(kubeconfig, context, host, stop=stop, user_agent=f"{USER_AGENT} {identity}")
    if api is None:
        return 2
    options = Options(namespaces=namespaces, field_manager=field_manager, image=image, dry_run=dry_run, adopt=adopt,
                      detect_only=detect_only, served_by=identity if shards and not once else "")
    reconciler = Reconciler(api, crd, options, stop)
    install_stop_handlers(stop)
    if once:
        return run_once(reconciler)
    metrics = Metrics()
    server = serve(metrics, metrics_port, metrics_bind_address) if metrics_port else None
    elector, ring = None, None
    if shards:
        ring = ShardRing(lease_client(api, 10.0), lease_namespace, identity)
    elif leader_elect and not dry_run:
        elector = LeaderElector(lease_client(api, 10.0), lease_namespace, identity)
    controller = Controller(reconciler, metrics, elector, Settings(workers=workers, resync=interval or DEFAULT_RESYNC), shards=ring)
    try:
        code = controller.run()
        if controller.error:
            print(f"error: {controller.error}", file=sys.stderr)
        return code
    finally:
        if server:
            server.shutdown()


def diff_live(rendered: list[dict[str, Any]], namespace: str, kubeconfig: str | None, context: str | None,
              host: str | None = None, ignores: dict[tuple[str, str], tuple[tuple[str, ...], ...]] | None = None) -> int:
    """Compare rendered Deployments with the cluster as the reconciler would (plan.py: a kept
    selector, an HPA's replicas, the CR's ignored paths, keyed by (namespace, name) in ``ignores``);
    print the drift report; 0 none, 1 drift, 2 error. Ignored drift is listed and does not count."""
    from .api import APIError, collection_path, object_path
    from .autoscalers import GROUP, PLURAL, VERSION, autoscalers_by_target
    from .cycle import Options
    from .ignore import ANNOTATION
    from .plan import plan

    api = _connect(kubeconfig, context, host)
    if api is None:
        return 2
    autoscalers: dict[tuple[str, str], str] = {}
    for ns in sorted({d["metadata"].get("namespace") or namespace for d in rendered}):
        try:
            autoscalers |= autoscalers_by_target(api.list_all(collection_path(GROUP, VERSION, PLURAL, ns), None))
        except APIError as exc:  # not allowed to read HPAs: replicas are compared with spec.size
            if exc.status not in (403, 404):
                print(f"error: {ns}: {exc}", file=sys.stderr)
                return 2
    drifted = False
    for desired in (m for m in rendered if m["kind"] == "Deployment"):  # what the reconciler corrects
        ns = desired["metadata"].get("namespace") or namespace
        name = desired["metadata"]["name"]
        try:
            live = api.request("GET", object_path("apps", "v1", "deployments", ns, name))
        except APIError as exc:
            if exc.status != 404:
                print(f"error: {ns}/{name}: {exc}", file=sys.stderr)
                return 2
            live = None
        planned = plan(desired, live, Options().field_manager, autoscalers.get((ns, name), ""), (ignores or {}).get((ns, name), ()))
        for d in planned.drift:
            drifted = True
            print(f"{ns}/{name}: " + ("missing: the Deployment does not exist" if live is None else d.describe()))
        for d in planned.ignored:
            print(f"{ns}/{name}: ignored ({ANNOTATION}): {d.describe()}")
    return 1 if drifted else 0
