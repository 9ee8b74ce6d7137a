"""Validate, then render: the one step from a Memcached to its manifests. Pure.

The CLI pipeline (``validate``, ``render``, the KRM function, the Argo CD plugin) and the
reconciler all go through ``validate_and_render``, so a CR is judged and rendered the same way
everywhere: the validator's verdict first (errors and warnings in the API server's words), then
the rendering of the object the API server would store, and a CR that validates but cannot become
a valid Deployment is a problem at the field that prevents it, never a bad manifest.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from memcached_gitops.render import RenderError, render
from memcached_gitops.schemas import Problem, Validator
from memcached_gitops.schemas.validator import Outcome


class Desired(NamedTuple):
    """A CR's verdict and, when it is valid and renderable, what it renders to.

    A NamedTuple, not a dataclass: this is on the path of every ``render`` and ``validate``, and
    dataclasses imports inspect (about 9 ms of start-up, bench/startup.py)."""

    outcome: Outcome  # the validator's verdict and the object as the API server would store it
    manifests: tuple[dict[str, Any], ...] = ()
    render_problem: Problem | None = None  # valid, but no valid Deployment can be made of it

    @property
    def ok(self) -> bool:
        return self.outcome.ok and self.render_problem is None

    @property
    def problems(self) -> list[Problem]:
        """The errors that stop this CR, in order: the validator's, else the renderer's."""
        return list(self.outcome.errors) + ([self.render_problem] if self.render_problem else [])


def validate_and_render(validator: Validator, cr: dict[str, Any], image: str, *, rendering: bool = True) -> Desired:
    """Validate ``cr`` (which the validator may default in place) and, when it is valid and
    ``rendering`` is asked for, render it."""
    outcome = validator.validate(cr)
    if not outcome.ok or not rendering:
        return Desired(outcome)
    try:
        return Desired(outcome, tuple(render(outcome.obj, image)))
    except RenderError as exc:
        return Desired(outcome, render_problem=Problem(exc.path, exc.message))
