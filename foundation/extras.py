"""Optional parts of the install, and the one-line message when a command needs a missing one.

The Kubernetes client (with aiohttp, pydantic and their dependencies) is the ``[cluster]`` extra:
CI jobs and the Argo CD plugin run ``validate`` and ``render`` only, and should not pay for it.
``reconcile`` and ``diff`` check for it before doing any work, so that a plain install says what
to install instead of failing halfway with an ImportError.
"""

from __future__ import annotations

from importlib.util import find_spec

CLUSTER_EXTRA = "memcached-gitops[cluster]"


def missing_cluster_client(command: str) -> str | None:
    """None when the [cluster] extra (the kubernetes client, prometheus-client for the reconciler's
    /metrics) can be imported, otherwise the reason and the install command."""
    if find_spec("kubernetes") is not None and find_spec("prometheus_client") is not None:
        return None
    return f"{command} talks to a cluster and needs the Kubernetes client: pip install '{CLUSTER_EXTRA}'"
