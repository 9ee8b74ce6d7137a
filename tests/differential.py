"""The validator's verdict beside a real kube-apiserver's, for one CR text.

The server's verdict is what kubectl answers for the file: ``kubectl create --dry-run=server
--validate=strict -f FILE`` (the object-level verdict: a POST with ``dryRun=All`` and
``fieldValidation=Strict`` of the JSON kubectl made from the YAML), and, when asked,
``kubectl apply --dry-run=server --validate=strict -f FILE`` (the command the README names), which
also refuses on the client a document that has only a ``generateName``. The field paths come from
the server's words: ``unknown field "spec.x"`` in a strict decoding error (400), the causes of a
422 (``* spec.size: Invalid value: ...``), or the Go field of a JSON decoding error.

Ours is ``pipeline.process`` over the same text, the code every front end runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from memcached_gitops.render import DEFAULT_IMAGE
from memcached_gitops.schemas import Validator
from memcached_gitops.schemas.crd import builtin_crd_text

from memcached_gitops.pipeline import process
from tests.cr_texts import NAMESPACES

KUBECTL_ENV = "MEMCACHED_GITOPS_E2E_KUBECTL"

#: Where the validator differs from kubectl on purpose: the words of our refusal, and why. A text
#: we refuse with these words is no disagreement, whatever kubectl answers.
DELIBERATE_DIFFERENCES = {
    "only the YAML core tags are allowed": "untrusted YAML is parsed safely, with no arbitrary tags: a tag outside "
    "the YAML core schema is refused, where kubectl reads a scalar with a tag it cannot resolve (!foo 2) as its "
    "text (README, Reading YAML as kubectl does)",
}


def deliberate_difference(ours: str) -> str | None:
    """The reason, if our refusal (its text) is one of the ``DELIBERATE_DIFFERENCES``."""
    return next((reason for words, reason in DELIBERATE_DIFFERENCES.items() if words in ours), None)


@dataclass(frozen=True)
class Verdict:
    """Accepted or not; the field paths named; for the server, whether it stopped at decoding
    (a 400 names only the fields it could not decode) and the text it answered."""

    accepted: bool
    fields: frozenset[str] = frozenset()
    unknown: frozenset[str] = frozenset()  # fields named as unknown (strict decoding)
    complete: bool = True  # False when the answer stopped before validating (decoding, client-side errors)
    text: str = ""


def shown(text: str | bytes) -> str:
    """A text as a report shows it: bytes that are no UTF-8 escaped, a byte order mark and other
    invisible characters kept (a report is read, never parsed)."""
    return text.decode("utf-8", "backslashreplace") if isinstance(text, bytes) else text


@dataclass
class Disagreement:
    kind: str  # "verdict" or "fields"
    text: str | bytes
    ours: Verdict
    server: Verdict
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (f"{self.kind}: ours accepted={self.ours.accepted} fields={sorted(self.ours.fields)}; "
                f"server accepted={self.server.accepted} fields={sorted(self.server.fields)}\n"
                f"server said: {self.server.text.strip()[:1500]}\nours: {self.ours.text.strip()[:1500]}\n"
                f"--- text ---\n{shown(self.text)[:3000]!s}\n--- as bytes ---\n{ascii(shown(self.text)[:600])}")


def kubectl() -> str:
    import os

    return os.environ.get(KUBECTL_ENV) or str(Path.home() / ".realk8s" / "bin" / "kubectl")


def prepare_cluster(kubeconfig: str) -> None:
    """Install the shipped CRD and the namespaces the generated CRs may name."""
    run = [kubectl(), "--kubeconfig", kubeconfig]
    subprocess.run(run + ["apply", "--server-side", "--force-conflicts", "-f", "-"], input=builtin_crd_text(),
                   text=True, check=True, capture_output=True)
    subprocess.run(run + ["wait", "--for=condition=Established", "crd/memcacheds.cache.example.com"], check=True,
                   capture_output=True)
    existing = subprocess.run(run + ["get", "namespaces", "-o", "name"], text=True, capture_output=True, check=True).stdout
    for ns in NAMESPACES:
        if f"namespace/{ns}" not in existing.split():
            subprocess.run(run + ["create", "namespace", ns], check=True, capture_output=True)


_UNKNOWN = re.compile(r'unknown field \\?"([^"\\]*)\\?"')
_GO_FIELD = re.compile(r"Go struct field [A-Za-z0-9]+\.([A-Za-z0-9_.]+) of type")
#: A cause of a 422, in any of kubectl's layouts: "* field: ...", "is invalid: field: ...", "[field: ..., field: ...]";
#: a field may index a list or a map on the way (``spec.tolerations[0]``, ``spec.resources.limits[memory]``).
_CAUSE = re.compile(r"(?:^\* |is invalid: \[?|, )((?:[^\s:,\[\]]|\[[^\s\]]*\])+): (?:Invalid value|Required value|Unsupported value|"
                    r"Too long|Too many|Forbidden|Duplicate value|Not found|Internal error)", re.M)


#: An integer format's cause names no field (``<nil>``) but ends with the field's path
#: (kubernetes/kubernetes#136582): the validator reports it at that field, where a person looks.
_FORMAT_CAUSE = re.compile(r"(?:^\* |is invalid: )<nil>: Invalid value: \"\": "
                           r"Checked value must be of type integer with format \w+ in (\S+)$", re.M)


def parse_kubectl(returncode: int, stdout: str, stderr: str) -> Verdict:
    """kubectl's answer for a whole file: accepted only if every document was. The client's OpenAPI
    v2 validation (``error validating data: ValidationError(MemcachedList.metadata): unknown field
    "name"``) names a field within a schema type, not the object's path: no unknown fields are read
    from it, and it is no complete answer."""
    client_validation = "error validating data" in stderr
    unknown = frozenset() if client_validation else frozenset(_UNKNOWN.findall(stderr))
    fields = set(unknown) | set(_GO_FIELD.findall(stderr)) | set(_CAUSE.findall(stderr)) | set(_FORMAT_CAUSE.findall(stderr))
    fields.discard("<nil>")
    complete = "is invalid:" in stderr and not unknown and "cannot be handled" not in stderr
    return Verdict(returncode == 0, frozenset(fields), unknown, complete, stdout + stderr)  # warnings go to stderr too


def server_verdict(text: str | bytes, kubeconfig: str, verb: str = "create", timeout: float = 60) -> Verdict:
    """kubectl's verdict on the file holding ``text`` (bytes written as they are: encodings, byte
    order marks and bytes that are no UTF-8 reach kubectl's reader unchanged)."""
    with tempfile.NamedTemporaryFile("wb", suffix=".yaml") as f:
        f.write(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        f.flush()
        args = [kubectl(), "--kubeconfig", kubeconfig, verb, "--dry-run=server", "--validate=strict", "-f", f.name]
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return parse_kubectl(done.returncode, done.stdout, done.stderr.replace(f.name, "FILE"))


def pruned_nulls(text: str) -> str | None:
    """The documents as ``kubectl apply`` (client-side) creates them: every map entry whose value is
    null removed, at any depth, inside lists too (a null list item stays). kubectl does so "to match
    what will happen when client-side applying an update": kubernetes v1.36.2
    staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go lines 691-695 (``pruneNullsFromMap`` before
    ``helper.Create``) and 782-803, as vendored by openshift/microshift at
    8e16b12fda5b1dccc41a6de48b3e356cc7d5048b. ``kubectl create`` and server-side apply send the nulls,
    and a null unknown field is refused there. None when the text is no YAML that PyYAML reads."""
    import yaml

    def prune(value: object) -> object:
        if isinstance(value, dict):
            return {k: prune(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [prune(v) for v in value]
        return value

    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return None
    return "".join(f"---\n{json.dumps(prune(d), default=str)}\n" for d in documents)


def our_verdict(text: str | bytes, validator: Validator) -> Verdict:
    """Our verdict in kubectl's mode (``--require-objects``): every document must be an object. A
    repository scan passes over documents that are not (pipeline.is_kubernetes_object), where
    ``kubectl create -f`` refuses them; that is the product's choice for repositories, not the
    validator's judgement, so the differential compares the mode that keeps kubectl's verdict."""
    result = process([("FILE", text)], validator, DEFAULT_IMAGE, do_render=False, require_objects=True)
    errors = result.errors
    if result.objects_sent == 0 and not result.findings:
        return Verdict(False, text="no objects")  # kubectl: "no objects passed to create" (KC create.go:311-313)
    fields = frozenset(f.field for f in errors if f.field and f.field != "<root>")  # the server's <nil>, discarded there too
    unknown = frozenset(f.field for f in errors if f.message.startswith("unknown field"))
    return Verdict(not errors, fields, unknown, True, "\n".join(f.text() for f in result.findings))


def compare(text: str | bytes, ours: Verdict, server: Verdict, documents: int = 1) -> Disagreement | None:
    """None when we agree: the same verdict, and where the server's answer is complete (one
    document, a 422 listing every cause) the same fields; after a strict decoding error, the same
    unknown fields. A deliberate difference is no disagreement."""
    if not ours.accepted and deliberate_difference(ours.text):
        return None
    if ours.accepted != server.accepted:
        return Disagreement("verdict", text, ours, server)
    if ours.accepted or documents != 1:
        return None
    if server.unknown and server.unknown != ours.unknown:
        return Disagreement("fields", text, ours, server, ["unknown fields differ"])
    if server.complete and server.fields and server.fields != ours.fields:
        return Disagreement("fields", text, ours, server)
    return None


def count_documents(text: str | bytes) -> int:
    """The objects kubectl sends for ``text``, as far as the fields of one answer can be compared:
    a list counts as two (its answer may be the client's, or several items')."""
    from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents

    from memcached_gitops.lists import is_list

    count = 0
    try:
        for document in iter_documents(text):
            count += 2 if is_list(document.value) else 1
    except YAMLInputError:
        return count + 2  # unknown: at least the one that failed, and perhaps others kubectl read
    return count
