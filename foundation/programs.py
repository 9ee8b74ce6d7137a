"""Programs found on PATH by its absolute entries only.

On POSIX an empty PATH entry (``PATH="$PATH:$EXTRA"`` with EXTRA unset) or a relative one (``.``) means
the working directory, which in CI and in Argo CD's sidecar is the repository's checkout: a committed
``./kustomize`` or ``./git`` would run. Go refuses such a lookup since 1.19 (os/exec ``ErrDot``); so does
this, and a program found is run by its absolute path, never looked up again by the kernel.
"""

from __future__ import annotations

import os
import shutil


def find_program(name: str) -> str | None:
    """The absolute path of ``name`` on PATH's absolute entries, or None."""
    entries = [e for e in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(e)]
    return shutil.which(name, path=os.pathsep.join(entries)) if entries else None
