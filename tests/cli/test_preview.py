"""``memcached-gitops preview --base REF``: on real git repositories of two commits (a base branch and
a pull request's branch), with the real kustomize of kubectl, as a reviewer would run it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memcached_gitops.preview_report import GITHUB_COMMENT_LIMIT, markdown_report
from memcached_gitops.rendered_diff import AppPreview, ObjectChange, Side, Transform, compare, find_renames
from tests.support.gitrepo import git, two_commits, write

CR = """apiVersion: cache.example.com/v1alpha1
kind: Memcached
metadata:
  name: {name}
spec:
  size: {size}
  resources:
    limits:
      memory: {memory}
"""
OVERLAY = "namespace: {namespace}\nnamePrefix: {prefix}\nresources:\n- ../../base\n"
BASE = "resources:\n- cache.yaml\n"


def cr(name: str = "cache", size: int = 1, memory: str = "128Mi") -> str:
    return CR.format(name=name, size=size, memory=memory)


def preview(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcached_gitops", "preview", "--base", "main", *args], cwd=repo,
                          capture_output=True, text=True, timeout=300)


def summary(out: str) -> list[str]:
    """The summary of a text report: its lines before the first diff."""
    return out.split("\n\n")[0].splitlines()


def overlay_repo(tmp_path: Path, change: dict[str, str | None], **crs: str) -> Path:
    base = {"base/cache.yaml": crs.get("base", cr()), "base/kustomization.yaml": BASE,
            "overlays/prod/kustomization.yaml": OVERLAY.format(namespace="prod", prefix="dev-")}
    return two_commits(tmp_path / "repo", base, change)


def test_a_size_change_brings_a_budget_and_names_the_field(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"base/cache.yaml": cr(size=3)})
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    lines = summary(proc.stdout)
    assert lines[1] == "overlays/prod: added PodDisruptionBudget 1; changed Deployment 1, Memcached 1"
    assert lines[2].startswith("  Memcached prod/dev-cache: spec.size: 1 -> 3 (")
    assert "added PodDisruptionBudget prod/dev-cache-memcached" in lines[2]
    assert "-  replicas: 1\n+  replicas: 3" in proc.stdout
    assert "+++ pr/overlays/prod: PodDisruptionBudget prod/dev-cache-memcached\n" in proc.stdout
    assert "--- /dev/null\n+++ pr/overlays/prod: PodDisruptionBudget" in proc.stdout


def test_a_name_prefix_change_is_one_summary_line(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"overlays/prod/kustomization.yaml": OVERLAY.format(namespace="prod", prefix="prod-")},
                        base=cr(size=2))
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    lines = summary(proc.stdout)
    assert lines[1] == "overlays/prod: renamed Deployment 1, Memcached 1, PodDisruptionBudget 1, Service 1"
    assert [line for line in lines if "renamed by" in line] == ["  renamed by namePrefix 'dev-' -> 'prod-': 4 objects"]
    assert "added" not in proc.stdout.split("\n\n")[0] and "removed" not in proc.stdout.split("\n\n")[0]
    assert "--- base/overlays/prod: Deployment prod/dev-cache\n+++ pr/overlays/prod: Deployment prod/prod-cache" in proc.stdout


def test_a_cr_added_and_one_removed(tmp_path: Path) -> None:
    base = {"apps/cache/a.yaml": cr("cache-a"), "apps/cache/keep.yaml": cr("keep")}
    repo = two_commits(tmp_path / "repo", base, {"apps/cache/a.yaml": None, "apps/cache/b.yaml": cr("cache-b", size=2)})
    proc = preview(repo)
    assert proc.returncode == 1, proc.stderr
    lines = summary(proc.stdout)
    assert lines[1] == ("apps/cache: added Deployment 1, Memcached 1, PodDisruptionBudget 1, Service 1; "
                        "removed Deployment 1, Memcached 1, Service 1")
    assert lines[2].startswith("  Memcached cache-b added (")
    assert lines[3].startswith("  Memcached cache-a removed (")
    assert not any("renamed" in line for line in lines), "cache-a -> cache-b is no namePrefix/nameSuffix change"
    assert "keep" not in proc.stdout


def test_a_resources_change_shows_the_memory_limit(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"base/cache.yaml": cr(memory="256Mi")})
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    assert "-        - --memory-limit=96\n+        - --memory-limit=204\n" in proc.stdout
    assert summary(proc.stdout)[2].startswith("  Memcached prod/dev-cache: spec.resources.limits.memory: 128Mi -> 256Mi (")


def test_an_overlay_that_stops_building_is_reported_not_a_crash(tmp_path: Path) -> None:
    broken = "namespace: prod\nresources:\n- ../../missing\n"
    repo = overlay_repo(tmp_path, {"overlays/prod/kustomization.yaml": broken})
    proc = preview(repo)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "" and "Traceback" not in proc.stdout
    lines = summary(proc.stdout)
    assert lines[0].endswith("; 1 cannot be read")
    assert len(lines) == 2 and lines[1].startswith(
        "overlays/prod: error (pull request): overlays/prod: kustomize build failed: "), lines


def test_an_invalid_cr_on_either_side_is_named_by_file_and_line(tmp_path: Path) -> None:
    bad = cr() + "  sizee: 3\n"
    repo = two_commits(tmp_path / "repo", {"apps/a/cache.yaml": bad, "apps/b/cache.yaml": cr()}, {"apps/a/cache.yaml": cr(),
                                                                                                   "apps/b/cache.yaml": bad})
    proc = preview(repo)
    assert proc.returncode == 2
    assert summary(proc.stdout)[1:] == [
        "apps/a: error (base): apps/a/cache.yaml:10:3: Memcached/cache: spec.sizee: unknown field \"spec.sizee\"",
        "apps/b: error (pull request): apps/b/cache.yaml:10:3: Memcached/cache: spec.sizee: unknown field \"spec.sizee\""]


def test_a_base_without_any_kustomization(tmp_path: Path) -> None:
    """The pull request turns a folder of plain manifests into a kustomization: the folder is one application on both sides."""
    repo = two_commits(tmp_path / "repo", {"apps/cache/cache.yaml": cr(size=2)},
                       {"apps/cache/kustomization.yaml": "namePrefix: team-\nresources:\n- cache.yaml\n"})
    assert "kustomization" not in git(repo, "ls-tree", "-r", "--name-only", "main")
    proc = preview(repo)
    assert proc.returncode == 1, proc.stderr
    assert summary(proc.stdout)[1:] == ["apps/cache: renamed Deployment 1, Memcached 1, PodDisruptionBudget 1, Service 1",
                                        "  renamed by namePrefix '' -> 'team-': 4 objects"]


def test_no_change_exits_0_and_the_working_tree_is_left_alone(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"README.md": "docs only\n"})
    (repo / "notes.txt").write_text("uncommitted\n")
    status = git(repo, "status", "--porcelain")
    proc = preview(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary(proc.stdout) == ["0 of 2 application(s) change between the merge base "
                                    f"{git(repo, 'merge-base', 'main', 'HEAD')[:12]} of main and the working tree"]
    assert git(repo, "status", "--porcelain") == status
    assert len(git(repo, "worktree", "list").splitlines()) == 1, "the base's worktree is removed"


def test_a_preview_that_fails_once_the_base_is_checked_out_leaves_no_worktree(tmp_path: Path) -> None:
    """The base is checked out in a worktree of the repository: whatever ends the preview after that (here a
    path on neither side, found only then), the worktree is removed, and git lists none."""
    repo = overlay_repo(tmp_path, {"README.md": "x\n"})
    proc = preview(repo, "apps/never")
    assert proc.returncode == 2 and proc.stderr.startswith("error: apps/never: no such file or directory"), proc.stderr
    assert len(git(repo, "worktree", "list").splitlines()) == 1, git(repo, "worktree", "list")


def test_the_working_tree_as_it_is_is_the_pull_request_side(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"README.md": "docs only\n"})
    write(repo, {"base/cache.yaml": cr(size=3)})  # not committed
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1
    assert "spec.size: 1 -> 3" in proc.stdout
    assert "size: 3" in (repo / "base" / "cache.yaml").read_text()


def test_a_base_that_is_no_ref_is_one_line(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"README.md": "x\n"})
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "preview", "--base", "no-such-branch"], cwd=repo,
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "error: --base no-such-branch: no such branch, tag or commit in this repository (not fetched?)\n"


def test_a_base_with_no_common_history_is_one_line(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"README.md": "x\n"})
    git(repo, "checkout", "-q", "--orphan", "lonely")
    git(repo, "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "no shared history")
    proc = preview(repo)
    assert proc.returncode == 2
    assert proc.stderr == "error: main and HEAD have no common commit (a shallow clone? check out with fetch-depth: 0)\n"


def test_a_path_outside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"README.md": "x\n"})
    proc = preview(repo, "..")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ..: outside the repository")


def thousand_crs(tmp_path: Path, change: str) -> Path:
    """1,000 CRs over 20 overlays (50 each); the pull request changes one overlay, or (``all``) every CR's memory."""
    base: dict[str, str] = {}
    for o in range(20):
        base[f"overlays/team-{o:02}/kustomization.yaml"] = f"namespace: team-{o:02}\nresources:\n- caches.yaml\n"
        base[f"overlays/team-{o:02}/caches.yaml"] = "---\n".join(cr(f"cache-{i:03}", size=2) for i in range(50))
    if change == "all":
        pr = {k: v.replace("128Mi", "256Mi") for k, v in base.items() if k.endswith("caches.yaml")}
    else:
        pr = {"overlays/team-07/caches.yaml": base["overlays/team-07/caches.yaml"].replace("name: cache-010\nspec:\n  size: 2",
                                                                                            "name: cache-010\nspec:\n  size: 1")}
    return two_commits(tmp_path / "repo", base, dict(pr))


def test_a_thousand_crs_over_twenty_overlays(tmp_path: Path) -> None:
    repo = thousand_crs(tmp_path, "one")
    proc = preview(repo)
    assert proc.returncode == 1, proc.stderr
    assert summary(proc.stdout) == [
        f"1 of 20 application(s) change between the merge base {git(repo, 'merge-base', 'main', 'HEAD')[:12]} of main "
        "and the working tree",
        "overlays/team-07: changed Deployment 1, Memcached 1; removed PodDisruptionBudget 1",
        "  Memcached team-07/cache-010: spec.size: 2 -> 1 (changed Deployment team-07/cache-010, changed Memcached "
        "team-07/cache-010, removed PodDisruptionBudget team-07/cache-010-memcached)"]


def test_a_thousand_changed_crs_fit_one_pull_request_comment(tmp_path: Path) -> None:
    repo = thousand_crs(tmp_path, "all")
    proc = preview(repo, "--format", "markdown")
    assert proc.returncode == 1, proc.stderr
    text = proc.stdout
    assert len(text) <= GITHUB_COMMENT_LIMIT
    assert text.index("| application |") < text.index("<details>")
    assert text.count("| <code>overlays/team-") == 20
    assert text.count("<details>") == text.count("</details>")
    assert text.count("```diff") == text.count("\n```\n")
    last = text.rstrip().splitlines()[-1]
    assert re.fullmatch(r"_Truncated to fit GitHub's 65,536-character limit: \d+ application section\(s\) and [\d,]+ "
                        r"line\(s\) left out\. See everything locally with "
                        r"<code>memcached-gitops preview --base main \.</code>\._", last), last


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_both_formats_say_the_same_causes(tmp_path: Path, fmt: str) -> None:
    repo = overlay_repo(tmp_path, {"base/cache.yaml": cr(size=3)})
    proc = preview(repo, "--format", fmt, "overlays/prod")
    assert proc.returncode == 1
    assert "Memcached prod/dev-cache: spec.size: 1 -&gt; 3" in proc.stdout if fmt == "markdown" else "spec.size: 1 -> 3" in proc.stdout


def app_preview(app: str, lines: int, text: str = "value") -> AppPreview:
    key = ("v1", "ConfigMap", "ns", app.replace("/", "-"))
    diff = ["--- base", "+++ pr", "@@ -1 +1 @@", *[f"+  {text} {i}" for i in range(lines)]]
    return AppPreview(app, [ObjectChange("changed", key, None, diff, "")], [], [])


@pytest.mark.parametrize("limit", [2_000, 5_000, 20_000, GITHUB_COMMENT_LIMIT])
def test_the_markdown_never_passes_its_limit(limit: int) -> None:
    previews = [app_preview(f"apps/{i}", 300) for i in range(40)]
    text = markdown_report(previews, "main", "0" * 40, "memcached-gitops preview --base main")
    cut = markdown_report(previews, "main", "0" * 40, "memcached-gitops preview --base main", limit=limit)
    assert len(text) <= GITHUB_COMMENT_LIMIT and len(cut) <= limit
    assert cut.count("<details>") == cut.count("</details>")
    left = re.search(r"(\d+) application section\(s\) and ([\d,]+) line\(s\) left out", cut)
    assert left is not None
    shown = sum(len(block.split("\n```\n")[0].splitlines()) - 1 for block in cut.split("```diff")[1:])
    assert shown + int(left[2].replace(",", "")) == 40 * 303, "what is shown and what is said to be left out add up"


def test_the_table_cut_to_fit_says_how_many_applications_it_left_out() -> None:
    """Thousands of applications: the table is cut to fit, and its rows shown (less its two header rows)
    plus the rows it says it left out are every application changed, not one more or less."""
    previews = [app_preview(f"apps/{i}", 1) for i in range(3000)]
    text = markdown_report(previews, "main", "0" * 40, "memcached-gitops preview --base main", limit=20_000)
    rows = [line for line in text.split("\n\n<details>")[0].splitlines() if line.startswith("| ")]
    left = re.search(r"_(\d+) more row\(s\) left out\._", text)
    assert left is not None and 0 < len(rows) - 2 < 3000, text[:500]
    assert len(rows) - 2 + int(left[1]) == 3000


def test_a_backtick_fence_or_markup_in_the_input_cannot_break_out() -> None:
    """A value of a ConfigMap holding ``` or </details>, an application folder named with | and <: all stay text."""
    evil = app_preview("apps/a|b<script>", 3, text="``` </details><img src=x>")
    text = markdown_report([evil], "main", "0" * 40, "memcached-gitops preview --base main")
    assert "````diff" in text and text.count("\n````\n") == 1, "the fence is longer than any run of backticks inside"
    assert "<script>" not in text and "<img" not in text.split("````diff")[0]
    assert "| <code>apps/a&#124;b&lt;script&gt;</code> |" in text


def test_a_base_that_did_not_build_is_named_by_the_repositorys_own_paths(tmp_path: Path) -> None:
    """kustomize names files by their full path: at the base, that of a temporary worktree, which the preview never shows."""
    broken = "namespace: prod\nresources:\n- ../../missing\n"
    base = {"base/cache.yaml": cr(), "base/kustomization.yaml": BASE, "overlays/prod/kustomization.yaml": broken}
    repo = two_commits(tmp_path / "repo", base, {"overlays/prod/kustomization.yaml": OVERLAY.format(namespace="prod", prefix="")})
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 2
    [line] = summary(proc.stdout)[1:]
    assert line.startswith("overlays/prod: error (base): overlays/prod: kustomize build failed: ")
    assert "memcached-gitops-preview-" not in proc.stdout and str(tmp_path) not in proc.stdout


def test_from_a_folder_of_the_repository(tmp_path: Path) -> None:
    """Both sides are read at the same place below the repository's top, and named from there."""
    repo = two_commits(tmp_path / "repo", {"apps/team/cache.yaml": cr(), "other/cache.yaml": cr("other")},
                       {"apps/team/cache.yaml": cr(size=2), "other/cache.yaml": cr("other", size=2)})
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "preview", "--base", "main"], cwd=repo / "apps",
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    lines = summary(proc.stdout)
    assert lines[0].startswith("1 of 1 application(s) change")
    assert lines[1] == "team: added PodDisruptionBudget 1; changed Deployment 1, Memcached 1"


def test_outside_a_git_repository_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "cache.yaml").write_text(cr())
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "preview", "--base", "main"], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr.startswith("error: git rev-parse: fatal: not a git repository")


@pytest.mark.parametrize(("old", "new", "said"), [
    (["cache", "cache-memcached"], ["prod-cache", "prod-cache-memcached"], "renamed by namePrefix '' -> 'prod-'"),
    (["dev-cache", "dev-cache-memcached"], ["prod-cache", "prod-cache-memcached"], "renamed by namePrefix 'dev-' -> 'prod-'"),
    (["cache", "cache-memcached"], ["cache-v2", "cache-memcached-v2"], "renamed by nameSuffix '' -> '-v2'"),
    (["dev-cache", "dev-cache-memcached"], ["cache-blue", "cache-memcached-blue"],
     "renamed by namePrefix 'dev-' -> '', nameSuffix '' -> '-blue'"),
])
def test_a_prefix_or_suffix_change_is_told_as_kustomize_spells_it(old: list[str], new: list[str], said: str) -> None:
    """kustomize puts namePrefix before and nameSuffix after each whole name (a Service's -memcached included)."""
    removed = {("v1", "Service", "ns", name): {} for name in old}
    added = {("v1", "Service", "ns", name): {} for name in new}
    [(transform, pairs)] = find_renames(removed, added)
    assert transform.describe() == said
    assert [(o[3], n[3]) for o, n in pairs] == sorted(zip(old, new, strict=True))


def test_unrelated_names_are_no_rename() -> None:
    removed = {("v1", "Service", "ns", name): {} for name in ("alpha", "beta", "gamma")}
    added = {("v1", "Service", "ns", name): {} for name in ("delta", "omega", "kappa")}
    assert find_renames(removed, added) == []


def test_a_thousand_problems_fit_the_comment_too() -> None:
    """An application whose every CR is refused: its problem lines are cut like a diff, and counted."""
    failing = AppPreview("apps/a", [], [], [("pr", f"apps/a/cache.yaml:{i}:3: Memcached/c{i}: spec.sizee: unknown field")
                                           for i in range(2_000)])
    text = markdown_report([failing, app_preview("apps/b", 10)], "main", "0" * 40, "memcached-gitops preview --base main")
    assert len(text) <= GITHUB_COMMENT_LIMIT
    shown = text.count("spec.sizee: unknown field")
    said = re.search(r"_(\d+) more line\(s\) of this application left out\._", text)
    assert said is not None and shown + int(said[1]) == 2_000
    assert f"1 application section(s) and {int(said[1]) + 13:,} line(s) left out" in text, "apps/b's 13 diff lines are left out too"


def test_a_namespace_change_is_one_summary_line(tmp_path: Path) -> None:
    repo = overlay_repo(tmp_path, {"overlays/prod/kustomization.yaml": OVERLAY.format(namespace="production", prefix="dev-")},
                        base=cr(size=2))
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    assert summary(proc.stdout)[1:] == ["overlays/prod: renamed Deployment 1, Memcached 1, PodDisruptionBudget 1, Service 1",
                                        "  moved by namespace 'prod' -> 'production': 4 objects"]
    assert "--- base/overlays/prod: Deployment prod/dev-cache\n+++ pr/overlays/prod: Deployment production/dev-cache" in proc.stdout


def test_an_overlay_moved_to_another_namespace_and_prefix_is_said_to_be_moved_and_renamed(tmp_path: Path) -> None:
    """Promoting an overlay often changes its namespace and its namePrefix together. Each object then gets a
    new name as well as a new namespace (a new Deployment, Service and budget, the old ones deleted): the
    summary must say both, not "moved" alone, which would tell the reviewer the objects kept their names."""
    repo = overlay_repo(tmp_path, {"overlays/prod/kustomization.yaml": OVERLAY.format(namespace="production", prefix="prod-")},
                        base=cr(size=2))
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    assert summary(proc.stdout)[1:] == [
        "overlays/prod: renamed Deployment 1, Memcached 1, PodDisruptionBudget 1, Service 1",
        "  moved and renamed by namePrefix 'dev-' -> 'prod-', namespace 'prod' -> 'production': 4 objects"]
    assert "--- base/overlays/prod: Deployment prod/dev-cache\n+++ pr/overlays/prod: Deployment production/prod-cache" in proc.stdout


def test_a_prefix_change_is_one_rename_even_when_the_pull_request_also_deletes_caches_that_sort_around_it(
        tmp_path: Path) -> None:
    """A pull request that changes an overlay's namePrefix and retires some of its CRs: the retired CRs'
    objects (one sorting before the kept CR, one after) match no added object, yet the search for the
    rename must go past them, so the kept CR's objects are told as one rename and only the retired ones
    as removed, not every object as removed plus added."""
    base = {"base/analytics.yaml": cr("analytics", size=2), "base/sessions.yaml": cr("sessions", size=2),
            "base/web.yaml": cr("web", size=2),
            "base/kustomization.yaml": "resources:\n- analytics.yaml\n- sessions.yaml\n- web.yaml\n",
            "overlays/prod/kustomization.yaml": OVERLAY.format(namespace="prod", prefix="dev-")}
    change = {"base/analytics.yaml": None, "base/web.yaml": None, "base/kustomization.yaml": "resources:\n- sessions.yaml\n",
              "overlays/prod/kustomization.yaml": OVERLAY.format(namespace="prod", prefix="prod-")}
    repo = two_commits(tmp_path / "repo", base, change)
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    lines = summary(proc.stdout)
    assert lines[1] == ("overlays/prod: removed Deployment 2, Memcached 2, PodDisruptionBudget 2, Service 2; "
                        "renamed Deployment 1, Memcached 1, PodDisruptionBudget 1, Service 1"), lines
    assert [line for line in lines if "renamed by" in line] == ["  renamed by namePrefix 'dev-' -> 'prod-': 4 objects"], lines
    assert "--- base/overlays/prod: Deployment prod/dev-sessions\n+++ pr/overlays/prod: Deployment prod/prod-sessions" in proc.stdout
    assert "pr/overlays/prod: Deployment prod/prod-analytics" not in proc.stdout


def test_the_base_side_is_the_merge_base_not_the_tip_of_the_base_branch(tmp_path: Path) -> None:
    """As a pull request's "Files changed": main moved on after the branch (another CR's size changed
    there) and the preview shows only what this branch changes, never main's later work undone."""
    repo = overlay_repo(tmp_path, {"base/cache.yaml": cr(size=3)})
    git(repo, "checkout", "-q", "main")
    write(repo, {"overlays/prod/kustomization.yaml": OVERLAY.format(namespace="prod", prefix="main-")})
    git(repo, "commit", "-qam", "main moves on")
    git(repo, "checkout", "-q", "pr")
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    lines = summary(proc.stdout)
    assert lines[1] == "overlays/prod: added PodDisruptionBudget 1; changed Deployment 1, Memcached 1", lines
    assert "main-" not in proc.stdout


def test_markdown_in_a_name_stays_text_in_the_summary() -> None:
    """GitHub renders links and images inside ``<code>``: a CR or folder name of Markdown must not become
    an image fetched from the reviewer's browser or a link in the job summary."""
    evil = app_preview("apps/![p](https://evil.example/p.png)[click](https://evil.example/)", 1)
    text = markdown_report([evil], "main", "0" * 40, "memcached-gitops preview --base main")
    table = text.split("````")[0].split("```")[0]
    assert "](" not in table and "![" not in table, table


def test_from_a_folder_the_branch_added(tmp_path: Path) -> None:
    """Run from a folder that does not exist at the merge base: its objects are all added, never a traceback."""
    repo = overlay_repo(tmp_path, {"newapp/cache.yaml": cr(name="fresh")})
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "preview", "--base", "main", "."], cwd=repo / "newapp",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "added" in proc.stdout and "fresh" in proc.stdout, proc.stdout


def test_checking_out_the_base_runs_no_hook_of_the_repository(tmp_path: Path) -> None:
    """preview checks the merge base out in a worktree: git would run the repository's post-checkout hook
    there (a hook set up on the runner, or one a workflow installed from the repository: pre-commit's,
    husky's). Hooks are off for every git command preview runs."""
    repo = overlay_repo(tmp_path, {"base/cache.yaml": cr(size=3)})
    ran = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    proc = preview(repo, "overlays/prod")
    assert proc.returncode == 1, proc.stderr
    assert "spec.size: 1 -> 3" in proc.stdout
    assert not ran.exists(), "the repository's hook ran"


def test_each_side_reads_within_its_own_input_limit(tmp_path: Path) -> None:
    """--max-input-size bounds what each side reads, the base's and the pull request's apart: a
    repository whose sides each fit it previews (exit 1, the change shown), though both together would
    not; a side that alone passes it is reported as that side's error (exit 2)."""
    repo = two_commits(tmp_path / "repo", {"cache.yaml": cr()}, {"cache.yaml": cr(size=3)})
    side = len(cr(size=3).encode())
    proc = preview(repo, "--max-input-size", str(side + side // 2), ".")
    assert proc.returncode == 1 and "spec.size: 1 -> 3" in proc.stdout, proc.stdout + proc.stderr
    write(repo, {"cache.yaml": cr(size=3) + "# " + "x" * side + "\n"})
    proc = preview(repo, "--max-input-size", str(side + side // 2), ".")
    assert proc.returncode == 2 and "(pull request): " in proc.stdout and "larger than the limit" in proc.stdout, proc.stdout
    assert "(main)" not in proc.stdout and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("named", ["apps/gone", "apps/gone/a.yaml"])
def test_a_pull_request_that_deletes_what_is_named_previews_its_removal(tmp_path: Path, named: str) -> None:
    """The path named exists only at the base (the pull request deletes the application, or its file):
    the preview is that removal (exit 1), never "no such file"; a path on neither side is one line, exit 2."""
    base = {"apps/gone/a.yaml": cr("gone"), "apps/kept/b.yaml": cr("kept")}
    repo = two_commits(tmp_path / "repo", base, {"apps/gone/a.yaml": None})
    proc = preview(repo, named)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = summary(proc.stdout)
    assert any(line.startswith("  Memcached gone removed (") for line in lines), lines
    assert "removed Deployment 1, Memcached 1, Service 1" in proc.stdout, proc.stdout
    proc = preview(repo, "apps/never")
    assert proc.returncode == 2 and proc.stderr.startswith("error: apps/never: no such file or directory"), proc.stderr



def test_an_object_of_another_kind_beside_the_cr_is_previewed_too(tmp_path: Path) -> None:
    """Argo CD deploys what ``argocd-generate`` emits: the CRs' rendering and every other object of the
    application (a ConfigMap beside the cache). A pull request that changes only that ConfigMap
    changes what is deployed: its preview says so (exit 1, the ConfigMap's diff), not "no change"."""
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: '{value}'\n"
    base = {"apps/cache/cache.yaml": cr(), "apps/cache/settings.yaml": cm.format(value=1)}
    repo = two_commits(tmp_path / "repo", base, {"apps/cache/settings.yaml": cm.format(value=2)})
    proc = preview(repo, "apps")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert summary(proc.stdout)[1] == "apps/cache: changed ConfigMap 1", proc.stdout
    assert "-  k: '1'\n+  k: '2'\n" in proc.stdout, proc.stdout


@pytest.mark.parametrize("layout", ["files", "kustomization"])
def test_a_new_applications_preview_lists_what_argo_cd_would_deploy(tmp_path: Path, layout: str) -> None:
    """Two clients, one truth: the preview of a pull request that adds an application lists as added
    exactly the objects ``argocd-generate`` emits for it (run as Argo CD's sidecar runs it, letting
    every kind through): the CR, its rendering, and the objects beside it."""
    import yaml

    from tests.support.argocd import generate, repo_server_env

    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n"
    app = {"apps/new/cache.yaml": cr(size=2), "apps/new/settings.yaml": cm}
    if layout == "kustomization":
        app["apps/new/kustomization.yaml"] = "namespace: shop\nresources:\n- cache.yaml\n- settings.yaml\n"
    repo = two_commits(tmp_path / "repo", {"README.md": "# caches\n"}, app)
    proc = preview(repo, "apps")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    added = [line for line in proc.stdout.splitlines() if line.startswith("+++ pr/apps/new: ")]
    previewed = sorted(line.removeprefix("+++ pr/apps/new: ") for line in added)
    plugin = {"parameters": [{"name": "include-input", "string": "true"}]}
    out = generate(repo / "apps" / "new", repo_server_env(plugin), {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": "*"})
    assert out.returncode == 0, out.stderr.decode()
    emitted = sorted(f"{o['kind']} {o['metadata'].get('namespace', '') + '/' if o['metadata'].get('namespace') else ''}"
                     f"{o['metadata']['name']}" for o in yaml.safe_load_all(out.stdout) if o)
    assert previewed == emitted, (previewed, emitted)


def test_a_rename_found_in_one_namespace_leaves_the_others_alone() -> None:
    """A namePrefix change in team1 (dev- to prod-) is not one in team2: team2's dev-web, with no
    prod-web beside it, is removed, not renamed into team1 (two removed objects paired with one added)."""
    def deployment(namespace: str, name: str) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": namespace, "name": name}, "spec": {"replicas": 1}}

    base = Side([deployment("team1", "dev-web"), deployment("team1", "dev-api"), deployment("team2", "dev-web")], [])
    head = Side([deployment("team1", "prod-web"), deployment("team1", "prod-api")], [])
    [app] = compare({"app": base}, {"app": head})
    assert [(c.action, c.key[2:], c.old and c.old[2:]) for c in app.changes] == [
        ("renamed", ("team1", "prod-api"), ("team1", "dev-api")), ("renamed", ("team1", "prod-web"), ("team1", "dev-web")),
        ("removed", ("team2", "dev-web"), None)]
    assert app.renames == ["renamed by namePrefix 'dev-' -> 'prod-': 2 objects"]


def test_a_folder_whose_name_starts_like_a_kustomizations_is_an_application_of_its_own(tmp_path: Path) -> None:
    """``apps/cache/`` is built by its kustomization; ``apps/cache-staging/`` beside it (plain manifests)
    only shares the start of its name, and is an application of its own: a change there is previewed."""
    base = {"apps/cache/kustomization.yaml": "resources:\n- cr.yaml\n", "apps/cache/cr.yaml": cr(),
            "apps/cache-staging/cr.yaml": cr(name="staging")}
    repo = two_commits(tmp_path / "repo", base, {"apps/cache-staging/cr.yaml": cr(name="staging", size=3)})
    proc = preview(repo, "apps")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = summary(proc.stdout)
    assert lines[0].startswith("1 of 2 application(s) change"), lines
    assert lines[1] == "apps/cache-staging: added PodDisruptionBudget 1; changed Deployment 1, Memcached 1", lines


@pytest.mark.parametrize("annotation", ["kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision"])
def test_what_kubectl_or_a_controller_writes_is_left_out_even_alone(annotation: str) -> None:
    """A manifest exported from a cluster and cleaned of its server fields but for an annotation that
    kubectl apply or the Deployment controller writes: that annotation differing between the sides is
    no change (it is never what a pull request asks for), and a change elsewhere is shown without it."""
    def configmap(note: str, data: str = "1") -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "annotations": {annotation: note, "team": "a"}},
                "data": {"x": data}}

    [same] = compare({"app": Side([configmap("{\"old\": 1}")], [])}, {"app": Side([configmap("{\"new\": 2}")], [])})
    assert same.changes == [], same.changes
    [changed] = compare({"app": Side([configmap("{\"old\": 1}")], [])}, {"app": Side([configmap("{\"new\": 2}", "2")], [])})
    [change] = changed.changes
    assert change.action == "changed" and annotation not in change.diff and "team" not in change.diff, change.diff
    # that annotation alone on one side, no annotations on the other: the same object
    alone = configmap("{}")
    alone["metadata"]["annotations"] = {annotation: "{}"}
    bare = configmap("{}")
    del bare["metadata"]["annotations"]
    for old, new in ((alone, bare), (bare, alone)):
        [same] = compare({"app": Side([old], [])}, {"app": Side([new], [])})
        assert same.changes == [], same.changes


def test_an_object_is_traced_to_a_cr_only_when_we_made_it() -> None:
    """A change is explained by a CR's field only for the CR itself and what this tool rendered from it
    (managed-by memcached-gitops and its instance label): another tool's ConfigMap that carries the same
    instance label (Helm's, here) changes on its own account, with no CR named as its cause."""
    def memcached(size: int) -> dict:
        return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "cache"}, "spec": {"size": size}}

    def configmap(value: str) -> dict:
        labels = {"app.kubernetes.io/instance": "cache", "app.kubernetes.io/managed-by": "Helm"}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cache-settings", "labels": labels}, "data": {"x": value}}

    [app] = compare({"app": Side([memcached(1), configmap("1")], [])}, {"app": Side([memcached(2), configmap("2")], [])})
    assert sorted((c.key[1], c.cause) for c in app.changes) == [
        ("ConfigMap", ""), ("Memcached", "Memcached cache: spec.size: 1 -> 2")], app.changes


def test_a_name_that_is_only_the_old_prefix_is_no_rename_of_it() -> None:
    """A namePrefix change renames a name made of the prefix and a core of at least one character: a name
    that is the old prefix alone (``dev-``) has no core, so it is not renamed into the new prefix."""
    change = Transform("dev-", "", "prod-", "")
    assert change.apply("dev-cache") == "prod-cache"
    assert change.apply("dev-") is None and Transform("", "-a", "", "-b").apply("-a") is None


def test_a_cause_shows_four_fields_and_counts_the_rest() -> None:
    """A CR changed in more than four fields is named with its first four (in key order), then
    how many more: the summary line stays short, and never reads as if those four were all."""
    def memcached(value: int) -> dict:
        return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "cache"},
                "spec": {key: value for key in "abcdef"}}

    [app] = compare({"app": Side([memcached(1)], [])}, {"app": Side([memcached(2)], [])})
    assert [c.cause for c in app.changes] == [
        "Memcached cache: spec.a: 1 -> 2; spec.b: 1 -> 2; spec.c: 1 -> 2; spec.d: 1 -> 2; and 2 more"]


def test_a_field_given_on_one_side_only_is_named_as_the_cause() -> None:
    """A CR field the pull request adds (or takes away) is a cause as a changed one is: named with
    ``(none)`` for the side without it, so the summary says why the objects it made changed."""
    def memcached(**spec: object) -> dict:
        return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "cache"},
                "spec": {"size": 1, **spec}}

    limits = {"limits": {"memory": "256Mi"}}
    [added] = compare({"app": Side([memcached()], [])}, {"app": Side([memcached(resources=limits)], [])})
    assert [c.cause for c in added.changes] == ["Memcached cache: spec.resources: (none) -> {\"limits\": {\"memory\": \"256Mi\"}}"]
    [deeper] = compare({"app": Side([memcached(resources={"limits": {}})], [])}, {"app": Side([memcached(resources=limits)], [])})
    assert [c.cause for c in deeper.changes] == ["Memcached cache: spec.resources.limits.memory: (none) -> 256Mi"]
    [removed] = compare({"app": Side([memcached(maxConnections=512)], [])}, {"app": Side([memcached()], [])})
    assert [c.cause for c in removed.changes] == ["Memcached cache: spec.maxConnections: 512 -> (none)"]


def test_bad_input_anywhere_outranks_a_change_elsewhere_in_the_exit_code(tmp_path: Path) -> None:
    """The exit code CI reads is that of the whole preview: 2 when any application's side cannot be read,
    even beside another application's change, which is still shown (diff's codes, the worst one winning)."""
    bad = cr("b") + "  sizee: 3\n"
    repo = two_commits(tmp_path / "repo", {"apps/a/cache.yaml": cr("a"), "apps/b/cache.yaml": cr("b")},
                       {"apps/a/cache.yaml": cr("a", size=3), "apps/b/cache.yaml": bad})
    proc = preview(repo, "apps")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = summary(proc.stdout)
    assert any(line.startswith("apps/a: ") and "changed" in line for line in lines), lines
    assert any(line.startswith("apps/b: error (pull request): ") for line in lines), lines


def test_the_cap_on_kustomize_builds_is_each_sides_across_all_its_applications(tmp_path: Path) -> None:
    """Each side's applications share one cap on builds (MEMCACHED_GITOPS_KUSTOMIZE_MAX_BUILDS), as one
    render of the repository would: under a cap of 1, the second kustomization of a side is refused by
    name on that side (exit 2), and the first still builds; each side has a cap of its own."""
    app = {f"apps/{n}/{f}": text for n in ("a", "b") for f, text in (("cache.yaml", cr(n)), ("kustomization.yaml", BASE))}
    repo = two_commits(tmp_path / "repo", app, {"apps/a/cache.yaml": cr("a", size=3)})
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "preview", "--base", "main", "apps"], cwd=repo,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMCACHED_GITOPS_KUSTOMIZE_MAX_BUILDS": "1"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = summary(proc.stdout)
    assert any(line.startswith("apps/a: ") and "changed" in line for line in lines), lines
    refused = [line for line in lines if line.startswith("apps/b: error (")]
    assert [line.split(": ")[1] for line in refused] == ["error (base)", "error (pull request)"], lines
    assert all("more than 1 kustomize builds in one run" in line for line in refused), lines


def test_an_application_over_the_object_cap_is_its_own_error_and_the_others_are_still_previewed(tmp_path: Path) -> None:
    """--max-objects (here MEMCACHED_GITOPS_MAX_OBJECTS) bounds each application's rendering: the one past
    it is reported on each side as refused, and every application after it is still read and compared."""
    base = {"apps/a/one.yaml": cr("one"), "apps/a/two.yaml": cr("two"), "apps/b/cache.yaml": cr("b")}
    repo = two_commits(tmp_path / "repo", base, {"apps/b/cache.yaml": cr("b", memory="256Mi")})
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "preview", "--base", "main", "apps"], cwd=repo,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "MEMCACHED_GITOPS_MAX_OBJECTS": "4"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = summary(proc.stdout)
    assert [line.split(": ")[:2] for line in lines if line.startswith("apps/a: ")] == [["apps/a", "error (base)"],
                                                                                      ["apps/a", "error (pull request)"]], lines
    assert any(line.startswith("apps/b: changed ") for line in lines), lines


def test_the_base_side_is_read_in_its_checkout_and_the_working_directory_is_given_back_whatever_happens(
        tmp_path: Path) -> None:
    """``inside`` is where the base side is read: the working directory is the checkout's within it, and
    the caller's again after it, also when the reading raises (the pull request's side is read next,
    from the caller's folder)."""
    from memcached_gitops.preview import inside

    here = os.getcwd()
    with inside(str(tmp_path)):
        assert os.getcwd() == str(tmp_path.resolve())
    assert os.getcwd() == here
    with pytest.raises(KeyError), inside(str(tmp_path)):
        raise KeyError("a reading that fails")
    assert os.getcwd() == here



def test_each_sides_applications_share_one_budget_of_yaml_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A side reads its applications within one budget of YAML nodes, as one render of the repository
    would (MAX_NODES at the default input cap, here made small): two applications that each fit it but
    not together have the second refused, with its file and line; never a fresh budget per application."""
    from memcached_gitops.foundation import files
    from memcached_gitops.foundation.files import InputBudget
    from memcached_gitops.render import DEFAULT_IMAGE
    from memcached_gitops.schemas import Validator, load_crd

    from memcached_gitops.preview import read_side

    monkeypatch.setattr(files, "MAX_NODES", 300)
    maps = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nx: [" + "{}," * 179 + "{}]\n"
    write(tmp_path, {"apps/a/maps.yaml": maps, "apps/b/maps.yaml": maps})
    monkeypatch.chdir(tmp_path)
    sides = read_side(["apps"], Validator(load_crd()), DEFAULT_IMAGE, InputBudget(10_000_000), 20_000)
    assert sides["apps/a"].problems == [] and len(sides["apps/a"].objects) == 1, sides["apps/a"].problems
    assert len(sides["apps/b"].problems) == 1 and sides["apps/b"].problems[0].startswith("apps/b/maps.yaml:5:"), sides["apps/b"]
    assert "more than 300 YAML nodes" in sides["apps/b"].problems[0], sides["apps/b"].problems


def test_the_command_a_cut_comment_names_runs_the_same_preview_in_a_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The comment cut to fit names the command that shows everything locally: pasted into a shell, it
    is the same preview, its base and paths quoted where a space or shell syntax would split or run them."""
    import functools
    import html
    import shlex

    from memcached_gitops.render import DEFAULT_IMAGE
    from memcached_gitops.schemas import Validator, load_crd

    from memcached_gitops import preview as preview_command

    repo = two_commits(tmp_path / "repo", {"apps/my cache/cache.yaml": cr()}, {"apps/my cache/cache.yaml": cr(size=3)})
    git(repo, "branch", "fix;id", "main")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(preview_command, "markdown_report", functools.partial(markdown_report, limit=1_000))
    code = preview_command.run_preview("fix;id", ["apps/my cache"], "markdown", Validator(load_crd()), DEFAULT_IMAGE, None)
    said = re.search(r"See everything locally with <code>(.*)</code>\._$", capsys.readouterr().out)
    assert code == 1 and said is not None
    assert shlex.split(html.unescape(said[1])) == ["memcached-gitops", "preview", "--base", "fix;id", "apps/my cache"]


# --- the comparison's rules over any objects (hypothesis) ---

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from memcached_gitops.rendered_diff import changed_fields, transforms_between  # noqa: E402

LEAF = st.one_of(st.integers(-3, 3), st.booleans(), st.sampled_from(["", "a", "256Mi"]), st.lists(st.integers(0, 2), max_size=2))
SPEC = st.recursive(LEAF, lambda inner: st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3), max_leaves=8)


def _leaves(value: object, path: str) -> dict[str, object]:
    """Every leaf of a value by its dotted path: a map is walked (an empty one is a leaf), anything else is a leaf."""
    if isinstance(value, dict) and value:
        return {p: v for k, child in value.items() for p, v in _leaves(child, f"{path}.{k}").items()}
    return {path: value}


@settings(max_examples=100, deadline=None)
@given(old=st.dictionaries(st.sampled_from(["a", "b", "c"]), SPEC, max_size=3),
       new=st.dictionaries(st.sampled_from(["a", "b", "c"]), SPEC, max_size=3))
def test_a_cause_names_each_field_that_differs_whichever_side_has_it(old: dict, new: dict) -> None:
    """Between any two specs, a cause names a field exactly when something under it differs: a field on
    one side only, a map on one side and a value on the other, a list changed in any item; every leaf
    that differs is under a field named, and no field named is the same on both sides."""
    lines = changed_fields(old, new, "spec")
    named = [line.partition(": ")[0] for line in lines]
    old_leaves, new_leaves = ({p: v for k, child in spec.items() for p, v in _leaves(child, f"spec.{k}").items()} for spec in (old, new))

    def under(path: str, field: str) -> bool:
        return path == field or path.startswith(field + ".")

    # an empty map where the other side has a map with fields is no leaf of its own: those fields differ
    both = set(old_leaves) | set(new_leaves)
    differing = {p for p in both if (p not in old_leaves or p not in new_leaves or old_leaves[p] != new_leaves[p])
                 and not any(q != p and under(q, p) for q in both)}

    assert all(any(under(p, n) for n in named) for p in differing), (differing, lines)
    assert all(any(under(p, n) for p in differing) for n in named), (differing, lines)
    assert len(named) == len(set(named)) and (lines == []) == (old == new), lines


@settings(max_examples=100, deadline=None)
@given(old=st.text(alphabet="abcd-.", min_size=1, max_size=12), new=st.text(alphabet="abcd-.", min_size=1, max_size=12))
def test_every_rename_found_between_two_names_turns_the_first_into_the_second(old: str, new: str) -> None:
    """Any two names that share a character: every prefix/suffix change said between them, applied to the
    first, gives the second (a prefix only, a suffix only, both, or a separator at either end), around a
    core of the length it says that both names hold; names that share none have no rename between them."""
    candidates = transforms_between(old, new)
    assert bool(candidates) == bool(set(old) & set(new)), candidates
    for core, transform in candidates:
        assert transform.apply(old) == new, (old, new, transform)
        kept = old[len(transform.old_prefix):len(old) - len(transform.old_suffix)]
        assert old == transform.old_prefix + kept + transform.old_suffix and len(kept) == core >= 1, (old, new, core, transform)
        assert new == transform.new_prefix + kept + transform.new_suffix, (old, new, core, transform)


def test_every_place_a_run_occurs_in_the_new_name_is_a_candidate() -> None:
    """A run the new name holds more than once (overlapping too) gives a candidate at each place: which of
    them is the rename only the other objects of the build can tell."""
    found = {t for _, t in transforms_between("ab", "ab.ab.ab")}
    assert {Transform("", "", "", ".ab.ab"), Transform("", "", "ab.", ".ab"), Transform("", "", "ab.ab.", "")} <= found, found
    assert {Transform("", "", "", "a"), Transform("", "", "a", "")} <= {t for _, t in transforms_between("aa", "aaa")}


@pytest.mark.parametrize(("olds", "news", "words"), [
    (["web.x", "api.x"], ["web.y", "api.y"], "renamed by nameSuffix '.x' -> '.y'"),
    (["a.x", "b.x"], ["a.y", "b.y"], "renamed by nameSuffix '.x' -> '.y'"),
    (["dev-web", "dev-api"], ["prod-web", "prod-api"], "renamed by namePrefix 'dev-' -> 'prod-'"),
    (["web", "api"], ["web-v2", "api-v2"], "renamed by nameSuffix '' -> '-v2'"),
])
def test_a_rename_is_said_with_the_separator_beside_its_fix(olds: list[str], news: list[str], words: str) -> None:
    """The rename is said as the kustomization says it: a separator between the fix and the core belongs
    to the fix (``nameSuffix: .y``), whatever the length of the core."""
    renames = find_renames({("v1", "Service", "", o): {} for o in olds}, {("v1", "Service", "", n): {} for n in news})
    assert [t.describe() for t, _ in renames] == [words], renames


def test_one_character_cores_renamed_by_a_prefix_are_one_rename_said_as_the_prefix() -> None:
    """Overlays of CRs named ``a``, ``b`` and ``c`` (dev-a to prod-a): a one-character core is also the run
    around which "dev-a" becomes "prod-a" by ``"" + "d" + "ev-a"`` to ``"pro" + "d" + "-a"``, and each added
    name gives such spellings, as long a core as the real one; the namePrefix spelt with its separator is the
    one tried first, so the preview says one rename, not three caches removed and three added."""
    olds, news = ["dev-a", "dev-b", "dev-c"], ["prod-a", "prod-b", "prod-c"]
    removed = {(v, k, "shop", o): {} for o in olds for v, k in (("v1", "Service"), ("apps/v1", "Deployment"))}
    added = {(v, k, "shop", n): {} for n in news for v, k in (("v1", "Service"), ("apps/v1", "Deployment"))}
    renames = find_renames(removed, added)
    assert [t.describe() for t, _ in renames] == ["renamed by namePrefix 'dev-' -> 'prod-'"], renames
    assert sorted(p for _, pairs in renames for p in pairs) == sorted(
        ((v, k, "shop", o), (v, k, "shop", n)) for o, n in zip(olds, news, strict=True)
        for v, k in (("v1", "Service"), ("apps/v1", "Deployment")))


@pytest.mark.parametrize(("cores", "old_fix", "new_fix"), [
    (["a", "b", "c"], ("dev-", "-a"), ("prod-", ".b")),
    (["b", "v", "d"], ("d-", "-d"), ("dev-", "-ab")),
    (["ab", "d", "b"], ("d-", "-a"), ("ab-", ".b")),
])
def test_one_character_cores_renamed_by_a_prefix_and_a_suffix_are_one_rename_said_as_both(
        cores: list[str], old_fix: tuple[str, str], new_fix: tuple[str, str]) -> None:
    """Both fixes changed around short cores: the change tried first is the one with both fixes spelt with
    their separators (a prefix ending in one, a suffix starting with one), not one where only the prefixes
    or only the suffixes are."""
    olds, news = [old_fix[0] + c + old_fix[1] for c in cores], [new_fix[0] + c + new_fix[1] for c in cores]
    renames = find_renames({("v1", "Service", "", o): {} for o in olds}, {("v1", "Service", "", n): {} for n in news})
    assert [t for t, _ in renames] == [Transform(old_fix[0], old_fix[1], new_fix[0], new_fix[1])], renames
    assert len(renames[0][1]) == len(cores)


def test_names_as_long_as_a_name_may_be_renamed_alike_are_one_rename() -> None:
    """Names of 240 characters (a DNS subdomain may have 253), where one character fills most of them:
    difflib's automatic junk heuristic, which drops a character that is in more than one percent of a
    sequence of 200 or more, must not hide their common core."""
    olds = [("", "dev-" + "a" * 230 + suffix) for suffix in ("-x1", "-y2")]
    news = [("", "prod-" + "a" * 230 + suffix) for suffix in ("-x1", "-y2")]
    renames = find_renames({("v1", "Service", *o): {} for o in olds}, {("v1", "Service", *n): {} for n in news})
    expected = sorted((("v1", "Service", *o), ("v1", "Service", *n)) for o, n in zip(olds, news, strict=True))
    assert [sorted(pairs) for _, pairs in renames] == [expected]
    assert [t for t, _ in renames] == [Transform("dev-", "", "prod-", "")], "said as the namePrefix it is"


CORE_NAMES = st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=6), min_size=2, max_size=4, unique=True)


@settings(max_examples=100, deadline=None)
@example(cores=["aa", "ba"], old_fix=("a.", ""), new_fix=("", ".y"), namespaces=("", ""))  # "a." as long a run as "aa"
@example(cores=["a", "b"], old_fix=("dev-", ""), new_fix=("prod-", ""), namespaces=("", ""))  # one-character cores
@given(cores=CORE_NAMES, old_fix=st.tuples(st.sampled_from(["", "dev-", "a."]), st.sampled_from(["", "-v1", ".x"])),
       new_fix=st.tuples(st.sampled_from(["", "prod-", "b."]), st.sampled_from(["", "-v2", ".y"])),
       namespaces=st.tuples(st.sampled_from(["", "team1"]), st.sampled_from(["", "team1", "team2"])))
def test_every_object_of_a_build_renamed_alike_is_one_rename(cores: list[str], old_fix: tuple[str, str],
                                                             new_fix: tuple[str, str], namespaces: tuple[str, str]) -> None:
    """kustomize's namePrefix, nameSuffix and namespace change every name of a build alike: whichever of
    them change (and however many objects), each removed object is paired with the one it became, in one
    rename."""
    if old_fix == new_fix and namespaces[0] == namespaces[1]:
        return
    olds = [(namespaces[0], old_fix[0] + c + old_fix[1]) for c in cores]
    news = [(namespaces[1], new_fix[0] + c + new_fix[1]) for c in cores]
    removed = {("v1", "Service", *o): {} for o in olds}
    added = {("v1", "Service", *n): {} for n in news}
    renames = find_renames(removed, added)
    pairs = sorted(pair for _, found in renames for pair in found)
    assert pairs == sorted((("v1", "Service", *o), ("v1", "Service", *n)) for o, n in zip(olds, news, strict=True)), renames
    assert len(renames) == 1, renames


def _object(kind: str, namespace: str, name: str, value: int, status: bool = False) -> dict:
    meta: dict = {"name": name, **({"namespace": namespace} if namespace else {})}
    obj = {"apiVersion": "apps/v1" if kind == "Deployment" else "v1", "kind": kind, "metadata": meta, "data": {"x": value}}
    if status:
        obj["status"] = {"seen": value}
        meta.update(uid=f"uid-{value}", resourceVersion=str(value), managedFields=[{"manager": str(value)}])
    return obj


IDENTITY = st.tuples(st.sampled_from(["ConfigMap", "Deployment"]), st.sampled_from(["", "shop", "cdn"]), st.sampled_from(["web", "api"]))
SIDE = st.dictionaries(IDENTITY, st.integers(0, 2), max_size=6)


@settings(max_examples=100, deadline=None)
@given(base=SIDE, head=SIDE, written=st.booleans())
def test_each_object_on_either_side_is_said_once_by_its_whole_identity(base: dict, head: dict, written: bool) -> None:
    """Objects are told apart by apiVersion, kind, namespace and name (the same name in a second
    namespace, or of a second kind, is another object): each object on the base side only is removed,
    on the pull request's side only added, on both with other content changed, with the same content
    not shown; and what the API server writes (status, uid, managed fields...) on one side changes nothing."""
    old = [_object(*k, v, status=written) for k, v in base.items()]
    new = [_object(*k, v) for k, v in head.items()]
    [app] = compare({"app": Side(old, [])}, {"app": Side(new, [])})
    said = _said(app)
    expected = sorted([("removed", k) for k in base.keys() - head.keys()] + [("added", k) for k in head.keys() - base.keys()]
                      + [("changed", k) for k in base.keys() & head.keys() if base[k] != head[k]])
    assert said == expected, app.changes
    assert all(c.old is not None and c.old[:2] == c.key[:2] for c in app.changes if c.action == "renamed"), app.changes
    [back] = compare({"app": Side(new, [])}, {"app": Side(old, [])})
    swap = {"added": "removed", "removed": "added", "changed": "changed"}
    assert sorted((swap[action], key) for action, key in _said(back)) == said, "the other way round, added is removed"


def _said(app: AppPreview) -> list[tuple[str, tuple[str, str, str]]]:
    """(action, (kind, namespace, name)) of each object changed, a rename as its removal and its addition."""
    said = [(c.action, c.key[1:]) for c in app.changes if c.action != "renamed"]
    said += [(a, k[1:]) for c in app.changes if c.action == "renamed" and c.old for a, k in (("removed", c.old), ("added", c.key))]
    return sorted(said)


DIFF_LINE = st.text(alphabet="ab `|<\u00e9", min_size=0, max_size=120)


@settings(max_examples=60, deadline=None)
@given(apps=st.lists(st.tuples(st.lists(st.tuples(st.sampled_from("+- "), DIFF_LINE | st.sampled_from(["```", "  ````", "`````` "])),
                                         min_size=1, max_size=60), st.sampled_from([0, 0, 0, 2, 150])),
                    min_size=1, max_size=12),
       limit=st.integers(2_000, 30_000))
def test_any_comment_fits_its_limit_and_says_what_it_left_out(apps: list[tuple[list[tuple[str, str]], int]], limit: int) -> None:
    """For any applications (diff lines long or short, holding backticks or markup, an application that
    cannot be read among them) and any limit: the comment fits the limit, each section is closed, no
    line of a diff closes its fence, and the lines shown plus the lines said to be left out are all of them."""
    previews = []
    for i, (lines, problems) in enumerate(apps):
        key = ("v1", "ConfigMap", "ns", f"c{i}")
        diff = ["--- base", "+++ pr", *[sign + line for sign, line in lines]]
        previews.append(AppPreview(f"apps/{i}", [ObjectChange("changed", key, None, diff, "")] if not problems else [], [],
                                   [("pr", f"apps/{i}/x.yaml:{n}:1: bad") for n in range(problems)]))
    text = markdown_report(previews, "main", "0" * 40, "memcached-gitops preview --base main", limit=limit)
    assert len(text) <= limit
    assert text.count("<details>") == text.count("</details>")
    shown = 0
    for fence, body in re.findall(r"\n(`{3,})diff\n(.*?)\n\1\n", text, flags=re.S):
        # CommonMark: a closing fence is up to 3 spaces, at least as many backticks as the opening, then spaces
        assert not any(re.fullmatch(rf" {{0,3}}{fence}`* *", line) for line in body.split("\n")), "a diff line would close the fence"
        shown += len(body.split("\n"))
    shown += len(re.findall(r"^- pull request: <code>", text, flags=re.M))
    total = sum(len(lines) + 2 if not problems else problems for lines, problems in apps)
    said = re.search(r"and ([\d,]+) line\(s\) left out", text)
    assert shown + (int(said[1].replace(",", "")) if said else 0) == total, (shown, said and said[0], total)


def test_each_sections_summary_counts_its_objects_of_every_kind() -> None:
    """An application's collapsed section says how many objects each action touches, every kind counted
    (as the table and the text summary count them): three Deployments changed are ``3 changed``."""
    def change(action: str, kind: str, name: str) -> ObjectChange:
        return ObjectChange(action, ("v1", kind, "ns", name), None, ["--- base", "+++ pr"], "")

    app = AppPreview("apps/a", [change("changed", "Deployment", f"d{i}") for i in range(3)]
                     + [change("added", "Service", f"s{i}") for i in range(2)] + [change("added", "ConfigMap", "c")], [], [])
    text = markdown_report([app], "main", "0" * 40, "memcached-gitops preview --base main")
    assert "<details><summary><code>apps/a</code>: 3 added, 3 changed</summary>" in text, text


def test_a_cr_taken_with_a_warning_is_previewed_not_held_back(tmp_path: Path) -> None:
    """A CR the API server takes with a warning (a status block, which it drops) is previewed as validate
    and render take it: its change is shown and the exit code is 1 (changes), not 2 (input that cannot be read)."""
    with_status = cr() + "status: {}\n"
    repo = two_commits(tmp_path / "repo", {"apps/cache.yaml": with_status}, {"apps/cache.yaml": with_status.replace("size: 1", "size: 3")})
    proc = preview(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cannot be read" not in proc.stdout and "spec.size: 1 -> 3" in proc.stdout, proc.stdout


def _server_written() -> tuple[dict, list[str]]:
    """A Deployment as kube-apiserver returned it from a server-side apply (transcript 01), and the metadata
    fields it holds that the applied body did not: what the server writes, by the server's own answer."""
    import json

    import yaml

    from tests.conftest import TRANSCRIPTS

    recorded = json.loads(next(TRANSCRIPTS.glob("01*.json")).read_text())
    [apply] = [e for e in recorded["exchanges"] if e["request"]["method"] == "PATCH"]
    stored, sent = apply["response"]["body"], yaml.safe_load(apply["request"]["body"])
    return stored, sorted(set(stored["metadata"]) - set(sent["metadata"]))


@pytest.mark.parametrize("field", _server_written()[1])
def test_each_metadata_field_the_api_server_writes_is_no_change(field: str) -> None:
    """A manifest exported from a cluster beside the same manifest from Git, or two exports of it taken at
    different times: each field the server wrote (its uid, its resourceVersion, its generation, its creation
    time, its managed fields) differing, or present on one side only, is no change a pull request asks for."""
    import copy

    stored, _ = _server_written()
    other = copy.deepcopy(stored)
    other["metadata"][field] = {"changed": field}
    bare = copy.deepcopy(stored)
    del bare["metadata"][field]
    for old, new in ((stored, other), (stored, bare), (bare, stored)):
        [same] = compare({"app": Side([old], [])}, {"app": Side([new], [])})
        assert same.changes == [], same.changes


@pytest.mark.parametrize(("markup", "marks"), [
    ("[link](https://evil.example)", "[]()"), ("![image](https://evil.example/x.png)", "![]()"), ("*strong*", "*"), ("_em_", "_"),
    ("`code`", "`"), ("~~struck~~", "~"), ("<https://evil.example>", "<>"), ("<b>bold</b>", "<>"), ("\\| a column", "\\|"),
    ("#123 an issue", "#"), ("a | b", "|"),
])
def test_no_markdown_of_the_input_survives_in_a_table_cell(markup: str, marks: str) -> None:
    """Each construct GitHub renders inside a pull request comment's table cell (a link, an image that loads
    a stranger's URL, emphasis, code, strikethrough, an autolink, HTML, an escaped pipe, an issue reference,
    a column break) reaches the cell with none of its marks as themselves, only as character references, so
    it is shown as typed."""
    import html

    from memcached_gitops.preview_report import _cell

    cell = _cell(markup)
    assert not set(re.sub(r"&#?[0-9a-z]+;", "", cell)) & set(marks), cell
    assert html.unescape(cell) == markup


@pytest.mark.parametrize("extra", [-1, 0])
def test_a_rename_takes_its_least_number_of_objects_and_one_fewer_is_an_addition_and_a_removal(extra: int) -> None:
    """A prefix change is told as one rename once MIN_RENAMED objects follow it; with one object fewer, a name
    that changed is one object removed and another added (a lone renamed object is no namePrefix to name)."""
    from memcached_gitops.rendered_diff import MIN_RENAMED

    cores = [f"web{i}" for i in range(MIN_RENAMED + extra)]
    removed = {("v1", "Service", "ns", "dev-" + c): {} for c in cores}
    renames = find_renames(removed, {("v1", "Service", "ns", "prod-" + c): {} for c in cores})
    if extra < 0:
        assert renames == []
    else:
        [(transform, pairs)] = renames
        assert transform.describe() == "renamed by namePrefix 'dev-' -> 'prod-'" and len(pairs) == MIN_RENAMED


@pytest.mark.parametrize("extra", [-1, 0])
def test_the_search_for_a_rename_gives_up_after_its_bound_of_unrelated_names_and_not_before(extra: int) -> None:
    """Removed objects whose names match nothing added each cost one try; after MAX_MISSES of them the search stops
    (a repository replacing a thousand CRs stays cheap), and one fewer still finds the rename behind them."""
    from memcached_gitops.rendered_diff import MAX_MISSES

    unrelated = [f"a{i:02d}" for i in range(MAX_MISSES + extra)]  # sorted before the renamed ones, tried first
    removed = {("v1", "Service", "ns", n): {} for n in [*unrelated, "dev-web", "dev-api"]}
    added = {("v1", "Service", "ns", n): {} for n in ["prod-web", "prod-api"]}
    renames = find_renames(removed, added)
    assert [t.describe() for t, _ in renames] == ([] if extra == 0 else ["renamed by namePrefix 'dev-' -> 'prod-'"])
