"""The validator against a real kube-apiserver, on random CR texts (opt-in).

Runs when MEMCACHED_GITOPS_E2E_KUBECONFIG names a kubeconfig of a disposable cluster; it installs the
shipped CRD and a few namespaces (tests/differential.py), then, for each text from
tests/cr_texts.py, compares

- the verdict and the fields of ``kubectl create --dry-run=server --validate=strict -f FILE`` with
  the validator's (``pipeline.process``, what every front end runs);
- the exit code of ``memcached-gitops validate FILE`` with kubectl's, and its error lines
  (``FILE:LINE:COL: ...``, one line each, no traceback);
- ``kubectl apply --dry-run=server --validate=strict`` (the README's command) with ``create``: they
  differ only where kubectl apply refuses a ``generateName`` on the client, and where it drops the
  null values before it creates (``differential.pruned_nulls``: a null unknown field is refused by
  ``create`` and by server-side apply, and passes client-side apply).

Reproducible and bounded: ``pytest --hypothesis-seed=N``; MEMCACHED_GITOPS_E2E_EXAMPLES examples
(default 30); kubectl from MEMCACHED_GITOPS_E2E_KUBECTL or ~/.realk8s/bin/kubectl. Thousands of
cases: bench/validator_differential.py. Skipped with the reason otherwise: no kube-apiserver can
be installed from the package registries this project's CI reaches.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from memcached_gitops.schemas import Validator, load_crd

from tests.cr_texts import cr_texts
from tests.differential import compare, count_documents, deliberate_difference, our_verdict, prepare_cluster, pruned_nulls, server_verdict
from tests.stream_cases import CASES as STREAM_CASES
from tests.stream_cases import StreamCase
from tests.stream_texts import stream_texts
from tests.validator_cases import CASES, Case

KUBECONFIG = os.environ.get("MEMCACHED_GITOPS_E2E_KUBECONFIG")
EXAMPLES = int(os.environ.get("MEMCACHED_GITOPS_E2E_EXAMPLES") or 30)
pytestmark = pytest.mark.skipif(
    not KUBECONFIG,
    reason="no real cluster: set MEMCACHED_GITOPS_E2E_KUBECONFIG to a disposable cluster's kubeconfig to run these",
)
CLI = [sys.executable, "-m", "memcached_gitops"]
ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): ")
SLOW = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def validator() -> Validator:
    assert KUBECONFIG
    prepare_cluster(KUBECONFIG)
    return Validator(load_crd())


def assert_agrees(validator: Validator, text: str | bytes, accept: bool | None = None) -> None:
    """The real server's verdict on ``text`` (``accept`` when it is known) and ours agree, fields too."""
    assert KUBECONFIG
    server = server_verdict(text, KUBECONFIG)
    if accept is not None:
        assert server.accepted == accept, server.text
    found = compare(text, our_verdict(text, validator), server, count_documents(text))
    assert found is None, found.describe()


@SLOW
@given(text=cr_texts())
def test_the_validator_agrees_with_the_api_server(validator: Validator, text: str) -> None:
    assert_agrees(validator, text)


@SLOW
@given(text=stream_texts())
def test_the_validator_agrees_with_the_api_server_on_streams(validator: Validator, text: bytes) -> None:
    """The streams around the CRs (tests/stream_texts.py): lists, tags, encodings, JSON runs."""
    assert_agrees(validator, text)


@SLOW
@given(text=cr_texts())
def test_the_cli_exit_code_agrees_and_errors_are_located(validator: Validator, text: str, tmp_path_factory) -> None:
    assert KUBECONFIG
    path = tmp_path_factory.mktemp("cr") / "cr.yaml"
    path.write_text(text, encoding="utf-8")
    server = server_verdict(text, KUBECONFIG)
    # kubectl's mode: every document must be an object (a repository scan passes over the others, by design)
    done = subprocess.run([*CLI, "validate", "--require-objects", str(path)], capture_output=True, text=True, timeout=60)
    refused = not server.accepted or deliberate_difference(done.stderr) is not None
    assert done.returncode == (1 if refused else 0), f"{done.stderr}\nserver: {server.text}\n---\n{text}"
    assert "Traceback" not in done.stderr
    if refused:
        errors = [line for line in done.stderr.splitlines()[:-1] if "warning:" not in line]
        assert errors, done.stderr
        for line in errors:
            match = ERROR_LINE.match(line.removeprefix("error: "))
            assert match and Path(match["file"]) == path and int(match["line"]) >= 1, line


@SLOW
@given(text=cr_texts())
@example(text="{apiVersion: cache.example.com/v1alpha1, kind: Memcached, metadata: {name: m, namespace: default}, "
              "spec: {containerPort: &v ~, replicas: 1, replicas: *v}, status: ~}\n")
@example(text="{apiVersion: cache.example.com/v1alpha1, kind: Memcached, metadata: {name: m, namespace: default}, "
              "spec: {size: 1, image: ~}}\n")
def test_kubectl_apply_differs_from_create_only_on_generate_name_and_null_values(text: str) -> None:
    assert KUBECONFIG
    created, applied = server_verdict(text, KUBECONFIG), server_verdict(text, KUBECONFIG, "apply")
    if created.accepted == applied.accepted:
        return
    if "cannot use generate name with apply" in applied.text:
        assert created.accepted, applied.text
        return
    pruned = pruned_nulls(text)  # kubectl apply creates the object without its null values
    assert pruned is not None, f"{applied.text}\n---\n{text}"
    assert server_verdict(pruned, KUBECONFIG).accepted == applied.accepted, f"{created.text}\n{applied.text}\n---\n{text}"


@pytest.mark.parametrize("case", [c for c in CASES if c.crd == "builtin"], ids=lambda c: c.id)
def test_each_case_of_the_table_is_the_real_servers_verdict(validator: Validator, case: Case) -> None:
    """The hand-made table (tests/validator_cases.py) under the shipped CRD, judged again by the real
    API server: its verdict and fields are what the table and the validator say."""
    assert_agrees(validator, case.text, case.accept)


@pytest.mark.parametrize("case", STREAM_CASES, ids=[c.id for c in STREAM_CASES])
def test_the_recorded_stream_verdicts_still_hold(validator: Validator, case: StreamCase) -> None:
    """Each reader decision's case (tests/stream_cases.py), asked of kubectl and the server again:
    the recorded verdict still holds, and the validator's agrees (tests/cli/test_pipeline.py holds it offline)."""
    assert KUBECONFIG
    server = server_verdict(case.data, KUBECONFIG)
    assert server.accepted == case.accept, f"{case.why}\n{server.text}"
    assert our_verdict(case.data, validator).accepted == case.accept
