"""The Service's and the budget's part of one reconcile (``Reconciler._reconcile`` calls it): what
the cache holds of each and, for one it does not, a GET (never take one over by its name); the plan
of decisions/companions.py; each create or correction sent through write_apply.py and each delete
through write_delete.py, the two companions' writes side by side; what each did kept in the outcome
(``CompanionOutcome``) and told by the reconcile's Event."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from memcached_gitops.foundation.identities import IGNORE_PATHS_ANNOTATION as IGNORE_ANNOTATION
from memcached_gitops.render import selector_labels
from memcached_gitops.render.companions import object_name

from ..client.api import APIError
from ..decisions.companions import Move, Step, relation, steps
from ..decisions.drift import Drift, compare
from ..decisions.fights import Correction
from ..decisions.ignore import Ignored, Pointer
from ..decisions.reasons import EventReason, Reason
from ..decisions.vocabulary import COMPANIONS, Action, Resource, bounded, for_log
from .write_apply import WriteFailure, correct
from .write_delete import delete

if TYPE_CHECKING:
    from .cycle import CompanionLookup, Reconciler, Visit

log = logging.getLogger("memcached_gitops.reconciler")

#: Requests in flight on the shared pool at once, over every worker (``concurrently``): a CR's budget
#: beside its Service, and a new Deployment's apply beside both (Reconciler._create_beside), for the
#: default 16 workers; a bound on the connections they hold (client/api.py KEPT_CONNECTIONS). Only
#: single requests run on the pool, never a call that waits on the pool itself: it cannot deadlock.
COMPANION_REQUESTS = 32
_POOL = ThreadPoolExecutor(max_workers=COMPANION_REQUESTS, thread_name_prefix="companion")
T = TypeVar("T")


def reconcile_companions(rec: Reconciler, visit: Visit, lookup: CompanionLookup, detect_only: bool,
                         kept_selector: dict[str, Any] | None, ignored: Ignored, withhold: bool = False) -> str:
    """Create, correct or delete the Service and the budget (decisions/companions.py), leaving
    the CR's ignored paths of each (``ignored``) as the Deployment's are; the report of a foreign
    object in their place ("" when none). Each write's answer is kept in the outcome for the
    cache; each correction is counted, logged and told by an Event; ignored drift is logged.
    ``withhold``: the selector would take in another owner's Pods (``_shared``): nothing is
    created or corrected (a delete, of a budget no longer wanted, still goes)."""
    cr, result = visit.cr, visit.result
    desired, names, cached, unseen = lookups(rec, visit, lookup)
    # never take one over by its name: the GETs of the Service and the budget overlap (or went with the Deployment's)
    todo = [(resource, name) for resource, name in unseen if (resource.kind, name) not in visit.prefetched]
    got = dict(zip(todo, concurrently([partial(rec._find_unlabelled, visit.namespace, n, r) for r, n in todo]), strict=True))
    read = [visit.prefetched[(r.kind, n)] if (r.kind, n) in visit.prefetched else got[(r, n)] for r, n in unseen]
    for (resource, name), found in zip(unseen, read, strict=True):
        if found is not None:
            result.companions.read.append((resource.kind, found))
            cached[(resource.kind, name)] = found
    live = {key: found for key, found in cached.items() if found is not None}
    foreign = []
    planned = steps(cr, desired, live, names, rec.options.field_manager, rec.options.adopt, kept_selector, ignored)
    if not withhold and kept_selector is None and any(s.move is Move.CREATE for s in planned):
        # our selector is unique per CR, but a foreign Pod may carry its labels: looked for once, before creating
        # (or, in a dry run or detect-only, before saying what would be created: what the run itself would do)
        visit.shared = rec._shared(visit.namespace, visit.name, {"matchLabels": selector_labels(visit.name)}, True, kept=False)
        withhold = bool(visit.shared)
    sending: list[Step] = []
    for step in planned:
        result.companions.ignored += [(step.describe(), d) for d in step.ignored]
        if step.move is Move.FOREIGN:
            foreign.append(f"{step.describe()} exists and is not controlled by this Memcached; it is left alone")
            continue
        if step.move not in (Move.CREATE, Move.CORRECT, Move.DELETE) or (withhold and step.move is not Move.DELETE):
            continue
        result.companions.drift += [(step.describe(), d) for d in step.drift or _created(step)]
        if rec.options.dry_run or rec.options.detect_only or detect_only:
            changed = "; ".join(d.describe() for d in step.drift) if step.move is Move.CORRECT else ""
            log.info("%s: %s %s (not written: %s)%s", visit, step.describe(), step.move.value,
                     "dry run" if rec.options.dry_run else "detect-only", for_log(f": {changed}") if changed else "")
            if not rec.options.dry_run:
                result.companions.detected.append(f"{step.describe()}: {changed}" if changed
                                                  else f"{step.describe()} would be {step.move.value}d")
            if result.action == Action.UNCHANGED:  # a dry run's is the correction the run would make, counted so
                result.action = Action.CORRECTED if rec.options.dry_run else Action.DRIFTED
            continue
        sending.append(step)
    # the Service's and the budget's writes overlap; their outcomes are recorded in the plan's order
    answers = concurrently([partial(send, rec, visit, step, live.get((step.resource.kind, step.name)),
                                    (ignored or {}).get(step.resource.kind, ())) for step in sending])
    for step, answer in zip(sending, answers, strict=True):
        record(rec, visit, step, answer)
    if result.companions.ignored:
        log.info("%s: ignored (%s): %s", visit, IGNORE_ANNOTATION,
                 for_log("; ".join(f"{where} {d.describe()}" for where, d in result.companions.ignored)))
    if foreign:
        rec.events.warn_once(cr, Reason.RESOURCE_NOT_OWNED, bounded("; ".join(foreign)))
    return bounded("; ".join(foreign))

def lookups(rec: Reconciler, visit: Visit, lookup: CompanionLookup) -> tuple[
        list[dict[str, Any]], list[str], dict[tuple[str, str], dict[str, Any] | None], list[tuple[Resource, str]]]:
    """The companions the CR asks for, the names looked at, what the cache holds of each
    (kind, name), and those wanted but not in the cache: a GET each (``_find_unlabelled``)."""
    desired = rec.companions_for(visit.cr)
    names = sorted({o["metadata"]["name"] for o in desired} | {object_name(visit.name)})
    wanted = {(o["kind"], o["metadata"]["name"]) for o in desired}
    cached = {(resource.kind, name): lookup(resource, visit.namespace, name) for resource in COMPANIONS for name in names}
    unseen = [(resource, name) for resource in COMPANIONS for name in names
              if cached[(resource.kind, name)] is None and (resource.kind, name) in wanted]
    return desired, names, cached, unseen

def find_new(rec: Reconciler, visit: Visit, lookup: CompanionLookup | None) -> dict[str, Any] | None:
    """The Deployment of a CR not in the cache (``_find_unlabelled``), its Service's and budget's
    GETs sent beside it (kept in ``visit.prefetched``): a new CR waits on one round trip of reads,
    not three. Wasted only when a foreign Deployment holds the name (nothing else is then written)."""
    unseen = lookups(rec, visit, lookup)[3] if lookup is not None else []
    found = concurrently([partial(rec._find_unlabelled, visit.namespace, visit.name)] +
                         [partial(rec._find_unlabelled, visit.namespace, n, r) for r, n in unseen])
    visit.prefetched = {(r.kind, n): obj for (r, n), obj in zip(unseen, found[1:], strict=True)}
    return found[0]

def send(rec: Reconciler, visit: Visit, step: Step, current: dict[str, Any] | None,
         pointers: tuple[Pointer, ...]) -> dict[str, Any] | None | APIError:
    """One companion's create, correction (after taking back a person's fields: revoke.py) or
    delete: the object as the apply left it (None: deleted), or the APIError that refused it.
    Nothing of the outcome is touched here: the writes of one CR's companions run side by side."""
    try:
        if step.move is Move.DELETE:
            delete(rec.api, step.resource, visit.namespace, step.name)
            return None
        assert step.body is not None
        ours = current is not None and relation(current, visit.cr) is Move.KEEP
        taken = rec._revocation(current, list(step.drift), pointers, ours) if step.move is Move.CORRECT else []
        return correct(rec.api, step.resource, visit.namespace, step.name, step.body, [], current,
                       rec.options.field_manager, taken)
    except APIError as exc:
        return exc

def record(rec: Reconciler, visit: Visit, step: Step, answer: dict[str, Any] | None | APIError) -> None:
    """The outcome of one companion's write (``send``). A refused write is recorded
    (``_failed``) and the next companion goes on: one object's failure never blocks the others."""
    result, name = visit.result, f"{visit.namespace}/{step.name}"
    if isinstance(answer, APIError):
        verb = "delete" if step.move is Move.DELETE else "apply"
        rec._failed(visit, WriteFailure(step.resource.kind, name, verb, answer.status, answer.message))
        return
    if step.move is Move.DELETE:
        result.companions.removed.append((step.resource, step.name))
    else:
        assert answer is not None
        result.companions.applied.append(answer)
        result.companions.corrected += [Correction(step.resource.kind, name, d) for d in step.drift]
    if result.action == Action.UNCHANGED:
        result.action = Action.CORRECTED
    done = f"{step.describe()} {step.move.value}d" if step.move is not Move.CORRECT else (
        f"{step.describe()} corrected: " + "; ".join(d.describe() for d in step.drift))
    log.info("%s: %s", visit, done)
    reason = EventReason.DRIFT_CORRECTED if step.move is Move.CORRECT else f"{step.resource.kind}{step.move.value.title()}d"
    visit.tell(reason, bounded(done))


def concurrently(calls: list[Callable[[], T]]) -> list[T]:
    """The answers of ``calls``, in their order, the first run here and the others on the shared pool:
    one CR's independent round trips (its Service's and its budget's) overlap instead of waiting on each
    other. Each call is a request of the client, whose retries honour 429 and Retry-After as they do
    alone. Every call ends before the first exception, if any, is raised."""
    if len(calls) <= 1:
        return [call() for call in calls]
    # each in a copy of this thread's context: the shard ring's hold on the CR goes with its writes (shards.py)
    futures = [_POOL.submit(contextvars.copy_context().run, call) for call in calls[1:]]
    first: list[T] = []
    error: BaseException | None = None
    try:
        first.append(calls[0]())
    except BaseException as exc:  # raised once the others have ended
        error = exc
    answers: list[T] = []
    for future in futures:
        try:
            answers.append(future.result())
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error
    return first + answers


def _created(step: Any) -> list[Drift]:
    """A created or deleted companion counted as one drift of the whole object."""
    return compare(step.body, None)
