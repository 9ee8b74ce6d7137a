"""The file-system edge, in-process (foundation/files.py): the root's bounds, hidden
paths, the input budget, quantities and atomic writes. tests/cli/test_untrusted_input.py runs the same
rules through the command line; these call the functions, so a mutation of them is seen."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from memcached_gitops.foundation.files import (
    InputBudget,
    InputError,
    Source,
    expand,
    is_kustomize_file,
    linked_out,
    linked_output,
    manifest_sources,
    nested_builds,
    open_sources,
    parse_size,
    safe_file_name,
    write_atomic,
    write_files,
)
from memcached_gitops.foundation.kustomize import Builds, KustomizeMissing
from memcached_gitops.foundation.yamlreader import MAX_NODES

CR = b"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``app/`` (the root) beside ``app-secrets/`` and ``other/``: names that share its prefix."""
    for name in ("app", "app-secrets", "other"):
        (tmp_path / name).mkdir()
    (tmp_path / "app" / "cr.yaml").write_bytes(CR)
    (tmp_path / "app-secrets" / "token.yaml").write_bytes(b"apiVersion: v1\nkind: Secret\n")
    return tmp_path


def names(sources: list[Source], root: Path) -> list[str]:
    return [os.path.relpath(s.name, root) for s in sources]


def test_a_symlink_into_a_sibling_sharing_the_roots_name_is_outside(tree: Path) -> None:
    (tree / "app" / "leak.yaml").symlink_to(tree / "app-secrets" / "token.yaml")
    (tree / "app" / "more.yaml").symlink_to(tree / "app-secrets" / "token.yaml")
    (tree / "app" / "dir").symlink_to(tree / "app-secrets", target_is_directory=True)
    with pytest.raises(InputError) as caught:
        expand([str(tree / "app")])
    # every one is reported, each on its own line, naming the root it leaves
    assert sorted(p.split(":")[0] for p in caught.value.problems) == [
        str(tree / "app" / "dir"), str(tree / "app" / "leak.yaml"), str(tree / "app" / "more.yaml")]
    assert all(f"resolves outside the root {tree / 'app'};" in p for p in caught.value.problems)
    assert all("resolves outside the root" in p and "not read" in p for p in caught.value.problems)


def test_links_that_stay_inside_are_read_at_their_real_path(tree: Path) -> None:
    (tree / "app" / "sub").mkdir()
    (tree / "app" / "sub" / "two.yaml").write_bytes(CR)
    (tree / "app" / "alias.yaml").symlink_to(tree / "app" / "cr.yaml")
    (tree / "app" / "subdir-link").symlink_to(tree / "app" / "sub", target_is_directory=True)
    sources = expand([str(tree / "app")])
    assert names(sources, tree / "app") == ["alias.yaml", "cr.yaml", "sub/two.yaml"]
    assert [s.path for s in sources][0] == str((tree / "app" / "cr.yaml").resolve()) and all(s.in_root for s in sources)


def test_hidden_files_and_directories_under_the_root_are_skipped(tree: Path) -> None:
    root = tree / "app"
    for hidden in (".git/cr.yaml", ".github/workflows/ci.yaml", "sub/.cache/cr.yaml", ".cr.yaml", "sub/.x.yml"):
        (root / hidden).parent.mkdir(parents=True, exist_ok=True)
        (root / hidden).write_bytes(CR)
    (root / "sub" / "seen.yml").write_bytes(CR)
    (root / "notes.txt").write_bytes(CR)
    assert names(expand([str(root)]), root) == ["cr.yaml", "sub/seen.yml"]
    # named on the command line, a hidden path is the user's choice
    assert expand([str(root / ".git" / "cr.yaml")]) == [Source(str(root / ".git" / "cr.yaml"), str(root / ".git" / "cr.yaml"))]


def test_a_dangling_link_and_missing_path(tree: Path) -> None:
    """(A FIFO in the tree: test_walking_past_a_fifo_never_waits_for_a_writer.)"""
    root = tree / "app"
    (root / "gone.yaml").symlink_to(root / "nowhere.yaml")
    assert names(expand([str(root)]), root) == ["cr.yaml"]
    with pytest.raises(InputError) as caught:
        expand([str(tree / "missing.yaml"), "-"])
    assert caught.value.problems == [f"{tree / 'missing.yaml'}: no such file or directory"]
    assert expand(["-"]) == [Source("-", "-")]


class Counting(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.taken += len(data)
        return data


@pytest.mark.parametrize("size", [-1, 4, 1 << 16])
def test_the_budget_reads_at_most_one_byte_past_the_limit(size: int) -> None:
    stream = Counting(b"x" * 1000)
    bounded = InputBudget(10).wrap("big.yaml", stream)
    with pytest.raises(InputError) as caught:
        while bounded.read(size):
            pass
    assert stream.taken == 11, "the limit plus the one byte that proves it is exceeded"
    assert str(caught.value) == ("big.yaml: the input is larger than the limit of 10 bytes "
                                 "(all files together; --max-input-size or MEMCACHED_GITOPS_MAX_INPUT_SIZE); refused")


def test_the_budget_is_shared_and_exactly_the_limit_is_allowed() -> None:
    budget = InputBudget(10)
    assert budget.wrap("a", io.BytesIO(b"x" * 6)).read() == b"x" * 6
    second = budget.wrap("b", io.BytesIO(b"y" * 4))
    assert second.read() == b"y" * 4 and second.read() == b"" and budget.used == 10
    with pytest.raises(InputError, match="^c: "):
        budget.wrap("c", io.BytesIO(b"z")).read()


@pytest.mark.parametrize(("text", "size"), [
    ("10M", 10_000_000), ("64Mi", 64 * 2**20), ("1G", 10**9), ("2Gi", 2 * 2**30), ("3k", 3000), ("1Ki", 1024),
    ("5", 5), ("0", 0), ("1T", 10**12), ("1Ti", 2**40),  # Ki with a capital K, k without
])
def test_sizes_are_kubernetes_quantities(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "10m", "1.5M", "-1", "10 M", "10MB", "Mi10", "ten", "1K", "1ki", "\u00b2M", "\u0661\u0660"])
def test_a_size_that_is_no_quantity_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="^invalid size .*use e.g. 10M, 512Mi, 1G or a number of bytes"):
        parse_size(text)


def test_open_sources_refuses_a_link_swapped_in_after_the_walk(tree: Path) -> None:
    root = tree / "app"
    [source] = expand([str(root)])
    os.unlink(source.path)
    os.symlink(tree / "app-secrets" / "token.yaml", source.path)
    with pytest.raises(InputError, match=r"cr\.yaml: cannot read: "):
        list(open_sources([source], InputBudget(100)))


def test_open_sources_opens_one_file_at_a_time_and_refuses_a_non_regular_file(tree: Path) -> None:
    root = tree / "app"
    os.mkfifo(root / "fifo.yaml")
    fifo = Source(str(root / "fifo.yaml"), str(root / "fifo.yaml"), True)
    with pytest.raises(InputError, match=r"fifo\.yaml: not a regular file; not read"):
        list(open_sources([fifo], InputBudget(100)))
    opened = open_sources([Source("cr.yaml", str(root / "cr.yaml"), True), fifo], InputBudget(100))
    name, stream = next(opened)  # the fifo is not opened until the first file is done with
    assert name == "cr.yaml" and stream.read() == CR
    with pytest.raises(InputError, match="not a regular file"):
        next(opened)


def test_write_atomic_replaces_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "out" / "deployment-a.yaml"
    write_atomic(target, "first\n")
    assert target.read_text() == "first\n"
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "half\n\udcff")  # fails while writing: the old file stays, no temporary is left
    assert target.read_text() == "first\n" and os.listdir(target.parent) == ["deployment-a.yaml"]
    write_atomic(target, "second\n")
    assert target.read_text() == "second\n"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_write_atomic_gives_a_new_file_the_mode_a_plain_write_would(tmp_path: Path, umask: int) -> None:
    """``render --output-dir`` is read by the next CI step or the Argo CD repo-server, often as another
    user: a new file gets 0666 less the umask, as ``open`` gives it, not the 0600 of a temporary file."""
    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "deployment-a.yaml", "kind: Deployment\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "deployment-a.yaml").stat().st_mode) == 0o666 & ~umask


def test_write_atomic_keeps_the_mode_a_file_already_had(tmp_path: Path) -> None:
    target = tmp_path / "deployment-a.yaml"
    target.write_text("first\n")
    target.chmod(0o640)
    write_atomic(target, "second\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and target.read_text() == "second\n"


@pytest.mark.parametrize(("name", "config"), [
    ("kustomization.yaml", True), ("kustomization.yml", True), ("Kustomization", True), ("dir/kustomization.yaml", True),
    ("Kustomization.yaml", False), ("my-kustomization.yaml", False), ("kustomization.json", False), ("-", False),
])
def test_kustomize_files_are_known_by_name(name: str, config: bool) -> None:
    assert is_kustomize_file(Source(name, name)) is config


def test_the_outside_message_names_the_link_its_target_and_the_root(tree: Path) -> None:
    (tree / "app" / "leak.yaml").symlink_to("../app-secrets/token.yaml")
    with pytest.raises(InputError) as caught:
        expand([str(tree / "app")])
    assert caught.value.problems == [f"{tree / 'app' / 'leak.yaml'}: symlink to '../app-secrets/token.yaml' resolves outside "
                                     f"the root {tree / 'app'}; not read"]
    assert str(InputError("a", "b")) == "a\nb"


def test_every_argument_is_kept_in_order(tree: Path) -> None:
    (tree / "other" / "x.yaml").write_bytes(CR)
    got = expand([str(tree / "other" / "x.yaml"), str(tree / "app"), "-"])
    assert [s.name for s in got] == [str(tree / "other" / "x.yaml"), str(tree / "app" / "cr.yaml"), "-"]


def test_a_link_named_on_the_command_line_is_followed_and_stdin_is_read_too(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    link = tree / "other" / "via-link.yaml"
    link.symlink_to(tree / "app" / "cr.yaml")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"kind: X\n")))
    opened = open_sources([Source("-", "-"), Source(str(link), str(link))], InputBudget(1000))
    name, stream = next(opened)
    assert name == "<stdin>" and stream.read() == b"kind: X\n"
    name, stream = next(opened)
    assert name == str(link) and stream.read() == CR


def test_the_budget_names_the_source_that_crossed_it(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a regular file is refused on its size before it is read; a stream as it is read
    opened = open_sources([Source("cr.yaml", str(tree / "app" / "cr.yaml"), True)], InputBudget(5))
    with pytest.raises(InputError, match=r"^cr\.yaml: the input is larger than the limit of 5 bytes"):
        next(opened)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x" * 10)))
    name, stdin = next(open_sources([Source("-", "-")], InputBudget(5)))
    with pytest.raises(InputError, match=r"^<stdin>: the input is larger"):
        stdin.read()


def test_a_bounded_read_returns_no_more_than_asked() -> None:
    bounded = InputBudget(100).wrap("f", io.BytesIO(b"abcdefgh"))
    assert bounded.read(0) == b"" and bounded.read(3) == b"abc" and bounded.read(1) == b"d" and bounded.read() == b"efgh"


def test_write_atomic_makes_the_folders_and_its_temporary_beside_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.replace is atomic only within one file system: the temporary is a hidden file in the target's folder
    target = tmp_path / "a" / "b" / "deployment-x.yaml"
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (replaced.append((src, dst)), real_replace(src, dst)))
    write_atomic(target, "kind: Deployment\n")
    [(src, dst)] = replaced
    assert Path(dst) == target and Path(src).parent == target.parent
    assert Path(src).name.startswith(".deployment-x.yaml.") and src.endswith(".tmp")
    assert target.read_text() == "kind: Deployment\n"


def test_manifest_sources_sets_kustomization_files_apart(tree: Path) -> None:
    root = tree / "app"
    (root / "sub").mkdir()
    (root / "sub" / "kustomization.yml").write_bytes(b"resources: []\n")
    manifests, kustomize_files = manifest_sources([str(root), "-"])
    assert [s.name for s in manifests] == [str(root / "cr.yaml"), "-"]
    assert [s.name for s in kustomize_files] == [str(root / "sub" / "kustomization.yml")]
    # a kustomization at the root of a directory argument makes it a kustomize application: built, not walked
    (root / "kustomization.yaml").write_bytes(b"resources: [cr.yaml]\n")
    manifests, kustomize_files = manifest_sources([str(root), "-"])
    assert [(s.name, s.built) for s in manifests] == [(str(root), True), ("-", False)] and kustomize_files == []


def test_a_root_reached_through_a_symlink_is_read_in_full(tree: Path) -> None:
    """The root is resolved before its files are compared with it: ``manifests -> app`` (or macOS's
    /tmp -> /private/tmp) is the root itself, not a place outside it."""
    link = tree / "manifests"
    link.symlink_to(tree / "app", target_is_directory=True)
    assert [s.name for s in expand([str(link)])] == [str(link / "cr.yaml")]


def test_the_files_of_a_root_come_sorted_by_path_whatever_the_walk_order(tree: Path) -> None:
    root = tree / "app"
    (root / "b").mkdir()
    (root / "b" / "x.yaml").write_bytes(CR)
    (root / "c.yaml").write_bytes(CR)
    assert names(expand([str(root)]), root) == ["b/x.yaml", "c.yaml", "cr.yaml"]


def test_a_file_swapped_after_it_was_opened_is_judged_by_what_was_opened(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The regular-file check reads the opened descriptor (fstat), never the path again: a FIFO
    opened and then replaced by a regular file is still refused."""
    from memcached_gitops.foundation import files

    root = tree / "app"
    os.mkfifo(root / "pipe.yaml")
    real_open = os.open

    def open_then_swap(path: str, flags: int, *args: object) -> int:
        fd = real_open(path, flags, *args)
        os.unlink(path)
        Path(path).write_bytes(CR)
        return fd

    monkeypatch.setattr(files.os, "open", open_then_swap)
    with pytest.raises(InputError, match=r"pipe\.yaml: not a regular file; not read"):
        list(open_sources([Source(str(root / "pipe.yaml"), str(root / "pipe.yaml"), True)], InputBudget(100)))


def _never_waiting_on(fifo: Path, call: object) -> object:
    """``call()``'s result, run in a thread: if it is still blocked after 10 s (an open of ``fifo``
    waiting for a writer), one writer is opened so that it goes on, and the test fails, not hangs."""
    import threading

    results: list[object] = []

    def run() -> None:
        try:
            results.append(call())  # type: ignore[operator]
        except InputError as exc:
            results.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY))  # lets the blocked open go on
        worker.join(10)
        pytest.fail(f"opening {fifo.name} waited for a writer")
    return results[0]


def test_opening_a_fifo_under_the_root_never_waits_for_a_writer(tree: Path) -> None:
    """O_NONBLOCK: a FIFO is opened at once (and then refused), never left waiting for a writer;
    without it the open blocks until one comes (this test then opens one, so it fails, not hangs)."""
    root = tree / "app"
    os.mkfifo(root / "fifo.yaml")
    fifo = Source(str(root / "fifo.yaml"), str(root / "fifo.yaml"), True)
    error = _never_waiting_on(root / "fifo.yaml", lambda: list(open_sources([fifo], InputBudget(100))))
    assert isinstance(error, InputError) and "not a regular file" in str(error)


def test_walking_past_a_fifo_never_waits_for_a_writer(tree: Path) -> None:
    """The walk asks the kernel where each path leads through an O_PATH descriptor (foundation/links.py),
    which opens nothing for reading: a FIFO in the tree is passed over at once, never waited on."""
    root = tree / "app"
    os.mkfifo(root / "pipe.yaml")
    assert names(_never_waiting_on(root / "pipe.yaml", lambda: expand([str(root)])), root) == ["cr.yaml"]  # type: ignore[arg-type]


# --- a kustomization root: built, its output bounded by what is left of the budget ------------------

def test_a_kustomization_root_is_one_built_source(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "app" / "kustomization.yaml").write_bytes(b"namespace: prod\nresources: [cr.yaml]\n")
    [source] = expand([str(tree / "app")])
    assert source == Source(str(tree / "app"), str(tree / "app"), True, True)
    monkeypatch.delenv("MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS", raising=False)
    budget = InputBudget(10_000)
    budget.used = 100  # what earlier sources read: the build gets the rest
    (name, stream), (after, _) = list(open_sources([source, Source("-", "-")], budget))  # and the sources after it
    assert name == f"{tree / 'app'} (kustomize build)" and after == "<stdin>"
    built = stream.read()
    assert b"namespace: prod" in built and b"name: a" in built and budget.used == 100 + len(built)


def test_a_build_gets_only_what_is_left_of_the_budget_and_its_options(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "app" / "kustomization.yaml").write_bytes(b"resources: [cr.yaml]\n")
    [source] = expand([str(tree / "app")])
    size = len(list(open_sources([source], InputBudget(10_000)))[0][1].read())
    budget = InputBudget(size + 50)
    budget.used = 51  # one byte short for the build
    with pytest.raises(InputError, match="kustomize build wrote more than the limit of"):
        list(open_sources([source], budget))
    monkeypatch.setenv("MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS", "--enable-exec")
    with pytest.raises(InputError, match="'--enable-exec' is not allowed"):
        list(open_sources([source], InputBudget(10_000)))
    with pytest.raises(InputError, match="'--enable-alpha-plugins' is not allowed"):  # a run's Builds reads its own environment
        builds = Builds(environ={"MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS": "--enable-alpha-plugins"})
        list(open_sources([source], InputBudget(10_000), builds))
    monkeypatch.delenv("MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS")
    (tree / "app" / "kustomization.yaml").write_bytes(b"resources: [broken.yaml]\n")
    (tree / "app" / "broken.yaml").write_bytes(b"kind: [\n")  # kustomize's own failure, its line excerpted
    with pytest.raises(InputError, match=r"kustomize build failed: .*broken\.yaml"):
        list(open_sources([source], InputBudget(10_000)))


def test_a_file_exactly_at_the_cap_is_read_and_one_byte_more_is_refused_by_name(tree: Path) -> None:
    cr = tree / "app" / "cr.yaml"
    opened = open_sources([Source(str(cr), str(cr), True)], InputBudget(len(CR)))
    _, stream = next(opened)  # open until the generator moves on
    assert stream.read() == CR
    with pytest.raises(InputError, match=rf"^{cr}: the input is larger than the limit of {len(CR) - 1} bytes"):
        list(open_sources([Source(str(cr), str(cr), True)], InputBudget(len(CR) - 1)))
    zeros = open_sources([Source("/dev/zero", "/dev/zero")], InputBudget(10))
    _, zero = next(zeros)  # no size to check: bounded as it is read
    with pytest.raises(InputError, match=r"^/dev/zero: the input is larger than the limit of 10 bytes"):
        zero.read(100)


def test_the_kustomizations_a_walk_meets_are_built_once_each_beside_the_roots_named(tmp_path: Path, monkeypatch) -> None:
    """``validate . overlays/prod``: every kustomization's folder the walk passes over is a build to
    check (named as the walk names it, found under a root, its failure said and passed over), but a
    folder already named on the command line is not built a second time, whatever form names it; a
    hook's ``kustomization.yaml`` at the root is the folder ``.``."""
    for folder in ("base", "overlays/prod", "overlays/dev"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "kustomization.yaml").write_text("resources: []\n")
    monkeypatch.chdir(tmp_path)
    for named in (["overlays/prod"], ["./overlays/prod/"], [str(tmp_path / "overlays" / "prod")]):
        manifests, kustomize_files = manifest_sources([".", *named])
        builds = nested_builds(kustomize_files, manifests)
        assert [(b.name, b.in_root, b.built, b.nested) for b in builds] == [
            ("./base", True, True, True), ("./overlays/dev", True, True, True)], named
        assert [os.path.realpath(b.path) for b in builds] == [str(tmp_path / "base"), str(tmp_path / "overlays/dev")]
    (tmp_path / "kustomization.yaml").write_text("resources: [base]\n")
    manifests, kustomize_files = manifest_sources(["kustomization.yaml", "base/kustomization.yaml"])
    assert [(b.name, b.path) for b in nested_builds(kustomize_files, manifests)] == [(".", "."), ("base", "base")]


def test_a_root_named_through_a_link_is_not_built_a_second_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout reached through a link (a shell's logical ``$PWD``, a CI runner's workspace link): a root
    named through it is the same folder the walk finds, so it is built once, not again as a nested build."""
    real = tmp_path / "real" / "repo"
    (real / "overlays" / "prod").mkdir(parents=True)
    (real / "overlays" / "prod" / "kustomization.yaml").write_text("resources: []\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.chdir(link)
    manifests, kustomize_files = manifest_sources([str(link / "overlays" / "prod"), str(link)])
    assert [m.name for m in manifests if m.built] == [str(link / "overlays" / "prod")]
    assert nested_builds(kustomize_files, manifests) == []


def test_a_kustomization_behind_a_link_out_of_the_working_directory_is_not_built(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``apps`` committed as a link to the runner's home, where a kustomization is: the folder named under
    the working directory is refused for where it leads before it is taken for a build root."""
    outside = tmp_path / "outside" / "sub"
    outside.mkdir(parents=True)
    (outside / "kustomization.yaml").write_bytes(b"resources:\n- creds.yaml\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "apps").symlink_to(tmp_path / "outside")
    monkeypatch.chdir(repo)
    with pytest.raises(InputError, match="resolves outside the working directory"):
        expand(["apps/sub"])


def test_an_output_path_is_checked_for_links_inside_the_working_directory_only(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder is inside the working directory only at a separator: ``../app-out`` beside ``app`` is
    outside it, the caller's own choice, and its links are not looked at; a link under ``app`` is refused."""
    (tree / "app-out").symlink_to(tree / "other")
    (tree / "app" / "rendered").symlink_to(tree / "other")
    monkeypatch.chdir(tree / "app")
    assert linked_output(Path("../app-out/manifests")) is None
    assert linked_output(Path(str(tree / "app-out" / "manifests"))) is None
    refused = linked_output(Path("rendered/manifests"))
    assert refused is not None and refused.startswith("rendered/manifests: rendered is a symbolic link")


def test_a_file_is_refused_on_its_size_against_what_is_left_of_the_budget(tree: Path) -> None:
    """A regular file is weighed before a byte of it is read, against what the run has left: the second
    of two files that together pass the limit is refused as it is opened, never handed to the parser."""
    cr = tree / "app" / "cr.yaml"
    opened = open_sources([Source(str(cr), str(cr), True), Source("again.yaml", str(cr), True)], InputBudget(2 * len(CR) - 1))
    _, first = next(opened)
    assert first.read() == CR
    with pytest.raises(InputError, match=rf"^again\.yaml: the input is larger than the limit of {2 * len(CR) - 1} bytes"):
        next(opened)


def test_a_lowered_input_cap_never_lowers_the_node_budget_below_its_default() -> None:
    """The node budget moves with the input cap above the default (10M) only: a smaller cap keeps
    MAX_NODES, a doubled one doubles it."""
    assert InputBudget(parse_size("1M")).nodes().limit == MAX_NODES
    assert InputBudget(parse_size("10M")).nodes().limit == MAX_NODES
    assert InputBudget(parse_size("20M")).nodes().limit == 2 * MAX_NODES


def test_kustomize_missing_passes_a_nested_build_over_unless_the_build_is_strict(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without kustomize, a kustomization met inside a walk is said and passed over; with --strict-build
    (``strict``), or for a root named on the command line, the missing install stops the run."""
    (tree / "app" / "kustomization.yaml").write_bytes(b"resources: [cr.yaml]\n")
    monkeypatch.delenv("MEMCACHED_GITOPS_KUSTOMIZE", raising=False)
    monkeypatch.setenv("PATH", str(tree / "other"))
    nested = Source("app", str(tree / "app"), True, True, True)
    passed_over: list[str] = []
    assert list(open_sources([nested], InputBudget(10_000), passed_over=passed_over)) == []
    assert len(passed_over) == 1 and passed_over[0].startswith("app (kustomize build): not built, so not checked: kustomize is not on PATH")
    with pytest.raises(KustomizeMissing):
        list(open_sources([nested], InputBudget(10_000), passed_over=[], strict=True))
    with pytest.raises(KustomizeMissing):
        list(open_sources([nested._replace(nested=False)], InputBudget(10_000), passed_over=[]))


def test_a_nested_build_refused_before_it_ran_is_an_error_not_passed_over(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed nested build is passed over, but one refused before it ran (reading beyond its root)
    is always an error: passing it over would let a repository hide its objects from the check."""
    (tree / "app" / "kustomization.yaml").write_bytes(b"resources: [../app-secrets/token.yaml]\n")
    monkeypatch.chdir(tree / "app")
    passed_over: list[str] = []
    with pytest.raises(InputError, match="app-secrets"):
        list(open_sources([Source("app", str(tree / "app"), True, True, True)], InputBudget(10_000), passed_over=passed_over))
    assert passed_over == []


def test_two_output_names_equal_but_for_case_are_one_file_and_nothing_is_written(tmp_path: Path) -> None:
    """macOS's and Windows' file systems ignore case: ``A.yaml`` and ``a.yaml`` are one file there, so the
    pair is a collision naming both objects, refused before any file is written."""
    for first, second in (("a", "A"), ("A", "a")):
        with pytest.raises(InputError, match=rf"/{second}\.yaml: Deployment/{second} and Deployment/{first} map to one output file"):
            write_files(tmp_path, [(f"{first}.yaml", "x: 1\n", f"Deployment/{first}"),
                                   (f"{second}.yaml", "x: 2\n", f"Deployment/{second}")])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("parts", [["", "..", "x"], [".hidden"]])
def test_an_output_file_name_never_starts_with_a_dot(parts: list[str]) -> None:
    """A name read from a repository never makes a hidden file or ``..``: a leading dot is written %2E."""
    name = safe_file_name(parts, "yaml")
    assert name.startswith("%2E") and "/" not in name


def test_a_name_that_leaves_the_working_directory_by_dots_is_the_users_own(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a name written under the working directory must stay under it: ``../x`` (as an absolute
    path) is read wherever it leads, as ``kubectl apply -f`` reads it; a link under the working
    directory leading out is refused."""
    (tree / "app" / "secrets").symlink_to(tree / "app-secrets")
    monkeypatch.chdir(tree / "app")
    assert linked_out("../app-secrets/token.yaml") is None
    assert linked_out(str(tree / "app-secrets" / "token.yaml")) is None
    assert [s.name for s in expand(["../app-secrets/token.yaml"])] == ["../app-secrets/token.yaml"]
    assert "resolves outside the working directory" in (linked_out("secrets/token.yaml") or "")


def test_a_walks_file_that_resolves_into_git_is_refused_not_read(tree: Path) -> None:
    """A link under the root leading into ``.git/`` (where a checkout keeps its token, in config) is a
    problem naming it, never read, although it stays inside the root."""
    (tree / "app" / ".git").mkdir()
    (tree / "app" / ".git" / "config").write_bytes(b"[http]\n\textraheader = AUTHORIZATION: basic x\n")
    (tree / "app" / "leak.yaml").symlink_to(tree / "app" / ".git" / "config")
    with pytest.raises(InputError) as caught:
        expand([str(tree / "app")])
    [problem] = caught.value.problems  # the path excerpted from its end
    assert problem.endswith("/app/leak.yaml: resolves into .git/ (a checkout's credentials live in its config); not read")


@pytest.mark.parametrize(("nested", "outcome", "strict", "expected"), [
    (True, "fails", False, "passed over"), (False, "fails", False, InputError),
    (True, "refused", False, InputError), (False, "refused", False, InputError),
    (True, "missing", False, "passed over"), (True, "missing", True, KustomizeMissing), (False, "missing", False, KustomizeMissing),
])
def test_a_build_is_passed_over_only_when_met_inside_a_walk_and_it_failed(tree: Path, monkeypatch: pytest.MonkeyPatch, nested: bool,
                                                                          outcome: str, strict: bool, expected: Any) -> None:
    """Each pair of where a kustomization was met and how its build ended: only one met inside a walk whose
    build ran and failed, or could not run without --strict-build, is said and passed over; a root named on
    the command line that fails, and any build refused before it ran, stop the run."""
    app = tree / "app"
    resources = b"[../app-secrets/token.yaml]" if outcome == "refused" else b"[cr.yaml]"
    (app / "kustomization.yaml").write_bytes(b"resources: " + resources + b"\n")
    if outcome == "missing":
        monkeypatch.delenv("MEMCACHED_GITOPS_KUSTOMIZE", raising=False)
        monkeypatch.setenv("PATH", str(tree / "other"))
    else:
        script = tree / "kustomize"
        script.write_text("#!/bin/sh\necho 'Error: boom' >&2\nexit 1\n")
        script.chmod(0o755)
        monkeypatch.setenv("MEMCACHED_GITOPS_KUSTOMIZE", str(script))
    source = Source("app", str(app), True, True, nested)
    passed_over: list[str] = []
    run = lambda: list(open_sources([source], InputBudget(10_000), Builds(root=str(app)), passed_over=passed_over, strict=strict))  # noqa: E731
    if expected == "passed over":
        assert run() == [] and len(passed_over) == 1 and passed_over[0].startswith("app (kustomize build): not built, so not checked: ")
    else:
        with pytest.raises(expected):
            run()
        assert passed_over == []


def test_a_name_written_under_the_working_directory_that_a_link_takes_into_git_is_refused(tree: Path,
                                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A name on the command line must resolve under the working directory and, once there, not into git's
    folder (a checkout's token is in .git/config): both hold at once, or it is not read."""
    (tree / ".git").mkdir()
    (tree / ".git" / "config").write_text("[http]\n\textraheader = AUTHORIZATION: basic x\n")
    (tree / "config.yaml").symlink_to(tree / ".git" / "config")
    (tree / "cr.yaml").symlink_to(tree / "app" / "cr.yaml")
    monkeypatch.chdir(tree)
    assert linked_out("cr.yaml") is None
    assert linked_out("config.yaml") == "config.yaml: resolves into .git/ (a checkout's credentials live in its config); not read"
    with pytest.raises(InputError, match=r"config\.yaml: resolves into \.git/"):
        expand(["config.yaml"])


def test_the_files_of_every_folder_named_count_together_against_the_runs_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MAX_FILES bounds the files one run takes from all the folders it walks: two folders under the cap
    each are over it together (``validate apps/a apps/b`` holds them all at once). Held with the cap lowered."""
    from memcached_gitops.foundation import files

    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        for i in range(6):
            (tmp_path / folder / f"{i}.yaml").write_text("")
    roots = [str(tmp_path / "a"), str(tmp_path / "b")]
    monkeypatch.setattr(files, "MAX_FILES", 10)
    with pytest.raises(InputError, match="more than 10 YAML or JSON files to read in one run"):
        expand(roots)
    monkeypatch.setattr(files, "MAX_FILES", 12)
    assert names(expand(roots), tmp_path) == [f"{folder}/{i}.yaml" for folder in ("a", "b") for i in range(6)]


@pytest.mark.parametrize(("name", "read"), [
    ("cr.yaml", True), ("cr.yml", True), ("cr.json", True),
    ("cr.YAML", False), ("cr.Yml", False), ("cr.JSON", False), ("cr.yaml.bak", False), ("cr.yaml~", False), ("cryaml", False),
    ("cr.jsonl", False), ("cr.txt", False),
])
def test_a_walk_reads_the_files_kubectl_reads_from_a_folder(tree: Path, name: str, read: bool) -> None:
    """``kubectl apply -f DIR`` reads the files whose extension is exactly .json, .yaml or .yml (cli-runtime
    pkg/resource/visitor.go ``FileExtensions``, compared as written): a walk reads the same ones, so what
    validate checks is what kubectl would send, and a backup or an upper-case name is passed over by both."""
    root = tree / "app"
    (root / "cr.yaml").unlink()
    (root / name).write_bytes(CR)
    assert names(expand([str(root)]), root) == ([name] if read else [])


@pytest.mark.parametrize("char", [chr(c) for c in range(0x20, 0x7F)], ids=lambda c: f"U+{ord(c):04X}")
def test_each_ascii_character_of_a_name_is_kept_only_if_letter_digit_dot_dash_or_underscore(char: str) -> None:
    """An output file name keeps a letter, a digit, ``.``, ``-`` and ``_`` of a kind, namespace or name as they are,
    and writes every other printable character (a separator, a shell or URL metacharacter, ``~``, a space) as
    ``%XX``, so a name read from a repository names one plain file and reads the same on every file system."""
    kept = char.isalnum() or char in "._-"
    assert safe_file_name(["a" + char + "b"], "yaml") == ("a" + (char if kept else f"%{ord(char):02X}") + "b.yaml")
