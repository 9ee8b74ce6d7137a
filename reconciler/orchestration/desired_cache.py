"""What a CR asks for, kept per CR: its Deployment with the controller ownerReference, the problems
that refuse it, and its Service and budget. Validated and rendered through the step every command
shares (render/desired.py ``validate_and_render``), once per uid and generation: a Deployment event
(the drift to correct) then costs no validation and no rendering."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

from memcached_gitops.foundation.identities import owner_reference
from memcached_gitops.render.desired import validate_and_render
from memcached_gitops.schemas import Problem, Validator

from ..decisions.vocabulary import COMPANIONS

#: CRs whose desired Deployment is kept between events (least recently reconciled dropped first):
#: a few KiB each, so a bounded share of the cache's memory, enough for every CR of most clusters.
DESIRED_KEPT = 1024


class DesiredCache:
    """The rendering of each CR, least recently reconciled dropped first past ``DESIRED_KEPT``; shared
    by the workers (a lock)."""

    def __init__(self, validator: Validator, image: str) -> None:
        self.validator, self.image = validator, image
        #: (namespace, name) -> ((uid, generation), Deployment, problems, companions)
        self.kept: OrderedDict[tuple[str, str], tuple[tuple[Any, Any], dict[str, Any] | None, list[Problem],
                                                      list[dict[str, Any]]]] = OrderedDict()
        self._lock = threading.Lock()

    def desired_for(self, cr: dict[str, Any]) -> tuple[dict[str, Any] | None, list[Problem]]:
        """The Deployment a CR asks for, with its controller ownerReference (None and the problems
        when the CR is invalid or cannot be rendered). Kept per CR for its uid and generation.
        Callers never change the answer (``keep_live_selector`` copies)."""
        meta = cr["metadata"]
        key, version = (meta.get("namespace", ""), meta["name"]), (meta.get("uid"), meta.get("generation"))
        with self._lock:
            kept = self.kept.get(key)
            if kept is not None and kept[0] == version and None not in version:
                self.kept.move_to_end(key)
                return kept[1], kept[2]
        verdict = validate_and_render(self.validator, copy.deepcopy(cr), self.image)
        desired, companions = None, list[dict[str, Any]]()
        if verdict.ok:
            desired = verdict.manifests[0]
            desired["metadata"]["ownerReferences"] = [owner_reference(cr)]
            # the Service and the budget; a PodMonitor is left to the tool that applies the rendering
            # (its kind is served only where the prometheus-operator's CRDs are installed)
            companions = [m for m in verdict.manifests[1:] if m["kind"] in {r.kind for r in COMPANIONS}]
        with self._lock:
            self.kept[key] = (version, desired, verdict.problems, companions)
            self.kept.move_to_end(key)
            while len(self.kept) > DESIRED_KEPT:
                self.kept.popitem(last=False)
        return desired, verdict.problems

    def companions_of(self, cr: dict[str, Any]) -> list[dict[str, Any]]:
        """The Service and (two Pods or more) the PodDisruptionBudget kept with the CR's Deployment,
        as rendered (render/companions.py), without owner; empty when ``desired_for`` has not kept it."""
        meta = cr["metadata"]
        with self._lock:
            kept = self.kept.get((meta.get("namespace", ""), meta["name"]))
        return list(kept[3]) if kept is not None else []
