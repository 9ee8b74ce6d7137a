"""Pure rendering of Memcached CRs into Kubernetes manifests (no I/O, no kubernetes client)."""

from memcached_gitops.foundation.identities import INSTANCE_LABEL, MANAGED_BY_LABEL

from .deployment import (
    DEFAULT_IMAGE,
    MANAGED_BY,
    RenderError,
    render,
    render_deployment,
    selector_labels,
)
from .serialize import to_json, to_single, to_yaml, write_json, write_yaml

__all__ = [
    "DEFAULT_IMAGE", "INSTANCE_LABEL", "MANAGED_BY", "MANAGED_BY_LABEL", "RenderError", "render", "render_deployment", "selector_labels",
    "to_json", "to_single", "to_yaml", "write_json", "write_yaml",
]
