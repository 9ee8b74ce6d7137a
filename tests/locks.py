"""The lock files CI installs from (requirements/*.txt, written by ``uv pip compile``), read as data."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

REQUIREMENTS = REPO / "requirements"
TEST_LOCK = REQUIREMENTS / "test.txt"
OLDEST_PYYAML_LOCK = REQUIREMENTS / "oldest-pyyaml.txt"
#: what the GitHub Action installs (the plain install and setuptools to build it) and what the image installs (+ [cluster])
RUNTIME_LOCK = REQUIREMENTS / "runtime.txt"
IMAGE_LOCK = REQUIREMENTS / "image.txt"
#: how uv annotates a requirement that comes from the project's own pyproject.toml
FROM_PYPROJECT = "memcached-gitops (pyproject.toml)"

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


@dataclass
class Pin:
    name: str
    version: str
    marker: str | None
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)
    text: str = ""  # the pin with its hashes: a requirements file of its own


def read_lock(path: Path) -> dict[str, Pin]:
    """Every pin of a lock by canonical name, with its hashes and uv's ``# via`` annotations."""
    pins: dict[str, Pin] = {}
    pin: Pin | None = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match, item = _PIN.match(line), line.strip()
        if match:
            pin = pins[canonicalize_name(match[1])] = Pin(canonicalize_name(match[1]), match[2], match[3])
        elif pin is not None and line.startswith("    ") and item.startswith("--hash="):
            pin.hashes.append(item.removeprefix("--hash=").rstrip(" \\"))
        elif pin is not None and line.startswith("    ") and item.startswith("# via"):
            pin.via += [item.removeprefix("# via").strip()] if item != "# via" else []
        elif pin is not None and line.startswith("    ") and item.startswith("#   "):
            pin.via.append(item.removeprefix("#").strip())
        elif pin is not None or not line.startswith("#"):  # only the header may be a comment of its own
            raise AssertionError(f"{path.name}:{number}: not a pin, a hash or an annotation: {line!r}")
    for pin in pins.values():
        pin.text = f"{pin.name}=={pin.version} " + " ".join(f"--hash={h}" for h in pin.hashes) + "\n"
    return pins


def project_requirements(extra: str = "test") -> list[Requirement]:
    """pyproject.toml's requirements for a plain install plus ``extra`` (one, or several with commas),
    the project's own extras expanded."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    extras, seen = extra.split(","), set()
    while extras:
        name = extras.pop()
        seen.add(name)
        for req in map(Requirement, project["optional-dependencies"][name]):
            if canonicalize_name(req.name) == canonicalize_name(project["name"]):
                extras += [e for e in req.extras if e not in seen]
            else:
                wanted.append(req)
    return wanted
