"""Third-party files the tests read, from ``../shared/upstream`` beside the repository.

The project commits no other project's files (tests/delivery/test_third_party.py holds that): the upstream CRDs,
testdata samples and install manifests the tests compare against are kept, each folder with its
SOURCE.md naming repository, commit, path and licence, in the shared folder every developer and CI
have beside the checkout. A clone outside that setup has no such folder: the tests that read it skip,
saying which folder is missing. In CI (``CI`` set) they never skip: a missing folder fails them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = REPO.parent / "shared" / "upstream"


def upstream(relative: str) -> Path:
    """The path of a third-party file or folder under ../shared/upstream (e.g. "flux/SOURCE.md")."""
    return UPSTREAM / relative


#: Marks a test (or, as ``pytestmark``, a module) that reads ../shared/upstream.
needs_upstream = pytest.mark.skipif(
    not UPSTREAM.is_dir() and not os.environ.get("CI"),
    reason=f"{UPSTREAM} is absent (a clone outside the shared setup): the third-party files are not here")
