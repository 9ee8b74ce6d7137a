"""What the README shows a reader, cut out as .ci/install_paths.py cuts it."""

from __future__ import annotations

import re

from tests.conftest import REPO


def readme_example() -> str:
    """The README's example CR, as .ci/install_paths.py cuts it out (the first yaml block of "What a Memcached renders to")."""
    section = (REPO / "README.md").read_text().split("## What a Memcached renders to", 1)[1]
    return re.findall(r"```yaml\n(.+?)```", section, re.S)[0]
