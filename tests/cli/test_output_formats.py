"""``validate``'s three outputs tell one story: the text a person reads (stderr), the JSON a program
reads and the GitHub annotations a pull request shows carry the same findings (file, line, column,
object, field, severity, message), the same counts and the same exit code, for every kind of input:
errors and warnings of a file, a folder of valid CRs, and each repository layout's kustomize build.
A finding dropped, or told differently, by one format is a bug its users alone would see."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.support.layouts import LAYOUTS, lay_out

SUMMARY = re.compile(r"^(\d+) Memcached valid, (\d+) error\(s\), (\d+) warning\(s\)")


def validate(args: list[str], cwd: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", "-o", fmt, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def counts(stderr: str) -> tuple[int, int, int]:
    found = [m for line in stderr.splitlines() if (m := SUMMARY.match(line))]
    assert len(found) == 1, stderr
    return int(found[0][1]), int(found[0][2]), int(found[0][3])


def as_text(f: dict[str, Any]) -> str:
    """The line a person reads: ``file:line:col: object: field: message``, the place left out where a
    finding has none (a kustomization that could not be built), ``warning: `` before a warning's message."""
    where = f"{f['file']}:{f['line']}:{f['column']}" if f["line"] else f["file"]
    message = ("warning: " if f["severity"] == "warning" else "") + f["message"]
    return ": ".join([where] + [v for v in (f["object"], f["field"]) if v] + [message])


def as_annotation(f: dict[str, Any], cwd: Path) -> str:
    """The annotation GitHub shows on the pull request's file: its path normalised as GitHub matches
    paths (``./apps/x.yaml`` is ``apps/x.yaml``); a finding in a kustomize build goes on line 1 of the
    kustomization file, its line in the build said in the message."""
    message = f"{f['field']}: {f['message']}" if f["field"] else f["message"]
    if f["file"].endswith(" (kustomize build)"):
        folder = f["file"].removesuffix(" (kustomize build)")
        name = next(n for n in ("kustomization.yaml", "kustomization.yml", "Kustomization") if (cwd / folder / n).is_file())
        file, where = os.path.normpath(os.path.join(folder, name)), "line=1"
        message += f" (line {f['line']} of its kustomize build)" if f["line"] else ""
    else:
        file, where = os.path.normpath(f["file"]), f"line={f['line']},col={f['column']}"
    return f"::{f['severity']} file={_property(file)},{where},title={_property(f['object'] or 'memcached-gitops')}::{_data(message)}"


def _data(value: str) -> str:
    """A workflow command's message as the Actions toolkit escapes it (@actions/core command.ts ``escapeData``)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    """A workflow command's property (file, title): its data escaping, then its own separators ``:`` and
    ``,`` (command.ts ``escapeProperty``), so that a runner decoding it gets the path back."""
    return _data(value).replace(":", "%3A").replace(",", "%2C")


#: bad-crs.yaml under a name whose characters a workflow command's file property must escape
NAMED = "apps/cache,eu:west%25.yaml"
INPUTS = {
    "errors of a file": (["tests/data/bad-crs.yaml"], None),
    "warnings too (--no-strict)": (["--no-strict", "tests/data/bad-crs.yaml"], None),
    "valid CRs and a kustomization": (["examples"], None),
    "a file named with a comma, a colon and a percent sign": ([NAMED], "named"),
    **{f"layout: {name}": (["."], name) for name in LAYOUTS},
}


@pytest.mark.parametrize("case", INPUTS)
def test_the_three_formats_tell_the_same_findings_counts_and_exit(tmp_path: Path, case: str) -> None:
    args, layout = INPUTS[case]
    cwd = lay_out(tmp_path, layout) if layout in LAYOUTS else REPO
    if layout == "named":
        (tmp_path / NAMED).parent.mkdir()
        (tmp_path / NAMED).write_text((REPO / "tests/data/bad-crs.yaml").read_text())
        cwd = tmp_path
    text, as_json, github = (validate(args, cwd, fmt) for fmt in ("text", "json", "github"))
    assert text.returncode == as_json.returncode == github.returncode, (text.returncode, as_json.returncode, github.returncode)
    assert "Traceback" not in text.stderr + as_json.stderr + github.stderr
    report = json.loads(as_json.stdout)
    findings = report["findings"]
    assert [line for line in text.stderr.splitlines() if not SUMMARY.match(line)] == [as_text(f) for f in findings], text.stderr
    assert github.stdout.splitlines() == [as_annotation(f, cwd) for f in findings], github.stdout
    valid, errors, warnings = counts(text.stderr)
    assert (valid, errors, warnings) == counts(as_json.stderr) == counts(github.stderr)
    assert valid == report["validCount"]
    assert (errors, warnings) == (sum(f["severity"] == "error" for f in findings), sum(f["severity"] == "warning" for f in findings))
    assert report["valid"] is (errors == 0) and (text.returncode == 0) is (errors == 0), (report["valid"], errors, text.returncode)
    if case.startswith("layout"):
        assert any("sizee" in f["field"] for f in findings), findings


def render(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "memcached_gitops", "render", *args], cwd=cwd, capture_output=True, timeout=120)


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


RENDER_INPUTS = {
    "the examples": (["examples"], None),
    "the examples, input included": (["--include-input", "examples"], None),
    **{f"layout: {name}": (["."], name) for name in LAYOUTS},
}


@pytest.mark.parametrize("case", RENDER_INPUTS)
def test_renders_outputs_carry_the_same_objects(tmp_path: Path, case: str) -> None:
    """``render``'s YAML stream, its JSON List and its --output-dir files (YAML or JSON) hold the same
    objects: the stream and the List in the same order, one file per object, the count it says it wrote;
    and the same words on stderr besides that count."""
    import yaml

    args, layout = RENDER_INPUTS[case]
    cwd = lay_out(tmp_path / "repo", layout, faulty=False) if layout else REPO
    stream, listed = render(args, cwd), render(["-o", "json", *args], cwd)
    assert stream.returncode == listed.returncode == 0, stream.stderr + listed.stderr
    objects = list(yaml.safe_load_all(stream.stdout))
    assert objects and json.loads(listed.stdout)["items"] == objects
    for fmt, load in (("yaml", yaml.safe_load), ("json", json.loads)):
        folder = tmp_path / f"out-{fmt}"
        written = render(["-o", fmt, "--output-dir", str(folder), *args], cwd)
        assert written.returncode == 0, written.stderr
        files = sorted(folder.iterdir())
        assert all(f.suffix == f".{fmt}" for f in files), files
        assert sorted((load(f.read_text()) for f in files), key=key) == sorted(objects, key=key)
        said = written.stderr.decode().splitlines()
        assert f"wrote {len(files)} file(s) to {folder}" in said, said
        assert [line for line in said if not line.startswith("wrote ")] == stream.stderr.decode().splitlines()


def runner_reads(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command as GitHub's runner reads it (actions/runner src/Runner.Common/ActionCommand.cs
    ``TryParseV2``): after the leading ``::``, the properties end at the next ``::``; they are split at each
    ``,`` and each at its first ``=`` (a later key wins), then unescaped (``UnescapeProperty``: %0D %0A %3A
    %2C, %25 last); the rest is the message (``UnescapeData``: %0D %0A, %25 last)."""
    assert line.startswith("::"), line
    end = line.index("::", 2)
    command, _, properties = line[2:end].partition(" ")
    read: dict[str, str] = {}
    for prop in filter(None, properties.strip().split(",")):
        name, sep, value = prop.partition("=")
        if sep and name and value:
            for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
                value = value.replace(code, char)
            read[name] = value
    message = line[end + 2:]
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        message = message.replace(code, char)
    return command, read, message


def assert_the_runner_reads_each_finding_where_it_is(args: list[str], cwd: Path) -> list[dict[str, Any]]:
    """Each annotation of ``-o github``, read as the runner reads it, is the finding JSON holds: on the
    committed file (its path as the pull request's files are named), line, column, object and message."""
    as_json, github = validate(args, cwd, "json"), validate(args, cwd, "github")
    assert as_json.returncode == github.returncode == 1, github.stderr
    findings: list[dict[str, Any]] = json.loads(as_json.stdout)["findings"]
    lines = github.stdout.splitlines()
    assert findings and len(lines) == len(findings), github.stdout
    for line, f in zip(lines, findings, strict=True):
        command, read, message = runner_reads(line)
        assert (command, read) == (f["severity"], {"file": os.path.normpath(f["file"]), "line": str(f["line"]),
                                                   "col": str(f["column"]), "title": f["object"]}), line
        assert (cwd / read["file"]).is_file(), read["file"]
        assert message == (f"{f['field']}: {f['message']}" if f["field"] else f["message"]), line
    return findings


def test_an_annotation_on_a_file_with_a_long_path_names_the_whole_path_github_matches(tmp_path: Path) -> None:
    """Lines of text show a path longer than PATH_LIMIT by its end (``…`` and the last characters), but an
    annotation's ``file`` is what GitHub matches against the pull request's files: cut, it names no file
    and the error shows on no line of the pull request. Deep monorepos and generated folders have such paths."""
    from memcached_gitops.foundation.excerpt import PATH_LIMIT

    deep = tmp_path / ("a" * (PATH_LIMIT // 2)) / ("b" * (PATH_LIMIT // 2))
    deep.mkdir(parents=True)
    (deep / "bad-crs.yaml").write_text((REPO / "tests/data/bad-crs.yaml").read_text())
    findings = assert_the_runner_reads_each_finding_where_it_is(["."], tmp_path)
    assert all(len(os.path.normpath(f["file"])) > PATH_LIMIT for f in findings), findings


def test_a_cr_named_with_workflow_command_separators_cannot_move_its_annotation(tmp_path: Path) -> None:
    """A pull request may add a CR whose (invalid) name holds ``,``, ``::``, ``%`` and line breaks, chosen to
    end the annotation's title early: ``x,file=README.md,line=1::all good`` would put the error on README.md
    line 1, saying "all good". The title is a property, escaped as one (``%``, CR, LF, ``:`` and ``,``), so
    the runner reads the finding's own file, line and object back."""
    (tmp_path / "apps").mkdir()
    name = r"x%2C,file=README.md,line=1::all good\r\n::error file=README.md::forged"
    (tmp_path / "README.md").write_text("# readme\n")
    (tmp_path / "apps" / "cache.yaml").write_text(
        f'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: "{name}"}}\nspec: {{size: 1}}\n')
    findings = assert_the_runner_reads_each_finding_where_it_is(["apps"], tmp_path)
    assert {(f["file"], f["object"][:30]) for f in findings} == {("apps/cache.yaml", "Memcached/x%2C,file=README.md,")}, findings


@pytest.mark.parametrize(("options", "severity"), [(["--strict-build"], "error"), ([], "warning")])
def test_a_kustomization_that_cannot_be_built_is_said_on_its_kustomization_file_in_every_format(
        tmp_path: Path, options: list[str], severity: str) -> None:
    """A typo in an overlay's ``resources:`` fails Argo CD's and Flux's sync: validate says so (an error with
    --strict-build, which the Action sets, else a warning) naming the build, ``apps/prod (kustomize build)``,
    in the text a person reads and in the JSON; the GitHub annotation goes on line 1 of the kustomization
    file, a file of the pull request, never on the folder (GitHub shows an annotation on no file there)."""
    (tmp_path / "apps" / "prod").mkdir(parents=True)
    (tmp_path / "apps" / "good.yaml").write_text(
        "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: good}\nspec: {size: 2}\n")
    (tmp_path / "apps" / "prod" / "kustomization.yaml").write_text("resources: [../good.yaml, ../godo.yaml]\n")
    build = os.path.join(".", "apps", "prod") + " (kustomize build)"
    text, as_json, github = (validate([*options, "."], tmp_path, fmt) for fmt in ("text", "json", "github"))
    assert [line.partition(": ")[0] for line in text.stderr.splitlines() if not SUMMARY.match(line)] == [build], text.stderr
    assert ": not built, so not checked: " in text.stderr and "godo.yaml" in text.stderr, text.stderr
    assert [(f["file"], f["severity"]) for f in json.loads(as_json.stdout)["findings"]] == [(build, severity)], as_json.stdout
    [annotation] = github.stdout.splitlines()
    command, read, message = runner_reads(annotation)
    assert (command, read["file"], read["line"]) == (severity, "apps/prod/kustomization.yaml", "1"), annotation
    assert (tmp_path / read["file"]).is_file() and message.startswith("not built, so not checked: "), annotation
