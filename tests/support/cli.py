"""The command line as a person runs it: ``python -m memcached_gitops`` in a child process, its
YAML output read back, and the check that a failure is clean (the exit code, no traceback)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from memcached_gitops.foundation.yamlreader import iter_documents

from tests.conftest import REPO

EXAMPLES = REPO / "examples" / "crs"


ERROR_LINE = re.compile(r"^[^:]+:\d+:\d+: (Memcached/[^:]+: )?[^:]+: .+$")


def run(*args: str, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("MEMCACHED_IMAGE", None) if not env or "MEMCACHED_IMAGE" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "memcached_gitops", *args], input=stdin, capture_output=True, env=full_env, timeout=120
    )


def docs(stdout: bytes) -> list[dict]:
    return [d.value for d in iter_documents(stdout)]


def assert_clean_failure(proc: subprocess.CompletedProcess, code: int = 1) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    return err
