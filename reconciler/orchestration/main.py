"""The reconcile command's wiring: connect, then run one LIST-based cycle (``--once``) or the
event-driven controller, with its metrics, leader election or shards.

The kubernetes client is imported inside ``run``, so that the command line starts fast."""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Any

from memcached_gitops.schemas import CRD

from ..client.api import USER_AGENT


def connect(kubeconfig: str | None, context: str | None, host: str | None, **kwargs: Any) -> Any:
    """The API client, or None after a clear one-line error (the callers exit 2)."""
    from ..client.api import KubeAPI

    try:
        return KubeAPI.connect(kubeconfig, context, host=host, **kwargs)
    except Exception as exc:  # no usable configuration
        if kubeconfig or host:  # the client's words do not name the file (Invalid kube-config file. No configuration found.)
            print(f"error: cannot configure the Kubernetes client from {kubeconfig or host}: {exc}", file=sys.stderr)
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


@dataclass(frozen=True)
class Serving:
    """Where the probes and the metrics are served (kubebuilder v4's flags and defaults): the probes
    over plain HTTP on their own port, /metrics over HTTPS behind TokenReview and SubjectAccessReview
    unless ``metrics_secure`` is off, in which case one plain server answers all three on the metrics
    port. A port of 0 switches that server off."""

    metrics_port: int = 8443
    metrics_bind_address: str = "0.0.0.0"
    metrics_secure: bool = True
    metrics_cert_dir: str | None = None  # tls.crt and tls.key; none: a self-signed pair made at start
    health_probe_port: int = 8081
    health_probe_bind_address: str = "0.0.0.0"


class ListenError(Exception):
    """A server's port could not be opened: the one-line message names the flag that chose it."""


def _listen(servers: list[Any], flag: str, host: str, port: int, start: Any) -> None:
    """``start()``'s server appended to ``servers``; a port that cannot be opened (another
    reconciler on the host already holds 8081) is a ListenError naming ``flag``, after the servers
    already started are shut down, instead of a traceback."""
    try:
        servers.append(start())
    except OSError as exc:
        for server in servers:
            server.shutdown()
            server.server_close()
        reason = exc.strerror or str(exc)
        raise ListenError(f"cannot listen on {host}:{port} ({flag}): {reason}") from None


def start_servers(api: Any, metrics: Any, serving: Serving) -> list[Any]:
    """Start the probe and metrics servers ``serving`` asks for; the TokenReviews and
    SubjectAccessReviews go through a client of their own that may write whoever leads (they are
    reviews, not writes), sharing the connection pool and the request counts. Raises ListenError."""
    import ssl

    from ..client.api import KubeAPI, RetryPolicy
    from ..client.reviews import AccessReviews
    from .serving import METRICS, PROBES, bearer_guard, serve
    from .tls import ServingCertificate

    servers: list[Any] = []
    probe_host, metrics_host = serving.health_probe_bind_address, serving.metrics_bind_address
    certificate = None
    if serving.metrics_port and serving.metrics_secure:
        # loaded before any server starts: a folder without its pair (a Secret not mounted, a wrong
        # --metrics-cert-dir) is one line naming the flag, not a traceback beside a running probe server
        try:
            certificate = ServingCertificate(serving.metrics_cert_dir)
        except (OSError, ssl.SSLError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            if getattr(exc, "filename", None):  # which of the pair: tls.crt or tls.key
                reason = f"{exc.filename}: {reason}"
            raise ListenError(f"cannot load the metrics certificate from {serving.metrics_cert_dir} (--metrics-cert-dir): "
                              f"{reason}") from None
    if serving.health_probe_port:
        _listen(servers, "--health-probe-port", probe_host, serving.health_probe_port,
                lambda: serve(metrics, serving.health_probe_port, probe_host, paths=PROBES, name="probe-server"))
    if serving.metrics_port and serving.metrics_secure:
        reviewer = KubeAPI(client=api.client, retry=RetryPolicy(attempts=3), timeout=10.0, requests=api.requests,
                           results=api.results, stop=api.stop, user_agent=api.user_agent)
        _listen(servers, "--metrics-port", metrics_host, serving.metrics_port,
                lambda: serve(metrics, serving.metrics_port, metrics_host, paths=METRICS, guard=bearer_guard(AccessReviews(reviewer)),
                              certificate=certificate))
    elif serving.metrics_port:
        paths = METRICS if serving.health_probe_port else PROBES + METRICS
        _listen(servers, "--metrics-port", metrics_host, serving.metrics_port,
                lambda: serve(metrics, serving.metrics_port, metrics_host, paths=paths))
    return servers


def run(*, once: bool, interval: float | None, namespaces: tuple[str, ...], field_manager: str, dry_run: bool,
        kubeconfig: str | None, context: str | None, crd: CRD, image: str, leader_elect: bool, lease_namespace: str,
        serving: Serving, host: str | None = None, adopt: bool = False, detect_only: bool = False, workers: int | None = None,
        shards: bool = False) -> int:
    """Connect and run ``--once`` (one LIST-based cycle) or the event-driven mode; returns the exit code."""
    from ..client.leader import LeaderElector
    from ..client.shards import ShardRing
    from .controller import DEFAULT_RESYNC, DEFAULT_WORKERS, Controller, Settings, lease_client
    from .cycle import Options, Reconciler
    from .loop import install_stop_handlers, run_once
    from .metrics import Metrics

    stop = threading.Event()
    identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    api = connect(kubeconfig, context, host, stop=stop, user_agent=f"{USER_AGENT} {identity}")
    if api is None:
        return 2
    options = Options(namespaces=namespaces, field_manager=field_manager, image=image, dry_run=dry_run, adopt=adopt,
                      detect_only=detect_only, served_by=identity if shards and not once else "")
    reconciler = Reconciler(api, crd, options, stop)
    install_stop_handlers(stop)
    if once:
        return run_once(reconciler)
    metrics = Metrics()
    try:
        servers = start_servers(api, metrics, serving)
    except ListenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    elector, ring = None, None
    if shards:
        ring = ShardRing(lease_client(api, 10.0), lease_namespace, identity)
    elif leader_elect and not dry_run:
        elector = LeaderElector(lease_client(api, 10.0), lease_namespace, identity)
    settings = Settings(workers=workers or DEFAULT_WORKERS, resync=interval or DEFAULT_RESYNC)
    controller = Controller(reconciler, metrics, elector, settings, shards=ring)
    try:
        code = controller.run()
        if controller.error:
            print(f"error: {controller.error}", file=sys.stderr)
        return code
    finally:
        for server in servers:
            server.shutdown()
