"""Optional parts of the install, and the one-line message when a command needs a missing one.

The Kubernetes client (with aiohttp, pydantic and their dependencies) is the ``[cluster]`` extra:
CI jobs and the Argo CD plugin run ``validate`` and ``render`` only, and should not pay for it.
``reconcile`` and ``diff`` check for it before doing any work, so that a plain install says what
to install instead of failing halfway with an ImportError.
"""

from __future__ import annotations

from importlib.util import find_spec

CLUSTER_EXTRA = "memcached-gitops[cluster]"
KUSTOMIZE_EXTRA = "memcached-gitops[kustomize]"
#: The top-level module of each dependency that a plain install may lack, and what installs it.
#: cel-python (celpy, with lark) is a core dependency: missing, the install itself is broken.
OPTIONAL_MODULES = {
    "kubernetes": f"the Kubernetes client: pip install '{CLUSTER_EXTRA}'",
    "prometheus_client": f"prometheus-client (the reconciler's /metrics): pip install '{CLUSTER_EXTRA}'",
    "cryptography": f"cryptography (the /metrics certificate): pip install '{CLUSTER_EXTRA}'",
    "celpy": "cel-python (the CRD's CEL rules), a dependency of memcached-gitops: the install is incomplete, "
             "install memcached-gitops again",
    "lark": "lark (cel-python's parser), a dependency of memcached-gitops: the install is incomplete, install memcached-gitops again",
}


def missing_cluster_client(command: str) -> str | None:
    """None when the [cluster] extra (the kubernetes client, prometheus-client for the reconciler's
    /metrics, cryptography for its certificate) can be imported, otherwise the reason and the
    install command."""
    for module in ("kubernetes", "prometheus_client", "cryptography"):
        if find_spec(module) is None:
            return f"{command} talks to a cluster and needs {OPTIONAL_MODULES[module]}"
    return None


def missing_module(exc: ImportError) -> str | None:
    """The one line for an ImportError of a dependency the install may lack (None for any other:
    that one is a bug, and keeps its traceback). Raised wherever a command first needs the module,
    since each is imported late so that the commands that do not need it start fast."""
    root = (exc.name or "").split(".")[0]
    if root not in OPTIONAL_MODULES:
        return None
    return f"{root} is not installed; this command needs {OPTIONAL_MODULES[root]}"
