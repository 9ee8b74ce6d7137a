"""reconciler/decisions/reasons.py explains every condition, reason and Event reason the reconciler
writes (its generated page is docs/reference/generated/conditions.md): a reason written in the code and
missing from the table fails here."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from memcached_gitops.reconciler.decisions.companions import Move
from memcached_gitops.reconciler.decisions.reasons import CONDITIONS, EVENTS, REASONS, EventReason, Reason
from memcached_gitops.reconciler.decisions.status import CONDITION_TYPES, desired_conditions
from memcached_gitops.reconciler.decisions.vocabulary import COMPANIONS

#: where the reconciler writes conditions and Events (read from the modules imported, wherever installed)
WRITERS = ["memcached_gitops.reconciler.decisions.status", "memcached_gitops.reconciler.orchestration.cycle",
           "memcached_gitops.reconciler.orchestration.companion_step",
           "memcached_gitops.reconciler.orchestration.controller"]
CAMEL = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)+$")
#: CamelCase strings in those modules that are no reason: kinds and a request body's kind
NOT_REASONS = {"HorizontalPodAutoscaler", "HorizontalPodAutoscalers", "DeleteOptions", "PodDisruptionBudget"}


def literals(module: str) -> set[str]:
    """The CamelCase strings ``module`` writes: its literals and its members of the reason enums."""
    tree = ast.parse(Path(str(importlib.import_module(module).__file__)).read_text())
    enums = {"Reason": Reason, "EventReason": EventReason}
    members = {getattr(enums[n.value.id], n.attr).value for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in enums}
    return members | {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and CAMEL.match(n.value)}


def test_the_tables_explain_every_member_of_the_reason_enums_and_nothing_else() -> None:
    assert set(REASONS) == set(Reason) and set(EVENTS) == set(EventReason)


def test_every_reason_literal_the_reconciler_writes_is_explained() -> None:
    written = set().union(*(literals(p) for p in WRITERS)) - NOT_REASONS
    explained = set(REASONS) | set(EVENTS) | set(CONDITIONS)
    assert written - explained == set(), f"reasons written but not in reasons.py: {sorted(written - explained)}"


def test_the_computed_event_reasons_of_the_companions_are_explained() -> None:
    """cycle.py names a companion's Event after its kind and move (ServiceCreated...)."""
    for resource in COMPANIONS:
        for move in (Move.CREATE, Move.DELETE):
            assert f"{resource.kind}{move.value.title()}d" in EVENTS


def test_every_condition_type_written_is_explained_and_nothing_else() -> None:
    assert set(CONDITION_TYPES) | {"Reconciling", "Stalled"} == set(CONDITIONS)


def test_the_table_names_no_reason_the_code_never_writes() -> None:
    """A stale row (a reason renamed in the code) fails too: every reason of the table is written
    somewhere, literally or as a companion's computed Event reason."""
    written = set().union(*(literals(p) for p in WRITERS)) | {"Ready", "Progressing", "Adopted"}
    written |= {f"{r.kind}{m.value.title()}d" for r in COMPANIONS for m in (Move.CREATE, Move.DELETE)}
    assert set(REASONS) | set(EVENTS) <= written | set(CONDITIONS), sorted((set(REASONS) | set(EVENTS)) - written)
    assert "Ready" in {c["reason"] for c in desired_conditions_ready()}


def desired_conditions_ready() -> list[dict]:
    from memcached_gitops.reconciler.decisions.status import Observation

    dep = {"metadata": {"generation": 1}, "spec": {"replicas": 1},
           "status": {"observedGeneration": 1, "availableReplicas": 1, "updatedReplicas": 1, "replicas": 1}}
    return desired_conditions(Observation(1, 1, dep, ("p",)))
