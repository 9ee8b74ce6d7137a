"""Resolving a repository's paths with the kernel's bound on symbolic links.

Python 3.11's ``os.path.realpath`` resolves each link in a stack frame of its own, so a chain of a
thousand links, which git stores and Argo CD checks out, ends in a RecursionError (a traceback from
``validate``, and ``argocd-discover`` failing although it promises exit 0). The kernel follows at most
40 links in one lookup and then answers ELOOP: asking it first bounds the recursion the same way.
"""

from __future__ import annotations

import errno
import os


def real_path(path: str) -> str:
    """``os.path.realpath(path)``, or OSError(ELOOP) where the kernel would give up on the links."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path) from None
    try:
        return os.path.realpath(path)
    except RecursionError:  # a dangling chain the kernel did not walk to its end
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path) from None
