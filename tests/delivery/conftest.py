"""The delivery tests' shared fixture: the Action checked out with its install step run, once per module."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import copy_package_sources
from tests.support.action import Runner


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """The action checked out, and its install step already run (once for all the tests here)."""
    tmp = tmp_path_factory.mktemp("action")
    copy_package_sources(tmp / "action", extra=("action.yml",))
    (tmp / "runner").mkdir()
    result = Runner(tmp / "action", tmp / "runner")
    code, out, _ = result.run(tmp, steps=slice(0, 1), python=sys.executable)
    assert code == 0, out
    return result
