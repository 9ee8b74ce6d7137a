"""The generated reference pages (docs/reference/generated/) are what docs/generate_reference.py makes
of the product now: a new option, metric, annotation, CRD field or RBAC rule makes them stale."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("generate_reference", REPO / "docs" / "generate_reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_reference"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("generate_reference", None)


def test_every_generated_page_is_fresh(generator) -> None:
    out = REPO / "docs" / "reference" / "generated"
    for name, text in generator.pages().items():
        assert (out / name).read_text() == text, f"docs/reference/generated/{name} is stale: run python docs/generate_reference.py"


def test_the_pages_come_from_the_product(generator) -> None:
    pages = generator.pages()
    assert "`--output-dir`" in pages["cli.md"] and "## `memcached-gitops reconcile`" in pages["cli.md"]
    assert "`spec.size`" in pages["crd.md"] and "maximum `3`" in pages["crd.md"]
    assert "`memcached_gitops_drift_corrections_total` | counter | `field` |" in pages["metrics.md"]
    assert "`cache.example.com/reconcile`" in pages["annotations.md"]
    assert "| `apps` | deployments |" in pages["rbac.md"]


def test_a_change_in_the_product_makes_a_page_stale(generator, monkeypatch: pytest.MonkeyPatch) -> None:
    before = generator.pages()["annotations.md"]
    monkeypatch.setattr(generator, "ANNOTATIONS", generator.ANNOTATIONS[:1])
    assert generator.pages()["annotations.md"] != before
