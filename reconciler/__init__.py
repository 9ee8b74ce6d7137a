"""The in-cluster drift reconciler: server-side apply, status conditions, events, leader election.

Three floors, each a package (docs/architecture.md draws them):

- ``decisions/``: pure functions: what drifted, what an apply carries, who owns a field, the status
  conditions, fights with other writers, selectors, the HPA hand-off, ignored paths, the vocabulary;
- ``client/``: the Kubernetes API side: requests (api), the informer's LIST and WATCH, the work
  queue, Events, Leases for leader election and shards;
- ``orchestration/``: what runs them: the per-CR step and the ``--once`` cycle, the event-driven
  controller, the loop, metrics, the command's wiring and the diff verb.

The kubernetes client is imported only below this package, and lazily, so that ``render`` and
``validate`` start fast. This file only re-exports the entry points the command line calls.
"""

from __future__ import annotations

from .orchestration.diff import diff_live
from .orchestration.main import Serving, kubeconfig_sources, run

__all__ = ["Serving", "diff_live", "kubeconfig_sources", "run"]
