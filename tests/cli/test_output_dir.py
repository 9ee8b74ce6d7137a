"""``render --output-dir``: a repository's names can never write outside the folder or lose an object.

File names are built from the kind, namespace and name of every object written, and with
``--include-input`` those come from whatever the repository holds. One rule (files.safe_file_name)
keeps ``[A-Za-z0-9._-]`` and percent-encodes every other character, so a name holds no separator;
every path is then resolved and checked under the folder, and two objects that map to one file
(also when case is ignored, as macOS and Windows file systems do) are refused before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from memcached_gitops.foundation.files import InputError, safe_file_name, write_files

from tests.support.cli import EXAMPLES, assert_clean_failure, run

CR = (EXAMPLES / "memcached-sample.yaml").read_text()


def configmap(name: str, kind: str = "ConfigMap", namespace: str | None = None) -> str:
    """A ConfigMap, or an object of another kind: in a group the validator cannot know, since a kind
    ``v1`` does not serve is refused as kubectl refuses it (no REST mapping)."""
    ns = f", namespace: {namespace!r}" if namespace else ""
    api_version = "v1" if kind == "ConfigMap" else "example.com/v1"
    return f"---\napiVersion: {api_version}\nkind: {kind!r}\nmetadata: {{name: {name!r}{ns}}}\n"


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize(("kind", "name", "namespace"), [
    ("ConfigMap", "/../../escaped", None),
    ("x/../../../f", "n1", None),
    ("ConfigMap", "..", None),
    ("ConfigMap", "a", "../.."),
    ("..", "", None),
    ("ConfigMap", "a\\..\\..\\b", None),
    ("ConfigMap", "line\nbreak", None),
])
def test_a_hostile_name_is_written_inside_the_folder(tmp_path: Path, kind: str, name: str, namespace: str | None) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "cr.yaml").write_text(CR + configmap(name, kind, namespace))
    out = tmp_path / "a" / "b" / "out"
    proc = run("render", "--include-input", "--output-dir", str(out), str(repo))
    assert proc.returncode == 0, proc.stderr.decode()
    assert tree(tmp_path / "a") == sorted(f"b/out/{p.name}" for p in out.iterdir()), "nothing outside the folder"
    assert tree(tmp_path) == sorted(["repo/cr.yaml"] + [f"a/b/out/{p.name}" for p in out.iterdir()])
    names = [p.name for p in out.iterdir()]
    assert len(names) == 4, "the CR, its Deployment and Service, and the other object, each in a file of its own"
    assert sum(n.startswith(("deployment-", "memcached-", "service-")) for n in names) == 3, names
    assert all("/" not in p.name and not p.name.startswith(".") for p in out.iterdir())


@pytest.mark.parametrize(("first", "second"), [
    (configmap("a-b"), configmap("b", namespace="a")),   # the join of namespace and name
    (configmap("Cache"), configmap("cache")),            # one file on a case-insensitive file system
    (configmap("same"), configmap("same")),              # the same object twice
])
def test_two_objects_for_one_file_are_refused_and_nothing_is_written(tmp_path: Path, first: str, second: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "cr.yaml").write_text(CR + first + second)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.yaml").write_text("old\n")
    err = assert_clean_failure(run("render", "--include-input", "--output-dir", str(out), str(repo)))
    assert "map to one output file; refused" in err, err
    assert "wrote" not in err
    assert tree(out) == ["keep.yaml"] and (out / "keep.yaml").read_text() == "old\n"


def test_a_symlink_in_the_folder_is_replaced_never_written_through(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / "deployment-memcached-sample.yaml").symlink_to(victim)
    proc = run("render", "--output-dir", str(out), str(EXAMPLES / "memcached-sample.yaml"))
    assert proc.returncode == 0, proc.stderr.decode()
    assert victim.read_text() == "precious\n"
    written = out / "deployment-memcached-sample.yaml"
    assert not written.is_symlink() and "kind: Deployment" in written.read_text()


def test_a_name_beyond_name_max_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "cr.yaml").write_text(CR + configmap("é" * 120))
    err = assert_clean_failure(run("render", "--include-input", "--output-dir", str(tmp_path / "out"), str(repo)))
    assert "longer than 255 bytes" in err
    assert not (tmp_path / "out").exists()


def test_the_rule_keeps_ordinary_names_and_encodes_the_rest() -> None:
    assert safe_file_name(["deployment", "shop", "catalog-cache"], "yaml") == "deployment-shop-catalog-cache.yaml"
    assert safe_file_name(["configmap", "", "a/b"], "json") == "configmap-a%2Fb.json"
    assert safe_file_name(["", "", ".hidden"], "yaml") == "%2Ehidden.yaml"
    assert safe_file_name(["clusterrole", "", "system:x"], "yaml") == "clusterrole-system%3Ax.yaml"
    with pytest.raises(InputError):
        safe_file_name(["a" * 300], "yaml")


def test_write_files_checks_every_path_under_the_folder(tmp_path: Path) -> None:
    """The writer's own check, for any caller that builds names another way."""
    for bad in ("../x.yaml", "sub/x.yaml", "..", "/etc/x.yaml"):
        with pytest.raises(InputError, match="outside"):
            write_files(tmp_path / "out", [(bad, "x", "Thing/x")])
    assert not os.path.exists(tmp_path / "x.yaml") and not (tmp_path / "out").exists()


def test_write_files_writes_each_file_and_refuses_collisions_before_writing_any(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_files(out, [("a.yaml", "one\n", "Thing/a"), ("b.yaml", "two\n", "Thing/b")])
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.yaml": "one\n", "b.yaml": "two\n"}
    with pytest.raises(InputError) as caught:
        write_files(out, [("c.yaml", "x", "Thing/c"), ("A.yaml", "x", "Thing/A"), ("a.yaml", "y", "Thing/a2")])
    assert caught.value.problems == [f"{out}/a.yaml: Thing/a2 and Thing/A map to one output file; refused"]
    assert sorted(p.name for p in out.iterdir()) == ["a.yaml", "b.yaml"] and (out / "a.yaml").read_text() == "one\n"
    for bad in ("", ".", ".."):
        with pytest.raises(InputError, match="outside"):
            write_files(out, [(bad, "x", "Thing/x")])
    with pytest.raises(InputError) as caught:  # every problem is said, not only the first
        write_files(out, [("../x.yaml", "x", "Thing/x"), ("d.yaml", "x", "Thing/d"), ("D.yaml", "x", "Thing/D")])
    assert len(caught.value.problems) == 2 and "outside" in caught.value.problems[0] and "map to one" in caught.value.problems[1]


def test_the_rule_encodes_each_byte_and_allows_name_max_exactly() -> None:
    assert safe_file_name(["configmap", "", "é"], "yaml") == "configmap-%C3%A9.yaml"
    assert len(safe_file_name(["a" * 250], "yaml")) == 255
    with pytest.raises(InputError):
        safe_file_name(["a" * 251], "yaml")


@pytest.mark.parametrize("link", ["rendered", "rendered/caches"])
def test_a_committed_symlink_cannot_take_the_output_outside_the_checkout(tmp_path: Path, link: str) -> None:
    """A repository commits ``rendered -> /elsewhere`` (or the output folder itself as a link): render
    --output-dir run in the checkout once wrote the files through it, outside the repository."""
    import subprocess
    import sys

    repo, victim = tmp_path / "repo", tmp_path / "victim"
    (repo / "apps").mkdir(parents=True)
    victim.mkdir()
    (repo / "apps" / "cr.yaml").write_text(CR)
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(victim)
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "--output-dir", "rendered/caches", "--", "apps"],
                          cwd=repo, capture_output=True, timeout=120)
    assert list(victim.rglob("*")) == [], "a file was written outside the repository"
    err = assert_clean_failure(proc, 2)
    assert f"--output-dir rendered/caches: {link} is a symbolic link" in err and len(err.splitlines()) == 1, err
