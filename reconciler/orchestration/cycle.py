"""One reconcile cycle over every Memcached in scope.

1. LIST Memcacheds, LIST Deployments labelled ``app.kubernetes.io/managed-by=memcached-gitops``,
   LIST the Pods with that label (paginated), LIST the HorizontalPodAutoscalers (autoscalers.py),
   and GET the CRD once to learn which status fields it declares. No per-object GET in a steady state.
2. For each CR: validate with the same validator as ``memcached-gitops validate``; render; add the
   controller ownerReference.
3. Compare with the live Deployment on the fields we set (drift.py). Equal: no write. Different or
   missing: one server-side apply with force. A Deployment that a CR names but that is not in
   the labelled LIST is looked up once before creating, so that a foreign Deployment of the same
   name is never taken over (``Degraded``, reason ``ResourceNotOwned``). A GitOps-applied one
   (ownership.py) is observed, not written, unless ``adopt`` is set: then one apply adds the
   controller ownerReference and corrects its drift. So is one another controller created for the
   CR (the seeds' Go operators): adopted, it keeps its selector, which is immutable (selectors.py),
   and a kept selector that shares Pods with another Deployment is reported on the CR.
4. Status through the status subresource under its own field manager, only when it changed.
5. One Event on the CR per reconcile naming every object it created or corrected, and one per failure.

One bad CR never stops the others; a stop request (SIGTERM) ends the cycle after the current CR.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memcached_gitops.foundation.clocks import SYSTEM_CLOCK, Clock
from memcached_gitops.foundation.excerpt import excerpt
from memcached_gitops.foundation.identities import IGNORE_PATHS_ANNOTATION as IGNORE_ANNOTATION
from memcached_gitops.foundation.product import NAME
from memcached_gitops.render import DEFAULT_IMAGE
from memcached_gitops.schemas import CRD, Problem, Validator

from ..client.api import APIError, KubeAPI, collection_path, is_forbidden, is_not_found, object_path
from ..client.events import EventRecorder, now_rfc3339
from ..decisions.autoscalers import autoscalers_by_target, replicas_setters
from ..decisions.drift import Drift
from ..decisions.fights import Correction
from ..decisions.ignore import Ignored, IgnoreError, Pointer, ignored_paths
from ..decisions.ownership import Ownership, classify, spec_manager
from ..decisions.plan import plan
from ..decisions.reasons import EventReason, Reason
from ..decisions.revoke import revocation
from ..decisions.selectors import describe as describe_selector
from ..decisions.selectors import foreign_owners, has_kept_selector, overlapping, selector_of
from ..decisions.status import Observation
from ..decisions.vocabulary import (
    AUTOSCALERS,
    COMPANIONS,
    DEPLOYMENTS,
    FAILURES,
    INSTANCE_LABEL,
    MESSAGE_LIMIT,
    PODS,
    RECONCILE_ANNOTATION,
    RECONCILE_MODES,
    REQUESTED_AT_ANNOTATION,
    REQUESTED_AT_LIMIT,
    SELECTOR,
    WRITES,
    Action,
    Resource,
    bounded,
    for_log,
)
from .companion_step import concurrently, find_new, reconcile_companions
from .desired_cache import DesiredCache
from .write_apply import WriteFailure, correct
from .write_status import declared_fields, requested_at, write_status

log = logging.getLogger("memcached_gitops.reconciler")
#: Called before the status write with the fields just corrected, of the Deployment and of its
#: companions, each with its object (empty: none); answers a (reason, message) that makes the CR
#: Degraded, or None. The event-driven mode's fight detector.
DegradedCheck = Callable[[dict[str, Any], list[Correction]], "tuple[str, str] | None"]
#: A companion as the cache holds it (None: not there): (resource, namespace, name) -> object.
CompanionLookup = Callable[[Resource, str, str], "dict[str, Any] | None"]
#: The Deployments of a namespace with a kept selector (selectors.py), for the overlap report.
Neighbours = Callable[[str], Iterable[dict[str, Any]]]
#: Items per LIST page: large enough that a cluster of a few thousand CRs costs one page per kind
#: (the steady state then makes 5 requests), small enough to bound one answer's size.
PAGE_SIZE = 5000


@dataclass
class Options:
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    field_manager: str = NAME
    status_manager: str = f"{NAME}-status"
    image: str = DEFAULT_IMAGE
    dry_run: bool = False
    detect_only: bool = False  # report drift (status, Events, metrics, log), never write a Deployment
    events: bool = True
    adopt: bool = False  # take over GitOps-applied Deployments (ownership.py)
    served_by: str = ""  # reconcile --shards: this replica, written as status.servedBy where the CRD declares it


@dataclass
class CompanionOutcome:
    """What one reconcile found and did of the CR's Service and budget (companion_step.py)."""

    applied: list[dict[str, Any]] = field(default_factory=list)  # the Service and budget as our applies left them
    removed: list[tuple[Resource, str]] = field(default_factory=list)  # deleted: (resource, name)
    drift: list[tuple[str, Drift]] = field(default_factory=list)  # (kind name, drift) corrected or found
    detected: list[str] = field(default_factory=list)  # what detect-only left unwritten, one line each
    ignored: list[tuple[str, Drift]] = field(default_factory=list)  # (kind name, drift) at ignored paths: left alone
    corrected: list[Correction] = field(default_factory=list)  # the fields our applies put back (the fight detector's)
    read: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (kind, object) found by a GET, not cached


@dataclass
class CROutcome:
    namespace: str
    name: str
    action: Action
    drift: list[Drift] = field(default_factory=list)
    error: str = ""
    deployment: dict[str, Any] | None = None  # as our apply left it
    cr: dict[str, Any] | None = None  # as our status write left it
    applied_at: float = 0.0  # monotonic time the apply finished
    ignored: list[Drift] = field(default_factory=list)  # drift at the CR's ignored paths (ignore.py): never corrected
    read: dict[str, Any] | None = None  # the Deployment as a GET read it (not in the cache), when not written
    served_by_deferred: bool = False  # reconcile_cr(lazy_served_by=True): only status.servedBy was out of date
    companions: CompanionOutcome = field(default_factory=CompanionOutcome)  # the Service's and the budget's
    failures: list[WriteFailure] = field(default_factory=list)  # each refused write, by object: the others still went on

    @property
    def permanent(self) -> bool:
        """Every refused write was refused for good (422, 403): retried at the resync or on a change."""
        return bool(self.failures) and all(f.permanent for f in self.failures)


@dataclass
class CycleReport:
    outcomes: list[CROutcome] = field(default_factory=list)
    complete: bool = True  # False when stopped early or a LIST failed
    error: str = ""
    duration: float = 0.0

    @property
    def failed(self) -> list[CROutcome]:
        return [o for o in self.outcomes if o.action in FAILURES]

    @property
    def drifted(self) -> list[CROutcome]:
        return [o for o in self.outcomes if o.action in WRITES]


class Visit:
    """One reconcile of one CR: what it was given (reconcile_cr's inputs, in one object that every
    step takes), and the outcome it builds."""

    def __init__(self, reconciler: Reconciler, cr: dict[str, Any], pods: tuple[str, ...], declared: frozenset[str] | None,
                 condition_fields: frozenset[str] | None, lazy_served_by: bool = False, *, degraded: DegradedCheck | None = None,
                 neighbours: Neighbours | None = None, autoscaler: str = "", lookup: CompanionLookup | None = None) -> None:
        self.reconciler, self.cr, self.pods = reconciler, cr, pods
        self.declared, self.condition_fields, self.lazy_served_by = declared, condition_fields, lazy_served_by
        self.degraded, self.neighbours = degraded, neighbours  # the fight detector; the kept selectors of a namespace
        self.autoscaler, self.lookup = autoscaler, lookup  # the HPA that scales the Deployment; the cached companions
        self.replicas_by = ""  # who sets the replicas that the CR's ignore-paths leaves to others (Reconciler._plan)
        self.corrected = False  # the Deployment's drift corrected by our apply (Reconciler._correct), whatever else failed
        self.namespace, self.name = cr["metadata"].get("namespace", ""), cr["metadata"]["name"]
        self.generation = cr["metadata"].get("generation", 1)
        self.result = CROutcome(self.namespace, self.name, Action.UNCHANGED)
        self.shared = ""  # the report of a selector that would take in another owner's Pods (Reconciler._shared)
        self.prefetched: dict[tuple[str, str], dict[str, Any] | None] = {}  # companions read beside the Deployment: (kind, name)
        self.told: list[tuple[str, str]] = []  # (reason, message) of each object created, corrected or deleted

    def tell(self, reason: str, message: str) -> None:
        """Keep what a write did for the reconcile's one Event (Reconciler._tell)."""
        self.told.append((reason, message))

    def status(self, obs: Observation) -> None:
        """Write the status ``obs`` asks for, when it changed; the outcome keeps the CR as written."""
        written = self.reconciler.write_status(self.cr, obs, self.declared, self.condition_fields, self.lazy_served_by, self.result)
        self.result.cr = written or self.result.cr

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Reconciler:
    """Holds the validator (built once) and runs cycles."""

    def __init__(self, api: KubeAPI, crd: CRD, options: Options | None = None, stop: threading.Event | None = None,
                 process_clock: Clock = SYSTEM_CLOCK) -> None:
        self.api, self.crd, self.process_clock = api, crd, process_clock  # durations and applied_at (foundation/clocks)
        self.options = options or Options()
        self.validator = Validator(crd)
        self.stop = stop or threading.Event()
        self.version = crd.storage_version or next(iter(crd.versions))
        self._reported_schema_errors: set[tuple[str, str]] = set()
        self.clock = now_rfc3339  # lastTransitionTime of the conditions
        self.events = EventRecorder(api, enabled=self.options.events and not self.options.dry_run)
        self.desired = DesiredCache(self.validator, self.options.image)  # what each CR asks for, per uid and generation
        self._unreadable: set[str] = set()  # kinds already said to be unreadable (_optional)
        self._failing = threading.Lock()  # a new Deployment's apply and its companions' writes fail side by side (_failed)
        self.schema_known = False  # the served CRD was read (status_schema): its columns are written
        #: Whether a name is known to be free (the controller's name indexes: client/caches.py ``absent``);
        #: the once mode has no index and GETs each name it would create.
        self.absent: Callable[[Resource, str, str], bool] = lambda resource, ns, name: False
        #: The Pods a selector selects, from the controller's cache of every Pod our selectors could select
        #: (client/caches.py ``selected``); None: not known, a LIST answers (the once mode, a kept selector).
        self.selected: Callable[[str, dict[str, Any]], list[dict[str, Any]] | None] = lambda ns, selector: None

    # ---- reading
    def _list(self, group: str, version: str, plural: str, selector: str | None = None) -> list[dict[str, Any]]:
        scopes = self.options.namespaces or (None,)
        items: list[dict[str, Any]] = []
        for ns in scopes:
            items += self.api.list_all(collection_path(group, version, plural, ns), selector, limit=PAGE_SIZE)
        return items

    def status_schema(self) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        """The status fields the served CRD declares (a GET of the CRD; None when it cannot be read)."""
        try:
            crd = self.api.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{self.crd.plural}.{self.crd.group}")
        except APIError as exc:
            log.info("cannot read the served CRD (%s); writing only conditions and nodes", exc)
            self.schema_known = False
            return frozenset({"conditions", "nodes"}), frozenset({"type", "status", "reason", "message", "lastTransitionTime"})
        self.schema_known = True
        return declared_fields(crd, self.version)

    def _optional(self, read: Callable[[], Any], what: str, without: str) -> Any:
        """``read()``, or None with one log line per kind when ``what`` cannot be listed (an RBAC
        from before the reconciler read it): the cycle goes on ``without`` it."""
        try:
            return read()
        except APIError as exc:
            if not (is_forbidden(exc) or is_not_found(exc)):
                raise
            if what not in self._unreadable:
                self._unreadable.add(what)
                log.warning("cannot list %s (%s); %s", what, exc, without)
            return None

    def autoscalers(self) -> dict[tuple[str, str], str]:
        """The HPA of each scaled Deployment in scope (autoscalers.py); empty when HPAs cannot be
        read: replicas then follow spec.size."""
        found = self._optional(lambda: autoscalers_by_target(self._list(*AUTOSCALERS.gvr)), "HorizontalPodAutoscalers",
                               "replicas follow spec.size")
        return found if found is not None else {}

    def companions(self) -> CompanionLookup | None:
        """The labelled Services and budgets in scope, as a lookup; None when they cannot be listed:
        then only the Deployment is reconciled, as before."""

        def read() -> dict[tuple[str, str, str], dict[str, Any]]:
            return {(resource.kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]): obj
                    for resource in COMPANIONS for obj in self._list(*resource.gvr, SELECTOR)}

        found = self._optional(read, "Services or PodDisruptionBudgets", "only Deployments are reconciled")
        return None if found is None else lambda resource, ns, name: found.get((resource.kind, ns, name))

    # ---- the cycle
    def run_cycle(self) -> CycleReport:
        started = self.process_clock.monotonic().seconds
        report = CycleReport()
        try:
            crs = self._list(self.crd.group, self.version, self.crd.plural)
            deployments = self._list(*DEPLOYMENTS.gvr, SELECTOR)
            pods = self._list(*PODS.gvr, SELECTOR)
            autoscalers = self.autoscalers()
            companions = self.companions()
            declared, condition_fields = self.status_schema()
        except APIError as exc:
            report.complete, report.error = False, f"listing failed: {exc}"
            log.error("cycle could not run: %s", report.error)
            report.duration = self.process_clock.monotonic().seconds - started
            return report
        by_name = {(d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in deployments}
        kept: dict[str, dict[str, dict[str, Any]]] = {}
        for d in deployments:
            if has_kept_selector(d):
                kept.setdefault(d["metadata"].get("namespace", ""), {})[d["metadata"]["name"]] = d
        pods_by_owner: dict[tuple[str, str], list[str]] = {}
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            owner = (pod["metadata"].get("namespace", ""), labels.get(INSTANCE_LABEL, ""))
            pods_by_owner.setdefault(owner, []).append(pod["metadata"]["name"])
        for cr in sorted(crs, key=lambda c: (c["metadata"].get("namespace", ""), c["metadata"]["name"])):
            if self.stop.is_set():
                report.complete = False
                report.error = "stopped before every CR was handled"
                break
            key = (cr["metadata"].get("namespace", ""), cr["metadata"]["name"])
            try:
                outcome = self.reconcile_cr(cr, by_name.get(key), tuple(pods_by_owner.get(key, [])), declared, condition_fields,
                                            neighbours=lambda ns: kept.get(ns, {}).values(), autoscaler=autoscalers.get(key, ""),
                                            companions=companions)
                if outcome.deployment is not None and has_kept_selector(outcome.deployment):
                    kept.setdefault(key[0], {})[key[1]] = outcome.deployment  # seen by the CRs after it
            except APIError as exc:  # one bad CR never stops the others
                outcome = CROutcome(key[0], key[1], Action.FAILED, error=str(exc))
                log.error("%s/%s: %s", key[0], key[1], exc)
                self.events.record(cr, "Warning", EventReason.RECONCILE_FAILED, str(exc))
            report.outcomes.append(outcome)
        report.duration = self.process_clock.monotonic().seconds - started
        return report

    def reconcile_cr(self, cr: dict[str, Any], live: dict[str, Any] | None, pods: tuple[str, ...],
                     declared: frozenset[str] | None, condition_fields: frozenset[str] | None,
                     degraded: DegradedCheck | None = None, neighbours: Neighbours | None = None,
                     autoscaler: str = "", lazy_served_by: bool = False, companions: CompanionLookup | None = None) -> CROutcome:
        """One CR, from what was read (a LIST, or the informers' cache): the step both modes share.

        A correction costs one apply and at most one status write; in ``detect_only`` mode drift
        is reported (Degraded ``DriftDetected``, a Warning Event, the log) and no Deployment is written.
        ``autoscaler`` names the HPA that scales this Deployment: its replicas are the HPA's (autoscalers.py).
        ``companions`` finds the cached Service and budget (None: they are not reconciled, as in
        tests of the Deployment alone).
        """
        visit = Visit(self, cr, pods, declared, condition_fields, lazy_served_by, degraded=degraded, neighbours=neighbours,
                      autoscaler=autoscaler, lookup=companions)
        try:
            return self._reconcile(visit, live)
        finally:
            self._tell(visit)

    def _tell(self, visit: Visit) -> None:
        """One Normal Event for everything one reconcile created, corrected or deleted, as client-go's
        recorder aggregates (tools/record/events_cache.go): the first write's reason, every object named
        in its message. One POST per reconcile, not one per object: a new CR of two Pods costs one Event,
        not three."""
        if visit.told:
            self.events.record(visit.cr, "Normal", visit.told[0][0], joined([message for _, message in visit.told]))

    def _reconcile(self, visit: Visit, live: dict[str, Any] | None) -> CROutcome:
        """reconcile_cr's step, its Events kept in ``visit`` for one POST at the end."""
        cr, pods, companions = visit.cr, visit.pods, visit.lookup
        if cr["metadata"].get("deletionTimestamp"):  # being deleted, held by a finalizer: its objects go with it
            # (the garbage collector's); creating or correcting them would undo a foreground deletion
            log.info("%s: being deleted: nothing created or corrected", visit)
            return visit.result
        mode = (cr["metadata"].get("annotations") or {}).get(RECONCILE_ANNOTATION) or "enabled"
        if mode == "disabled":  # a person paused this cache: nothing written but the status that says so
            visit.result.action = Action.SUSPENDED
            message = (f"reconciliation is paused ({RECONCILE_ANNOTATION}: disabled): nothing of this Memcached is created or "
                       "corrected until the annotation is removed or set to enabled")
            visit.status(Observation(visit.generation, asked_size(cr, live), live, pods, paused=message))
            return visit.result
        checked = self._check(visit, mode, live)
        if checked is None:
            return visit.result
        desired, size, ignored = checked
        if live is None:
            live = visit.result.read = find_new(self, visit, companions)
        ownership = classify(live, cr, self.options.field_manager) if live is not None else Ownership.OWNED
        if ownership is Ownership.FOREIGN:
            message = f"Deployment {visit.namespace}/{visit.name} exists and is not controlled by this Memcached; it is left alone"
            return self._refuse(visit, Reason.RESOURCE_NOT_OWNED, message, size, None, Action.NOT_OWNED, pods=())
        desired, drift, size = self._plan(visit, desired, live, ignored.get(DEPLOYMENTS.kind, ()), size)
        inherited = ownership is Ownership.INHERITED
        applied_by = ""
        if live is not None and ownership in (Ownership.GITOPS_APPLIED, Ownership.INHERITED):  # classified, so read
            applied_by = spec_manager(live) or "another tool"
            if not self.options.adopt:
                return self._observe(visit, live, applied_by, drift, size, inherited)
        detect = self.options.detect_only or mode == "detect-only"
        if drift and detect:
            if companions is not None:  # their drift is reported with the Deployment's
                kept = selector_of(live) if live is not None and has_kept_selector(live) else None
                reconcile_companions(self, visit, companions, True, kept, ignored)
            return self._detected(visit, drift, size, live)
        if drift and live is None and companions is not None and not self.options.dry_run:
            live, foreign = self._create_beside(visit, companions, desired, drift, ignored)
            shared = ""
        else:
            if drift:  # a refused apply is reported with the companions' outcomes: they still go on
                live = self._correct(visit, desired, drift, live, applied_by, inherited, ignored.get(DEPLOYMENTS.kind, ()),
                                     ownership is Ownership.OWNED)
            kept = selector_of(live) if live is not None and has_kept_selector(live) else None
            shared = self._shared(visit.namespace, visit.name, kept, adopted=True) if companions is not None else ""
            foreign = (reconcile_companions(self, visit, companions, mode == "detect-only", kept, ignored, bool(shared))
                       if companions is not None else "")
        if visit.result.companions.detected and not self.options.dry_run:  # only the Service or budget drifted
            return self._detected(visit, [], size, live)
        return self._settle(visit, drift, live, size, foreign, shared or visit.shared)

    def _create_beside(self, visit: Visit, companions: CompanionLookup, desired: dict[str, Any], drift: list[Drift],
                       ignored: Ignored) -> tuple[dict[str, Any] | None, str]:
        """A new Deployment, created side by side with its Service and budget: nothing of their plan
        depends on its apply (its selector is ours, none is kept), so a new CR waits on one round trip
        of applies, not two. The companions run here (their own writes overlap on the pool), the
        Deployment's apply on the pool; the Event names the Deployment first, as in sequence. The
        Deployment as its apply left it, and the report of a foreign companion ("" when none). With no
        live Deployment, nothing is taken over or taken back: its apply needs neither the CR's ignored
        paths of the Deployment (no pointers), and it is ours from its first apply; the companions' ignored paths
        still hold (a Service may be there)."""
        visit.result.action = Action.CREATED
        told = len(visit.told)
        both: list[Any] = concurrently([
            partial(reconcile_companions, self, visit, companions, False, None, ignored, False),
            partial(self._correct, visit, desired, drift, None, "", False, (), True)])
        foreign, live = both
        visit.told[told:] = sorted(visit.told[told:], key=lambda said: said[0] != EventReason.DEPLOYMENT_CREATED)
        return live, foreign

    def _revocation(self, live: dict[str, Any] | None, drift: list[Drift], pointers: tuple[Pointer, ...],
                    ours: bool) -> list[dict[str, Any]]:
        """The JSON patch that takes back a person's fields of ``live`` before our apply (revoke.py),
        when the apply alone cannot put the object back: an item of ours missing from a keyed list
        (its replacement stays with whoever made it, beside ours). kubectl's managers always; an
        unknown updater of a drifted field only when the object is ``ours`` already (taking one over
        keeps what its old controller set until our apply replaces it)."""
        if live is None or not any(d.missing_item for d in drift):
            return []  # a changed value is taken back by the forced apply alone (transcript 07): one write
        unknown = {m for d in drift for m in d.managers} if ours else set()
        return revocation(live, self.options.field_manager, unknown, pointers)

    def _failed(self, visit: Visit, failure: WriteFailure, todo: str = "") -> None:
        """A refused write: logged, kept in the outcome (the action FAILED, its error every refusal of
        this reconcile), and reported by ``_settle`` (Degraded ApplyFailed, a Warning Event)."""
        log.warning("%s: %s%s", visit, failure.describe(), todo)
        result = visit.result
        with self._failing:
            result.failures.append(failure)
            result.action, result.error = Action.FAILED, bounded("; ".join(f.describe() for f in result.failures))

    def _settle(self, visit: Visit, drift: list[Drift], live: dict[str, Any] | None, size: int, foreign: str,
                shared: str) -> CROutcome:
        """The status of a CR served as asked: Available from its Deployment, Degraded while a fight
        lasts or a foreign object holds a companion's name, the overlap of a kept selector, the HPA that scales it."""
        ours = f"{visit.namespace}/{visit.name}"
        corrected = [Correction(DEPLOYMENTS.kind, ours, d) for d in drift] if visit.corrected else []
        corrected += visit.result.companions.corrected
        degraded, neighbours = visit.degraded, visit.neighbours
        reason, message = ((degraded(visit.cr, corrected) if degraded else None)
                           or ((Reason.RESOURCE_NOT_OWNED, foreign) if foreign else ("", "")))
        if shared and reason != Reason.FIELD_MANAGER_FIGHT:  # its Service and budget withheld: not served as asked
            reason, message = Reason.SELECTOR_OVERLAP, shared
            self.events.warn_once(visit.cr, reason, message)
        if visit.result.failures:  # a refused write outranks the rest: nothing else is as urgent
            reason, message = Reason.APPLY_FAILED, visit.result.error
            self.events.warn_once(visit.cr, reason, message)
        overlap = self._overlap(visit.cr, live, neighbours) if live is not None and neighbours is not None and not shared else ""
        if not self.options.dry_run:
            # The correction is told by its Event and the log, not by a status message that the next
            # reconcile would have to put back (a second status write per correction).
            visit.status(Observation(visit.generation, size, live, visit.pods, reason, message, overlap=overlap,
                                     autoscaler=visit.autoscaler, replicas_by=visit.replicas_by))
        return visit.result

    def _plan(self, visit: Visit, desired: dict[str, Any], live: dict[str, Any] | None, pointers: tuple[Pointer, ...],
              size: int) -> tuple[dict[str, Any], list[Drift], int]:
        """What an apply would carry and what differs (plan.py); the size the status reports (the
        Deployment's own replicas when an HPA scales it or the CR's ignore-paths leaves them to another).
        The outcome keeps the drift and the ignored."""
        planned = plan(desired, live, self.options.field_manager, visit.autoscaler, pointers)
        visit.result.drift, visit.result.ignored = planned.drift, planned.ignored
        _, visit.replicas_by, size = self._replicas_owner(visit, live or planned.desired, live, pointers, size)
        if planned.ignored:
            log.info("%s: ignored (%s): %s", visit, IGNORE_ANNOTATION, for_log("; ".join(d.describe() for d in planned.ignored)))
        return planned.desired, planned.drift, size

    def _replicas_owner(self, visit: Visit, deployment: dict[str, Any], live: dict[str, Any] | None,
                        pointers: tuple[Pointer, ...], size: int) -> tuple[str, str, int]:
        """Who sets the replicas of the CR's Deployment and the size its status counts: the HPA that
        scales it, else the managers of ``live``'s replicas when the CR's ignore-paths leaves
        /spec/replicas to others, each with ``deployment``'s own replicas as the size; else nobody
        and ``size`` (spec.size)."""
        if not visit.autoscaler and ("spec", "replicas") not in pointers:
            return "", "", size
        own = (deployment.get("spec") or {}).get("replicas", size)
        if visit.autoscaler:
            return visit.autoscaler, "", own
        return "", replicas_setters(live, self.options.field_manager) if live is not None else "", own

    def _check(self, visit: Visit, mode: str, live: dict[str, Any] | None) -> tuple[dict[str, Any], int, Ignored] | None:
        """What the CR asks for: its Deployment, its size and its ignored paths (by kind); None after
        refusing a CR whose annotation, spec or ignore-paths cannot be served (then nothing of it,
        Deployment or companion, is written)."""
        if mode not in RECONCILE_MODES:
            message = (f"metadata.annotations[{RECONCILE_ANNOTATION}]: Unsupported value: {excerpt(str(mode))!r}: "
                       f"supported values: {', '.join(RECONCILE_MODES)}")
            self._refuse(visit, Reason.INVALID_ANNOTATION, message, asked_size(visit.cr, live), live)
            return None
        requested = requested_at(visit.cr)
        if len(requested) > REQUESTED_AT_LIMIT:
            message = (f"metadata.annotations[{REQUESTED_AT_ANNOTATION}]: Too long: may not be more than "
                       f"{REQUESTED_AT_LIMIT} characters (it is {len(requested)})")
            self._refuse(visit, Reason.INVALID_ANNOTATION, message, asked_size(visit.cr, live), live)
            return None
        desired, problems = self.desired_for(visit.cr)
        if desired is None:
            self._refuse(visit, Reason.INVALID_SPEC, "; ".join(f"{p.field}: {p.message}" for p in problems), 0, live)
            return None
        size = desired["spec"]["replicas"]
        try:
            return desired, size, ignored_paths(visit.cr)
        except IgnoreError as exc:
            self._refuse(visit, Reason.INVALID_IGNORE_PATHS, str(exc), size, live)
            return None

    def _refuse(self, visit: Visit, reason: str, message: str, size: int, live: dict[str, Any] | None,
                action: Action = Action.INVALID, *, pods: tuple[str, ...] | None = None, failed: bool = True) -> CROutcome:
        """A CR not served as it asks: its Degraded condition says why, a Warning Event says it once
        (while the condition says it), and the outcome carries the action (and, ``failed``, the error).
        The columns still name who sets the CR's Deployment's replicas and count them, as a served CR's
        do (``_replicas_owner``), also when the CR is refused before its plan (an annotation, its spec,
        its ignore-paths): that does not change with what this cycle did. Without a Deployment of the
        CR's (``live`` None: none yet, or a foreign one of its name) nobody's replicas are named: spec.size."""
        message = bounded(message)
        autoscaler, replicas_by = "", ""
        if live is not None:
            try:
                pointers = ignored_paths(visit.cr).get(DEPLOYMENTS.kind, ())
            except IgnoreError:  # the refusal's own reason: no pointer to follow
                pointers = ()
            autoscaler, replicas_by, size = self._replicas_owner(visit, live, live, pointers, size)
        visit.status(Observation(visit.generation, size, live, visit.pods if pods is None else pods, reason, message,
                                 autoscaler=autoscaler, replicas_by=replicas_by))
        self.events.warn_once(visit.cr, reason, message)
        visit.result.action = action
        if failed:
            visit.result.error = message
        return visit.result

    def _detected(self, visit: Visit, drift: list[Drift], size: int, live: dict[str, Any] | None) -> CROutcome:
        """Drift reported and left alone (--detect-only, or the CR's detect-only annotation): the
        Deployment's, then what the Service's and the budget's would have needed (``companions.detected``)."""
        ignored = visit.result.ignored
        also = f"; ignored ({IGNORE_ANNOTATION}): " + "; ".join(d.describe() for d in ignored) if ignored else ""
        why = "--detect-only" if self.options.detect_only else f"{RECONCILE_ANNOTATION}: detect-only"
        found = [d.describe() for d in drift] + visit.result.companions.detected
        message = ("the Deployment does not exist" if live is None else
                   f"drift left uncorrected ({why}): " + "; ".join(found) + also)
        log.warning("%s: %s", visit, bounded(message))
        return self._refuse(visit, Reason.DRIFT_DETECTED, message, size, live, Action.DRIFTED, failed=False)

    def _correct(self, visit: Visit, desired: dict[str, Any], drift: list[Drift], live: dict[str, Any] | None,
                 applied_by: str, inherited: bool, pointers: tuple[Pointer, ...], ours: bool) -> dict[str, Any] | None:
        """Apply the rendering (the apply goes first: the drift's latency is the time to it), after
        taking back a person's fields (revoke.py; an unknown updater's only when the Deployment is
        ``ours`` already); the Deployment as the apply left it. A refused apply is recorded
        (``_failed``) and leaves the action FAILED."""
        result = visit.result
        # what this apply does, told as such even when a companion written beside it failed first (the
        # outcome then stays FAILED)
        action = Action.CREATED if live is None else Action.ADOPTED if applied_by else Action.CORRECTED
        if result.action is not Action.FAILED:
            result.action = action
        if self.options.dry_run:  # said as not done: an on-call reading the log must not take it for a write
            log.info("%s: not written (dry run): %s", visit, _summary(action, drift, desired, applied_by, inherited))
            return live
        taken = self._revocation(live, drift, pointers, ours)
        try:
            live = correct(self.api, DEPLOYMENTS, visit.namespace, visit.name, desired, drift, live, self.options.field_manager, taken)
        except APIError as exc:
            self._failed(visit, WriteFailure(DEPLOYMENTS.kind, f"{visit.namespace}/{visit.name}", "apply", exc.status, exc.message),
                         f" (to do: {_summary(action, drift, desired, applied_by, inherited)})")
            return live
        result.deployment, result.applied_at = live, self.process_clock.monotonic().seconds
        # a fight's evidence even when a companion's write failed; a creation, an adoption or a dry run is none
        visit.corrected = action is Action.CORRECTED
        done = _summary(action, drift, desired, applied_by, inherited)
        log.info("%s: %s", visit, done)
        reason = {Action.CREATED: EventReason.DEPLOYMENT_CREATED,
                  Action.ADOPTED: EventReason.ADOPTED}.get(action, EventReason.DRIFT_CORRECTED)
        corrections = _corrections(drift) if applied_by else []
        details = "; corrected " + "; ".join(d.describe() for d in corrections) if corrections else ""
        visit.tell(reason, done + details)
        return live

    def _shared(self, namespace: str, name: str, selector: dict[str, Any] | None, adopted: bool, kept: bool = True) -> str:
        """The report of a ``selector`` that selects Pods this CR's Deployment does not own (another
        Memcached's, or any foreign Pod of the namespace: the Pods it selects, for a kept selector at
        each reconcile, for ours, unique per CR, once before creating a companion; from the controller's
        cache of Pods for ours, else one LIST); ""
        when it selects only ours. A Service or budget on it would send clients to, or count, the
        other Pods: they are not created (``adopted``) or would not be (before ``--adopt``), and the
        message says how to get a selector of one's own (``kept``) or what to do with those Pods."""
        if not selector:
            return ""
        cached = self.selected(namespace, selector)
        pods = cached if cached is not None else self.api.list_all(collection_path(*PODS.gvr, namespace),
                                                                   describe_selector(selector), limit=PAGE_SIZE)
        owners = foreign_owners(name, pods)
        if not owners:
            return ""
        if not kept:
            return bounded(f"this Memcached's selector {describe_selector(selector)} also selects Pods of {', '.join(owners)}: its "
                           "Service and PodDisruptionBudget are not created (they would send clients to, or count, those Pods); "
                           f"relabel or delete them (kubectl get pods -n {namespace} -l {describe_selector(selector)})")
        held = "its Service and PodDisruptionBudget are not created or corrected" if adopted else (
            "taken over with --adopt it is kept (a selector is immutable), and its Service and PodDisruptionBudget would not be created")
        return bounded(f"the Deployment's selector {describe_selector(selector)} also selects Pods of {', '.join(owners)}: {held} "
                       f"(they would send clients to, or count, those Pods); to give this Memcached a selector of its own: "
                       f"kubectl delete deployment -n {namespace} {name}, and the reconciler creates ours "
                       "(docs/guides/migrate-from-go-operator.md)")

    def _overlap(self, cr: dict[str, Any], deployment: dict[str, Any], neighbours: Neighbours) -> str:
        """The report of a kept selector that shares Pods with other Deployments ("" when none)."""
        if not has_kept_selector(deployment):
            return ""  # ours is unique per CR (render.selector_labels)
        ns = cr["metadata"].get("namespace", "")
        others = overlapping(deployment, neighbours(ns))
        if not others:
            return ""
        message = bounded(f"the Deployment's selector {describe_selector(selector_of(deployment))}, kept from the Deployment "
                   f"this Memcached took over, shares Pods with Deployment(s) {', '.join(f'{ns}/{o}' for o in others)}: "
                   "a Service or PodDisruptionBudget built on it spans both (docs/guides/migrate-from-go-operator.md)")
        self.events.warn_once(cr, Reason.SELECTOR_OVERLAP, message)
        return message

    def _observe(self, visit: Visit, live: dict[str, Any], applied_by: str, drift: list[Drift], size: int,
                 inherited: bool = False) -> CROutcome:
        """A GitOps-applied or inherited Deployment: status from it, nothing written to it; drift is
        information. The outcome is a new one (OBSERVED, what differs, the CR as written); its status
        write never defers ``servedBy``."""
        cr, ns, name = visit.cr, visit.namespace, visit.name
        differences = _corrections(drift)
        if differences:
            log.info("%s/%s: applied by %s, not corrected: %s", ns, name, applied_by, "; ".join(d.describe() for d in differences))
        note = f"{len(differences)} field(s) differ from the rendering, e.g. {differences[0].field}" if differences else ""
        kept = describe_selector(selector_of(live)) if inherited else ""
        shared = self._shared(ns, name, selector_of(live), adopted=False) if inherited else ""
        if shared:
            self.events.warn_once(cr, Reason.SELECTOR_OVERLAP, shared)
        written = self.write_status(cr, Observation(visit.generation, size, live, visit.pods, applied_by=applied_by,
                                                     drift_note=note, inherited_selector=kept, overlap=shared),
                                    visit.declared, visit.condition_fields)
        return CROutcome(ns, name, Action.OBSERVED, differences, cr=written)

    def _find_unlabelled(self, ns: str, name: str, resource: Resource = DEPLOYMENTS) -> dict[str, Any] | None:
        """The rare path: a CR whose Deployment (or companion) is not in the labelled LIST. One GET,
        so that an object of that name without our label is seen (and never taken over), unless the
        name indexes know that no object holds the name (``absent``): then None, with no request."""
        if self.absent(resource, ns, name):
            return None
        try:
            found: dict[str, Any] = self.api.request("GET", object_path(*resource.gvr, ns, name))
            return found
        except APIError as exc:
            if is_not_found(exc):
                return None
            raise

    def desired_for(self, cr: dict[str, Any]) -> tuple[dict[str, Any] | None, list[Problem]]:
        """The Deployment a CR asks for, with its controller ownerReference (None and the problems
        when the CR is invalid or cannot be rendered), kept per uid and generation (desired_cache.py)."""
        return self.desired.desired_for(cr)

    def companions_for(self, cr: dict[str, Any]) -> list[dict[str, Any]]:
        """The Service and (two Pods or more) the PodDisruptionBudget the CR asks for, as rendered
        (render/companions.py), without owner; kept with its Deployment (desired_for)."""
        self.desired_for(cr)
        return self.desired.companions_of(cr)

    # ---- writes (write_apply.py, write_delete.py, write_status.py send them)
    def write_status(self, cr: dict[str, Any], obs: Observation, declared: frozenset[str] | None,
                     condition_fields: frozenset[str] | None, lazy_served_by: bool = False,
                     result: CROutcome | None = None) -> dict[str, Any] | None:
        """Apply the status when it changed (write_status.py); the CR as the API server answered (None:
        no write). With ``lazy_served_by``, a status whose only change is ``servedBy`` is not written now:
        the outcome says so (``served_by_deferred``) and the caller writes it later, at its pace."""
        if self.options.dry_run:
            return None
        meta = cr["metadata"]
        path = object_path(self.crd.group, self.version, self.crd.plural, meta.get("namespace", ""), meta["name"], "status")
        written, deferred = write_status(self.api, path, cr, obs, self.clock, self.options.status_manager, declared, condition_fields,
                                         served_by=self.options.served_by, lazy_served_by=lazy_served_by,
                                         reported=self._reported_schema_errors)
        if deferred and result is not None:
            result.served_by_deferred = True
        return written

def asked_size(cr: dict[str, Any], live: dict[str, Any] | None) -> int:
    """The replicas a CR asks for before its spec is validated (a refused annotation, a pause): its
    ``spec.size`` when that is a whole number, else the live Deployment's, else 0. The status then
    never reads "2 of 0 replicas available" for a cache that asks for two."""
    size = (cr.get("spec") or {}).get("size")
    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        return size
    replicas = ((live or {}).get("spec") or {}).get("replicas")
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0


def joined(messages: list[str]) -> str:
    """``messages`` in one, each cut to an equal share of ``MESSAGE_LIMIT`` when together they are
    longer: a long list of corrections never hides the objects named after it."""
    if len("; ".join(messages)) <= MESSAGE_LIMIT:
        return "; ".join(messages)
    share = max(1, (MESSAGE_LIMIT - 2 * (len(messages) - 1)) // len(messages))
    return "; ".join(m if len(m) <= share else m[:share - 3] + "..." for m in messages)


def _summary(action: Action, drift: list[Drift], desired: dict[str, Any], applied_by: str, inherited: bool) -> str:
    """What an apply does, for the log and its Event: built after the apply is sent (or when it is
    not: a dry run, a failure), because describing each drift takes time the correction would wait for."""
    if action == Action.CREATED:
        return "created the Deployment"
    if inherited:
        return for_log(f"took over the Deployment {applied_by} created, in place, keeping its selector "
                       f"{describe_selector(selector_of(desired))}")
    if applied_by:
        return for_log(f"took over the Deployment applied by {applied_by} (controller ownerReference added)")
    return for_log("corrected " + "; ".join(d.describe() for d in drift))


def _corrections(drift: list[Drift]) -> list[Drift]:
    """The drift other than the missing controller ownerReference (which only adoption adds)."""
    return [d for d in drift if d.path[:2] != (("f", "metadata"), ("f", "ownerReferences"))]
