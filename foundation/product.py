"""The product's name and version, each said once: the ``app.kubernetes.io/managed-by`` label, the
field manager, the Events' reporting component, the Lease ring and the User-Agent all use them."""

from __future__ import annotations

from functools import cache

NAME = "memcached-gitops"


@cache
def version() -> str:
    """The installed distribution's version (pyproject.toml's), read from its metadata once."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version(NAME)
    except PackageNotFoundError:  # run from a work tree that was never installed
        return "0+unknown"
