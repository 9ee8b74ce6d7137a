"""A cache sized by its CR: resources in the API server's stored form, memcached's -m, -t and -c derived
as render/sizing.py says, and checked by a real memcached (Debian's package) through ``stats settings``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from memcached_gitops.render import render
from memcached_gitops.render.sizing import (
    MIB,
    cache_megabytes,
    memcached_flags,
    min_connections,
    thread_count,
    threads_allowed,
)
from memcached_gitops.schemas import Validator, load_crd
from memcached_gitops.schemas.quantities import _BINARY, _DECIMAL, canonical_quantity, quantity

from tests.conftest import TRANSCRIPTS
from tests.support.crs import memcached_cr


def cr(**spec) -> dict:
    return memcached_cr("c", "shop", {"size": 2, "containerPort": 11211, **spec})


def container(**spec) -> dict:
    return render(cr(**spec))[0]["spec"]["template"]["spec"]["containers"][0]


def test_every_quantity_of_transcript_43_is_stored_as_the_server_stored_it() -> None:
    data = json.loads((TRANSCRIPTS / "43-resource-quantities.json").read_text())
    [exchange] = data["exchanges"]
    sent = exchange["request"]["body"]["spec"]["containers"]
    stored = exchange["response"]["body"]["spec"]["containers"]
    assert len(sent) == len(stored) >= 150
    differ = [(a["resources"]["limits"]["memory"], b["resources"]["limits"]["memory"]) for a, b in zip(sent, stored, strict=True)
              if canonical_quantity(a["resources"]["limits"]["memory"]) != b["resources"]["limits"]["memory"]]
    assert differ == []


@pytest.mark.parametrize("text,stored", [("0.1", "100m"), ("67108864", "67108864"), ("65536Ki", "64Mi"), ("1000m", "1"),
                                         ("1.5Gi", "1536Mi")])
def test_transcript_25s_quantities(text: str, stored: str) -> None:
    assert canonical_quantity(text) == stored


@pytest.mark.parametrize("text,stored", [("1.0Ki", "1Ki"), ("-1.0Ki", "-1Ki"), ("0.9990234375Ki", "1023"), ("0.5Ki", "512"),
                                         ("1.5Ki", "1536"), ("2.0Mi", "2Mi"), ("1024.0", "1024")])
def test_a_binary_quantity_rewritten_keeps_its_binary_form_from_1ki_on(text: str, stored: str) -> None:
    """apimachinery quantity.go CanonicalizeBytes: a BinarySI quantity strictly between -1024 and
    1024 is written in DecimalSI; from 1024 (1Ki) on, binary by the largest power that divides it.
    A decimal one stays decimal at 1024."""
    assert canonical_quantity(text) == stored


def test_quantities_are_numbers() -> None:
    assert quantity("128Mi") == 128 * MIB and quantity("500m") == Decimal("0.5") and quantity("1e3") == 1000
    assert quantity("1E3") == 1000 and quantity("2e-3") == Decimal("0.002") and quantity("1E") == 10**18
    assert quantity("1Ei") == 2**60 and quantity(" 2Ki ") == 2048 and quantity("+1") == 1 and quantity("-1") == -1
    assert quantity(1073741824) == 1073741824 and quantity("1 Gi") is None and quantity("") is None
    assert [quantity(v) for v in (True, 1.5, None, [1], {"a": 1})] == [None] * 5


@pytest.mark.parametrize("suffix", [*_BINARY, *_DECIMAL])
def test_each_suffix_means_what_the_kubernetes_client_reads_it_as(suffix: str) -> None:
    """Every suffix of the tables (``Pi``, ``P``, ``n``...) scales as the Kubernetes client's own
    parse_quantity scales it, and the stored form written for it reads back as the same value (rounded
    up to milli units, as the API server stores a resource) wherever an int64 holds it."""
    parse_quantity = pytest.importorskip("kubernetes.utils.quantity").parse_quantity
    for text in (f"3{suffix}", f"1.5{suffix}", f"3000{suffix}", f"1536{suffix}"):
        value = parse_quantity(text)
        assert quantity(text) == value, text
        if value < 2**63:  # past int64, Go's stored forms are its own (see canonical_quantity)
            stored = canonical_quantity(text)
            assert parse_quantity(stored) == value.quantize(Decimal("0.001"), rounding="ROUND_CEILING"), (text, stored)


def test_what_is_not_a_quantity_is_left_as_it_is() -> None:
    for value in ("abc", "1 Gi", 1.5, True, None):
        assert canonical_quantity(value) is value or canonical_quantity(value) == value


@pytest.mark.parametrize("limit,cache", [(None, 64), (64 * MIB, 32), (128 * MIB, 96), (512 * MIB, 409), (1024 * MIB, 819),
                                         (40 * MIB, 16)])
def test_the_cache_leaves_a_fifth_of_the_limit_and_at_least_32_mib(limit, cache: int) -> None:
    assert cache_megabytes(None if limit is None else Decimal(limit)) == cache


@pytest.mark.parametrize("cpu,threads", [(None, None), ("500m", 1), ("2", 2), ("2.5", 3), ("100", 16), ("0", None)])
def test_threads_follow_the_cpu(cpu, threads) -> None:
    assert thread_count(quantity(cpu) if cpu is not None else None) == threads


def test_without_resources_the_seeds_command_and_resources_stay() -> None:
    plain = container()
    assert plain["command"] == ["memcached", "--memory-limit=64", "-o", "modern", "-v"]
    assert plain["resources"] == {"requests": {"cpu": "100m", "memory": "96Mi"}, "limits": {"memory": "128Mi"}}


def test_resources_are_the_crs_in_stored_form_and_size_memcached() -> None:
    sized = container(resources={"limits": {"memory": "1024Mi", "cpu": "2"}, "requests": {"memory": "0.5Gi", "cpu": "0.5"}},
                      maxConnections=4096)
    assert sized["resources"] == {"limits": {"memory": "1Gi", "cpu": "2"}, "requests": {"memory": "512Mi", "cpu": "500m"}}
    assert sized["command"] == ["memcached", "--memory-limit=819", "--conn-limit=4096", "--threads=2", "-o", "modern", "-v"]
    only_requests = container(resources={"requests": {"memory": "256Mi"}}, threads=8)
    assert only_requests["command"] == ["memcached", "--memory-limit=204", "--threads=8", "-o", "modern", "-v"]
    assert only_requests["resources"] == {"requests": {"memory": "256Mi"}}


MEMCACHED = shutil.which("memcached")
SETPRIV = shutil.which("setpriv")


def _memcached_settings(command: list[str], uid: int | None = None, every_address: bool = False) -> dict[str, str]:
    """``stats settings`` of a real memcached running the rendered command on a free loopback port:
    as root switching to nobody, or (``uid``) started as that user, as the Pod's securityContext starts it;
    listening on loopback only, or (``every_address``) on every address as in the Pod (a socket for each)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [MEMCACHED, *command[1:], "-p", str(port), "-U", "0", *([] if every_address else ["-l", "127.0.0.1"])]
    argv = argv + ["-u", "nobody"] if uid is None else [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    conn = socket.create_connection(("127.0.0.1", port), timeout=2)
                    break
                except OSError:
                    if proc.poll() is not None:
                        stderr.seek(0)
                        pytest.fail(f"memcached exited {proc.returncode}: {stderr.read().decode().strip()}")
                    assert time.monotonic() < deadline, "memcached did not start"
                    time.sleep(0.05)
            conn.sendall(b"stats settings\r\n")
            data = b""
            while not data.endswith(b"END\r\n"):
                data += conn.recv(65536)
            conn.close()
            return {p[1]: p[2] for p in (line.split() for line in data.decode().splitlines()) if len(p) == 3}
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.mark.skipif(MEMCACHED is None, reason="memcached not installed (apt-get install memcached; .ci/run does where it can)")
@pytest.mark.parametrize("spec,maxbytes,maxconns,threads", [
    ({}, 64, 1024, 4),
    ({"resources": {"limits": {"memory": "128Mi"}}}, 96, 1024, 4),
    ({"resources": {"limits": {"memory": "1Gi", "cpu": "3"}}, "maxConnections": 200}, 819, 200, 3),
    ({"resources": {"requests": {"memory": "512Mi", "cpu": "250m"}}, "threads": 2}, 409, 1024, 2),
])
def test_a_real_memcached_runs_the_rendered_command_with_the_promised_limits(spec: dict, maxbytes: int, maxconns: int,
                                                                          threads: int) -> None:
    settings = _memcached_settings(container(**spec)["command"])
    assert int(settings["maxbytes"]) == maxbytes * MIB
    assert int(settings["maxconns"]) == maxconns
    assert int(settings["num_threads"]) == threads


def _spec_bounds(field: str) -> list[int]:
    declared = load_crd().document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    return [declared[field]["minimum"], declared[field]["maximum"]]


@pytest.mark.skipif(MEMCACHED is None, reason="memcached not installed (apt-get install memcached; .ci/run does where it can)")
@pytest.mark.parametrize("threads", _spec_bounds("threads"))
def test_memcached_runs_with_as_many_threads_as_each_bound_of_the_crd_allows(threads: int) -> None:
    """spec.threads at the CRD's minimum and at its maximum (a person's choice, not one derived from
    the cpu) is the number of worker threads the real memcached runs with."""
    cr = memcached_cr("c", "shop", {"size": 1, "threads": threads})
    assert Validator(load_crd()).validate(cr).ok
    [deployment, *_] = render(cr)
    [memcached] = deployment["spec"]["template"]["spec"]["containers"]
    assert int(_memcached_settings(memcached["command"])["num_threads"]) == threads


@pytest.mark.skipif(MEMCACHED is None, reason="memcached not installed (apt-get install memcached; .ci/run does where it can)")
def test_a_real_memcached_listens_on_the_port_the_pod_names() -> None:
    """The Deployment's probes, its Service (targetPort ``memcached``) and the exporter all reach memcached at
    the container port the CR sets (``spec.containerPort``): the rendered command, run as the container runs it
    (only where it listens and as whom added, never its port), serves that port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    [memcached] = [c for c in render(cr(containerPort=port))[0]["spec"]["template"]["spec"]["containers"] if c["name"] == "memcached"]
    [declared] = [p["containerPort"] for p in memcached["ports"] if p["name"] == "memcached"]
    proc = subprocess.Popen([MEMCACHED, *memcached["command"][1:], "-l", "127.0.0.1", "-u", "nobody"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", declared), timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, f"nothing listens on the container port {declared}"
                time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_flags_are_memcacheds_own_spelling() -> None:
    assert memcached_flags(Decimal(256 * MIB), Decimal(4), 100, None) == [
        "--memory-limit=204", "--conn-limit=100", "--threads=4", "-o", "modern", "-v"]
    assert memcached_flags(512 * MIB, None) == ["--memory-limit=409", "-o", "modern", "-v"]
    assert memcached_flags(None, Decimal("0.5"), threads=6) == ["--memory-limit=64", "--threads=6", "-o", "modern", "-v"]


@pytest.mark.parametrize(("spec", "flags"), [
    ({"maxConnections": 512}, ["--memory-limit=64", "--conn-limit=512", "-o", "modern", "-v"]),
    ({"threads": 2}, ["--memory-limit=64", "--threads=2", "-o", "modern", "-v"]),
    ({"maxConnections": 512, "threads": 2}, ["--memory-limit=64", "--conn-limit=512", "--threads=2", "-o", "modern", "-v"]),
])
def test_connections_and_threads_without_resources_keep_the_seeds_memory(spec: dict, flags: list[str]) -> None:
    """maxConnections or threads alone: memcached's flags say them, with the seeds' 64 MB and resources."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "a"},
          "spec": {"size": 1, "containerPort": 11211, **spec}}
    [container] = render(cr)[0]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["memcached", *flags]
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "96Mi"}, "limits": {"memory": "128Mi"}}


@pytest.mark.parametrize(("resources", "flags"), [
    ({"limits": {"cpu": "2"}, "requests": {"memory": "1Gi"}}, ["--memory-limit=819", "--threads=2"]),
    ({"limits": {"memory": "1Gi"}, "requests": {"cpu": "3"}}, ["--memory-limit=819", "--threads=3"]),
    ({"limits": {"memory": "1Gi"}, "requests": {"memory": "256Mi", "cpu": "500m"}}, ["--memory-limit=819", "--threads=1"]),
])
def test_each_of_memory_and_cpu_is_read_from_the_limit_else_the_request(resources: dict, flags: list[str]) -> None:
    """Memory and cpu are looked up each on its own, as the kubelet gives a container a limit or a
    request per resource: a CR that limits only its cpu and requests its memory gets a cache sized from
    that memory request, never the seeds' 64 MB."""
    assert container(resources=resources)["command"] == ["memcached", *flags, "-o", "modern", "-v"]


@pytest.mark.parametrize("resources", [{"limits": {"memory": "0"}}, {"limits": {"memory": "0"}, "requests": {"memory": "0"}},
                                       {"requests": {"memory": "0", "cpu": "0"}}])
def test_a_zero_quantity_is_no_quantity(resources: dict) -> None:
    """A memory of "0" is no bound: the kubelet gives a container a memory limit only when it is not
    zero (kuberuntime's calculateLinuxResources), so memcached keeps the seeds' 64 MB and its own
    thread count, never the 16 MB floor a zero-byte container would get."""
    assert container(resources=resources)["command"] == ["memcached", "--memory-limit=64", "-o", "modern", "-v"]


@pytest.mark.parametrize("resources", [{}, {"limits": {}}, {"requests": {}}, {"limits": {}, "requests": {}}])
def test_resources_that_name_nothing_are_no_resources(resources: dict) -> None:
    """Empty limits and requests (a patch that emptied them) ask for nothing: the seeds' command and
    resources, never a container with ``resources: {}`` (a BestEffort Pod with no memory limit at all)."""
    sized = container(resources=resources)
    assert sized["command"] == ["memcached", "--memory-limit=64", "-o", "modern", "-v"]
    assert sized["resources"] == {"requests": {"cpu": "100m", "memory": "96Mi"}, "limits": {"memory": "128Mi"}}


@pytest.mark.parametrize(("resources", "stored"), [
    ({"limits": {}, "requests": {"cpu": "0.5", "memory": "256Mi"}}, {"requests": {"cpu": "500m", "memory": "256Mi"}}),
    ({"limits": {"memory": "1Gi"}, "requests": {}}, {"limits": {"memory": "1Gi"}}),
])
def test_an_empty_section_beside_a_named_one_is_left_out_as_the_api_server_stores_it(resources: dict, stored: dict) -> None:
    """A ResourceList is a Go map with omitempty: the API server stores no empty ``limits`` or ``requests``,
    so the rendering leaves it out too, and reading the Deployment back is no drift."""
    assert container(resources=resources)["resources"] == stored


def _cache_mb_reference(limit: Fraction) -> int:
    """``-m`` in whole MiB by exact rational arithmetic: the limit less max(a fifth, 32 MiB), floored, at least 16."""
    left = limit - max(Fraction(32 * MIB), limit / 5)
    return max(16, left.numerator // (left.denominator * MIB))


#: quantities in bytes: any whole number, whole MiB, and milli-bytes (``500m`` is a quantity too)
_memories = st.one_of(st.integers(1, 2**40), st.integers(1, 4096).map(lambda n: n * MIB),
                      st.integers(1, 2**44).map(lambda n: Fraction(n, 1000)))
_cpus = st.integers(1, 40_000).map(lambda n: Fraction(n, 1000))


def _decimal(value: int | Fraction) -> Decimal:
    value = Fraction(value)
    return Decimal(value.numerator) / Decimal(value.denominator)  # exact: a denominator divides 1000


@settings(max_examples=100, deadline=None)
@given(_memories, _memories)
def test_the_cache_size_is_a_fifth_less_at_least_32_mib_for_any_limit_and_never_shrinks_as_it_grows(a, b) -> None:
    """Any number of bytes, a whole number of MiB or not, a fraction of a byte (``500m``): the rule
    exactly, and a larger limit never gives a smaller cache."""
    for limit in (a, b):
        assert cache_megabytes(_decimal(limit)) == _cache_mb_reference(Fraction(limit))
    small, large = sorted((Fraction(a), Fraction(b)))
    assert cache_megabytes(_decimal(small)) <= cache_megabytes(_decimal(large))


@settings(max_examples=100, deadline=None)
@given(_cpus)
def test_threads_are_the_cpus_rounded_up_between_1_and_16(cpu: Fraction) -> None:
    """Any cpu in millicores: its whole cores rounded up (``1001m`` is two), at least one, at most 16."""
    expected = min(16, max(1, -(-cpu.numerator // cpu.denominator)))
    assert thread_count(_decimal(cpu)) == expected


@st.composite
def _spelled(draw: st.DrawFn, value: int) -> str:
    """One of the ways a person writes ``value`` as a quantity (``1Gi``, ``1024Mi``, ``1073741824``, ``1.0Gi``, ``1e0``...)."""
    forms = [str(value), f"{value}e0", f"{value * 1000}m", f"+{value}", f"{value}.0"]
    forms += [f"{value // 1024**p}{s}" for p, s in ((1, "Ki"), (2, "Mi"), (3, "Gi")) if value % 1024**p == 0]
    forms += [f"{value // 1000**p}{s}" for p, s in ((1, "k"), (2, "M"), (3, "G")) if value % 1000**p == 0]
    forms += [f"{value // 1024**3}.0Gi", f"{value // 1024**2 / 1024}Gi"] if value % 1024**3 == 0 else []
    return draw(st.sampled_from(forms))


_bytes = st.sampled_from([0, 0, 40 * MIB, 128 * MIB, 300_000_000, 1024 * MIB, 3 * 1024**3])
_millicores = st.sampled_from([0, 0, 1, 500, 1000, 1001, 2500, 64_000])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_each_of_memory_and_cpu_is_the_first_nonzero_of_limit_and_request_however_spelled(data: st.DataObject) -> None:
    """Limits and requests of memory and cpu, each present or not, zero or not, written in any of a
    quantity's spellings: memcached's ``-m`` comes from the memory limit, else the memory request,
    a zero one counting as none (the seeds' 64 without either), ``-t`` likewise from the cpu; and
    the spelling changes nothing but the text."""
    asked: dict[str, dict[str, str]] = {section: {} for section in ("limits", "requests")}
    values: dict[tuple[str, str], int] = {}
    for section in ("limits", "requests"):
        for resource, amounts in (("memory", _bytes), ("cpu", _millicores)):
            if data.draw(st.booleans()):
                amount = data.draw(amounts)
                values[section, resource] = amount
                asked[section][resource] = (data.draw(_spelled(amount)) if resource == "memory"
                                            else data.draw(st.sampled_from([f"{amount}m", f"{Decimal(amount) / 1000}"])))
    assume(any(asked.values()))
    memory = next((values[s, "memory"] for s in ("limits", "requests") if values.get((s, "memory"))), None)
    cpu = next((values[s, "cpu"] for s in ("limits", "requests") if values.get((s, "cpu"))), None)
    flags = [f"--memory-limit={64 if memory is None else _cache_mb_reference(Fraction(memory))}"]
    flags += [] if cpu is None else [f"--threads={min(16, max(1, -(-cpu // 1000)))}"]
    sized = container(resources={k: v for k, v in asked.items() if v})
    assert sized["command"] == ["memcached", *flags, "-o", "modern", "-v"]
    assert {s: {r: quantity(q) for r, q in section.items()} for s, section in sized["resources"].items()} == \
        {s: {r: quantity(q) for r, q in section.items()} for s, section in asked.items() if section}


_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "e3", "E-2", "e0", "e-9"]


@st.composite
def _quantity_texts(draw: st.DrawFn) -> str:
    """A non-negative quantity as a person may write it: leading zeros, a point with or without
    digits on either side, any suffix of the three families."""
    whole = draw(st.sampled_from(["", "0", "00", "1", "7", "10", "128", "1000", "1024", "1536", "999999", "4096000"]))
    fraction = draw(st.sampled_from([None, "", "0", "5", "25", "125", "001", "9990234375", "000"]))
    assume(whole or fraction)
    return draw(st.sampled_from(["", "+"])) + whole + ("" if fraction is None else "." + fraction) + draw(st.sampled_from(_SUFFIXES))


@settings(max_examples=100, deadline=None)
@given(_quantity_texts())
def test_the_stored_form_of_a_quantity_is_its_value_rounded_up_to_milli_and_is_stored_as_it_is(text: str) -> None:
    """ParseQuantity and SetDefaults_ResourceList keep a quantity's value, rounded up to a
    thousandth (resource/quantity.go, core/v1 defaults.go): the stored text reads as that value,
    and storing the stored text again changes nothing (a re-applied manifest is no drift)."""
    value = quantity(text)
    assert value is not None
    stored = canonical_quantity(text)
    assert quantity(stored) == value.quantize(Decimal("0.001"), rounding="ROUND_CEILING")
    assert canonical_quantity(stored) == stored


@pytest.mark.parametrize("cpu", ["1e1.5", "1e.5", "2E+1."])
def test_a_quantity_the_crd_accepts_renders_to_one_the_api_server_parses_or_is_refused(cpu: str) -> None:
    """The CRD's quantity pattern (core/v1's, in the shipped CRD) takes a fractional exponent, which
    resource.ParseQuantity refuses ("quantities must match the regular expression"), and the CRD's
    rules pass over what is not a quantity (``!isQuantity(...) ||``). A CR the validator accepts must
    not render a Deployment the API server refuses: either the CR is refused, or each rendered
    quantity parses."""
    from memcached_gitops.schemas.quantities import strict_quantity

    cr = memcached_cr("c", "shop", {"size": 1, "resources": {"limits": {"cpu": cpu, "memory": "64Mi"}}})
    outcome = Validator(load_crd()).validate(cr)
    if not outcome.ok:
        return
    [deployment, *_] = render(outcome.obj)
    [memcached] = deployment["spec"]["template"]["spec"]["containers"]
    unparsed = [q for section in memcached["resources"].values() for q in section.values() if strict_quantity(str(q)) is None]
    assert unparsed == []


AS_THE_PODS_USER = pytest.mark.skipif(
    MEMCACHED is None or SETPRIV is None or os.geteuid() != 0,
    reason="needs memcached, and setpriv run as root to start it as the Pod's non-root user")


def _pods_user_and_command(cr: dict) -> tuple[int, list[str]]:
    [deployment, *_] = render(cr)
    pod = deployment["spec"]["template"]["spec"]
    [memcached] = [c for c in pod["containers"] if c["name"] == "memcached"]
    uid = (memcached.get("securityContext") or {}).get("runAsUser") or pod["securityContext"]["runAsUser"]
    return int(uid), memcached["command"]


def _least_connections_the_crd_takes(spec: dict) -> int:
    """The least spec.maxConnections the shipped CRD takes beside ``spec``, found by asking the validator."""
    validator = Validator(load_crd())
    low = _spec_bounds("maxConnections")[0]
    while not validator.validate(memcached_cr("c", "shop", {"size": 1, **spec, "maxConnections": low})).ok:
        low += 1
        assert low <= _spec_bounds("maxConnections")[1]
    return low


@AS_THE_PODS_USER
@pytest.mark.parametrize("threads", range(1, _spec_bounds("threads")[1] + 1))
def test_memcached_starts_as_the_pods_user_with_the_fewest_connections_the_crd_takes_for_its_threads(threads: int) -> None:
    """memcached sets its open-files limit (soft and hard) to its connection limit before it opens its
    sockets and each worker thread's descriptors; started as the Pod's non-root user it cannot raise it
    again, and exits. A CR the CRD accepts must render a Pod that starts: at every spec.threads the CRD
    takes, with the least spec.maxConnections the CRD takes beside it, listening on every address."""
    connections = _least_connections_the_crd_takes({"threads": threads})
    assert connections == min_connections(threads), "the CRD's rule and the renderer's least disagree"
    uid, command = _pods_user_and_command(memcached_cr("c", "shop", {"size": 1, "threads": threads, "maxConnections": connections}))
    settings = _memcached_settings(command, uid=uid, every_address=True)
    assert (int(settings["maxconns"]), int(settings["num_threads"])) == (connections, threads)


@AS_THE_PODS_USER
@pytest.mark.parametrize(("resources", "derived"), [(None, 4), ({"limits": {"cpu": "16", "memory": "1Gi"}}, 16),
                                                   ({"requests": {"cpu": "3500m"}}, 4)],
                         ids=["memcacheds-default-threads", "cpu-16", "cpu-request-3.5"])
@pytest.mark.parametrize("connections", [14, 17, 25, 26, 50, 83, 84])
def test_threads_not_given_outright_are_lowered_so_that_memcached_starts_with_the_connections_given(
        resources: dict | None, derived: int, connections: int) -> None:
    """Threads derived from the cpu (or memcached's own default, 4) are the tool's choice, not the CR's: with
    few connections they are lowered to the most memcached starts with as the Pod's user, never refused."""
    assert _least_connections_the_crd_takes({}) == min_connections(1)
    spec = {"size": 1, "maxConnections": connections, **({"resources": resources} if resources else {})}
    assert Validator(load_crd()).validate(memcached_cr("c", "shop", spec)).ok
    uid, command = _pods_user_and_command(memcached_cr("c", "shop", spec))
    settings = _memcached_settings(command, uid=uid, every_address=True)
    assert (int(settings["maxconns"]), int(settings["num_threads"])) == (connections, min(derived, threads_allowed(connections)))
    assert threads_allowed(connections) == max(t for t in range(1, 65) if min_connections(t) <= connections)


def _memcached_version() -> str:
    return subprocess.run([MEMCACHED, "-V"], capture_output=True, text=True).stdout.strip() if MEMCACHED else ""


@AS_THE_PODS_USER
@pytest.mark.skipif(_memcached_version() != "memcached 1.6.18", reason="the least connections were measured with 1.6.18")
@pytest.mark.parametrize("threads", [1, 2, 4, 6, 7, 8, 16, 64])
def test_one_connection_fewer_than_the_least_is_one_memcached_1_6_18_serves_no_client_with(threads: int) -> None:
    """The least is the least, not a guess with room to spare: one fewer, and the real memcached (Debian's
    1.6.18, as the Pod's user, listening on every address) either exits at start ("Maxconns setting is too
    low") or runs with no descriptor left for a client, closing each connection unanswered (the kubelet's
    probe included), so the CRD refuses no CR whose cache would have served."""
    uid, _ = _pods_user_and_command(memcached_cr("c", "shop", {"size": 1}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", MEMCACHED, f"--threads={threads}",
            f"--conn-limit={min_connections(threads) - 1}", "-p", str(port), "-U", "0"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while proc.poll() is None:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                assert time.monotonic() < deadline, "memcached neither exited nor listened"
                time.sleep(0.05)
                continue
            with conn:
                conn.sendall(b"version\r\n")
                try:
                    answer = conn.recv(100)
                except OSError:
                    answer = b""
            assert not answer.startswith(b"VERSION"), answer
            return
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("threads", range(1, _spec_bounds("threads")[1] + 1))
def test_the_crds_least_connections_for_each_threads_is_the_renderers(threads: int) -> None:
    """One bound, said twice (the CRD's CEL rule for the API server, ``min_connections`` for the renderer): at
    every spec.threads the CRD takes, the least spec.maxConnections it takes beside it is ``min_connections``
    (held against the real memcached where it can run as the Pod's user, above)."""
    assert _least_connections_the_crd_takes({"threads": threads}) == min_connections(threads)


@pytest.mark.parametrize("cpu", [None, *range(1, 17)])
@pytest.mark.parametrize("connections", [None, 14, 17, 18, 25, 26, 43, 44, 83, 84, 1024])
def test_threads_not_given_are_the_most_the_connections_allow_up_to_the_derived_ones(cpu: int | None, connections: int | None) -> None:
    """Without spec.threads, ``-t`` is the cpu's (else memcached's own 4, left unsaid) unless the connections
    allow fewer: then the most they allow, never fewer, so a cache gets every thread it can start with."""
    flags = memcached_flags(None, None if cpu is None else Decimal(cpu), connections, None)
    said = [int(f.split("=")[1]) for f in flags if f.startswith("--threads=")]
    derived = cpu or 4
    if connections is None or connections >= min_connections(derived):
        assert said == ([] if cpu is None else [derived]), flags
    else:
        assert said == [max(t for t in range(1, derived) if min_connections(t) <= connections)], flags
