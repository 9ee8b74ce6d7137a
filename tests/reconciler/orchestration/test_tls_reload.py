"""The metrics server's certificate reload (reconciler/orchestration/tls.py) when a rotation is seen
half-written: the pair is looked at every RELOAD_CHECK seconds by its files' modification times,
whose tick is coarse on many filesystems (1 s on ext3, 2 s on FAT, one kernel jiffy on ext4's
timestamps in practice). A rotation that completes within the same tick as the half-written state
the server saw leaves the times unchanged, so the times may be taken as seen only for a pair that
loaded: else the new certificate would never be served."""

from __future__ import annotations

import os
import socket
import ssl
from pathlib import Path

from memcached_gitops.reconciler.orchestration import tls as tls_module
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.reconciler.orchestration.serving import PROBES, serve
from memcached_gitops.reconciler.orchestration.tls import ServingCertificate, self_signed

from tests.support.clock import ManualClock

TICK = 1_700_000_000.0  # one modification time for every write below: all within one tick


def write_pair(folder: Path, cert: bytes, key: bytes) -> None:
    (folder / "tls.crt").write_bytes(cert)
    (folder / "tls.key").write_bytes(key)
    for name in ("tls.crt", "tls.key"):
        os.utime(folder / name, (TICK, TICK))


def served(address: tuple[str, int]) -> bytes:
    with socket.create_connection(address, timeout=5) as raw:
        with ssl._create_unverified_context().wrap_socket(raw) as tls:  # noqa: S323
            return ssl.DER_cert_to_PEM_cert(tls.getpeercert(binary_form=True)).encode().strip()


def test_a_rotation_completed_within_the_tick_of_a_half_written_one_is_served(tmp_path: Path) -> None:
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    (tmp_path / "tls.crt").write_bytes(first)
    (tmp_path / "tls.key").write_bytes(key)
    os.utime(tmp_path / "tls.crt", (TICK - 60, TICK - 60))
    os.utime(tmp_path / "tls.key", (TICK - 60, TICK - 60))
    server = serve(Metrics(), 0, "127.0.0.1", paths=PROBES, certificate=ServingCertificate(str(tmp_path), clock=clock))
    try:
        assert served(server.server_address) == first.strip()
        second, key2 = self_signed(("localhost", "127.0.0.1"))
        write_pair(tmp_path, second[: len(second) // 2], key2)  # the writer is half-way through the certificate
        clock.now += tls_module.RELOAD_CHECK
        assert served(server.server_address) == first.strip(), "a half-written pair keeps the last good one"
        write_pair(tmp_path, second, key2)  # completed within the same tick: the times did not move
        clock.now += tls_module.RELOAD_CHECK
        assert served(server.server_address) == second.strip(), "the completed rotation is served"
        clock.now += tls_module.RELOAD_CHECK
        assert served(server.server_address) == second.strip()
    finally:
        server.shutdown()
        server.server_close()


def test_a_key_written_before_its_certificate_within_one_tick_is_served_once_both_are(tmp_path: Path) -> None:
    """A new key beside the old certificate does not load (they do not match): the pair is tried again
    at the next check, also when the certificate then lands within the same tick."""
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    write_pair(tmp_path, first, key)
    os.utime(tmp_path / "tls.crt", (TICK - 60, TICK - 60))
    os.utime(tmp_path / "tls.key", (TICK - 60, TICK - 60))
    server = serve(Metrics(), 0, "127.0.0.1", paths=PROBES, certificate=ServingCertificate(str(tmp_path), clock=clock))
    try:
        second, key2 = self_signed(("localhost", "127.0.0.1"))
        write_pair(tmp_path, first, key2)  # the key first: a mismatched pair
        clock.now += tls_module.RELOAD_CHECK
        assert served(server.server_address) == first.strip()
        write_pair(tmp_path, second, key2)
        clock.now += tls_module.RELOAD_CHECK
        assert served(server.server_address) == second.strip()
    finally:
        server.shutdown()
        server.server_close()


def test_a_pair_whose_files_are_gone_for_a_moment_keeps_the_last_one_served(tmp_path: Path) -> None:
    """A Secret volume or cert-manager's writer can leave the directory without tls.crt or tls.key
    between two checks: the last pair that loaded is served (no error reaches the connection), and
    the new pair once it is there."""
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    write_pair(tmp_path, first, key)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    loaded = cert.context()
    (tmp_path / "tls.key").unlink()
    clock.now += tls_module.RELOAD_CHECK
    assert cert.context() is loaded, "a missing key keeps the last pair"
    (tmp_path / "tls.crt").unlink()
    clock.now += tls_module.RELOAD_CHECK
    assert cert.context() is loaded, "a missing certificate keeps the last pair"
    second, key2 = self_signed(("localhost", "127.0.0.1"))
    (tmp_path / "tls.crt").write_bytes(second)
    (tmp_path / "tls.key").write_bytes(key2)
    clock.now += tls_module.RELOAD_CHECK
    assert cert.context() is not loaded, "the pair written again is loaded"


def test_a_rotation_that_lands_while_the_pair_is_read_is_loaded_at_the_next_check(tmp_path: Path, monkeypatch) -> None:
    """The modification times kept as loaded are the ones seen before the pair was read: a rotation
    that lands while the files are being read (the kubelet swapping a Secret volume's ..data) is
    loaded at the next check, never taken as the pair already served."""
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    write_pair(tmp_path, first, key)
    os.utime(tmp_path / "tls.crt", (TICK - 60, TICK - 60))
    os.utime(tmp_path / "tls.key", (TICK - 60, TICK - 60))
    second, key2 = self_signed(("localhost", "127.0.0.1"))
    real = tls_module.server_context
    rotations = []

    def rotating(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
        context = real(cert_pem, key_pem)
        if not rotations:  # the first pair is read; the rotation lands before it is loaded
            rotations.append(True)
            write_pair(tmp_path, second, key2)
        return context

    monkeypatch.setattr(tls_module, "server_context", rotating)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    loaded = cert.context()
    clock.now += tls_module.RELOAD_CHECK
    assert cert.context() is not loaded, "the pair that landed during the read is loaded at the next check"
    reloaded = cert.context()
    clock.now += tls_module.RELOAD_CHECK
    assert cert.context() is reloaded, "and then kept: the times did not move again"


def test_the_folder_is_looked_at_once_per_check_whether_or_not_its_pair_loaded(tmp_path: Path, monkeypatch) -> None:
    """Every connection asks for the context: the pair is read at most once per RELOAD_CHECK, also
    while the folder holds a pair that does not load (a key rotated beside the old certificate, files
    gone for a while), so that a scraper's connections cannot each make the process read and parse
    the files again; the next check tries again and loads the pair once it is whole."""
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    write_pair(tmp_path, first, key)
    os.utime(tmp_path / "tls.crt", (TICK - 60, TICK - 60))
    os.utime(tmp_path / "tls.key", (TICK - 60, TICK - 60))
    real = tls_module.server_context
    reads: list[bytes] = []

    def counted(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
        reads.append(cert_pem)
        return real(cert_pem, key_pem)

    monkeypatch.setattr(tls_module, "server_context", counted)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    loaded = cert.context()
    assert len(reads) == 1
    second, key2 = self_signed(("localhost", "127.0.0.1"))
    cases = [("a key that does not match its certificate", lambda: write_pair(tmp_path, first, key2)),
             ("a certificate gone", lambda: (tmp_path / "tls.crt").unlink())]
    for why, damage in cases:
        damage()
        clock.now += tls_module.RELOAD_CHECK
        tried = len(reads)
        assert cert.context() is loaded, why
        for _ in range(5):  # more connections within the same check
            clock.now += tls_module.RELOAD_CHECK / 10
            assert cert.context() is loaded, why
        assert len(reads) - tried <= 1, f"{why}: read again for each connection"
        write_pair(tmp_path, first, key)
    write_pair(tmp_path, second, key2)
    clock.now += tls_module.RELOAD_CHECK
    assert cert.context() is not loaded, "the whole pair is loaded at the next check"


def test_a_pair_that_does_not_load_leaves_no_descriptor_open(tmp_path: Path) -> None:
    """The pair reaches ssl through descriptors of its own (an in-memory file each, or a temporary
    directory): a pair that fails to load, checked again every RELOAD_CHECK for as long as a broken
    rotation lasts (days, at 8,640 checks a day), closes them as a pair that loads does, so the
    process never runs out of descriptors."""
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    write_pair(tmp_path, first, key)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    _, key2 = self_signed(("localhost", "127.0.0.1"))

    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0

    before = descriptors()
    (tmp_path / "tls.key").write_bytes(key2)  # a key that does not match the certificate
    for n in range(20):  # its time moved at each check: each check tries the pair
        os.utime(tmp_path / "tls.key", (TICK + n, TICK + n))
        clock.now += tls_module.RELOAD_CHECK
        cert.context()
    assert descriptors() == before


def rotated(folder: Path, when: float) -> None:
    """A new pair in ``folder``, both files stamped ``when``."""
    cert, key = self_signed(("localhost", "127.0.0.1"))
    write_pair(folder, cert, key)
    for name in ("tls.crt", "tls.key"):
        os.utime(folder / name, (when, when))


def test_a_rotation_is_looked_for_at_exactly_reload_check_and_not_a_tick_sooner(tmp_path: Path) -> None:
    """The period is counted on the monotonic clock from the last look: one tick before it the
    files are not read; at it, the renewed pair is served."""
    clock = ManualClock(1000.0)
    rotated(tmp_path, TICK - 60)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    loaded = cert.context()
    rotated(tmp_path, TICK)
    clock.now = 1000.0 + tls_module.RELOAD_CHECK - 0.001
    assert cert.context() is loaded, "looked at a tick before the period"
    clock.now = 1000.0 + tls_module.RELOAD_CHECK
    assert cert.context() is not loaded, "the renewed pair is served at the period"


def test_a_rotation_whose_files_are_older_than_the_pair_served_is_loaded(tmp_path: Path) -> None:
    """A pair is new when its modification times differ from the ones loaded, not when they are
    later: files restored from a backup, copied with their times kept (``cp -p``, a Secret volume's
    atomic swap of a directory written earlier) or written after the wall clock stepped back carry
    times before the served pair's, and are still served."""
    clock = ManualClock(1000.0)
    rotated(tmp_path, TICK)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    loaded = cert.context()
    rotated(tmp_path, TICK - 3600)
    clock.now += tls_module.RELOAD_CHECK
    assert cert.context() is not loaded


def test_after_a_stall_of_many_periods_the_files_are_looked_at_once_and_then_a_period_later(tmp_path: Path, monkeypatch) -> None:
    """A process that wakes from a stall (a suspended VM, a paused container: the monotonic clock
    moves ten periods at once) looks at the files once, and the next look is a whole period after
    that one, not after the missed ones were due: no burst of reads at each connection after a stall."""
    clock = ManualClock(1000.0)
    rotated(tmp_path, TICK - 60)
    looks: list[float] = []
    real = tls_module.ServingCertificate._files

    def counted(self: ServingCertificate) -> tuple[Path, Path]:
        looks.append(clock.now)
        return real(self)

    monkeypatch.setattr(tls_module.ServingCertificate, "_files", counted)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    looks.clear()
    clock.now += 10 * tls_module.RELOAD_CHECK
    for _ in range(5):
        cert.context()
        clock.now += tls_module.RELOAD_CHECK / 10
    assert looks == [1000.0 + 10 * tls_module.RELOAD_CHECK], "one look after the stall"
    clock.now = 1000.0 + 11 * tls_module.RELOAD_CHECK
    cert.context()
    assert len(looks) == 2


def publish(volume: Path, stamp: str, cert: bytes, key: bytes, when: float) -> None:
    """What the kubelet's AtomicWriter does to a Secret volume: the pair written into a new timestamped
    folder, a ``..data_tmp`` link to it renamed over ``..data`` (one atomic swap), the old folder removed.
    ``tls.crt`` and ``tls.key`` themselves are links to ``..data/<file>``, made once and never touched."""
    folder = volume / f"..{stamp}"
    folder.mkdir()
    for name, data in (("tls.crt", cert), ("tls.key", key)):
        (folder / name).write_bytes(data)
        os.utime(folder / name, (when, when))
    old = os.readlink(volume / "..data") if (volume / "..data").is_symlink() else None
    (volume / "..data_tmp").symlink_to(folder.name)
    os.replace(volume / "..data_tmp", volume / "..data")
    for name in ("tls.crt", "tls.key"):
        if not (volume / name).is_symlink():
            (volume / name).symlink_to(f"..data/{name}")
    if old is not None:
        for name in ("tls.crt", "tls.key"):
            (volume / old / name).unlink()
        (volume / old).rmdir()


def test_a_certificate_renewed_in_a_mounted_secret_volume_is_served_without_a_restart(tmp_path: Path) -> None:
    """--metrics-cert-dir is a mounted Secret (cert-manager's) in the shipped setup, and the kubelet
    lays a Secret volume out as links: ``tls.crt -> ..data/tls.crt``, ``..data -> ..<timestamp>``.
    A renewal swaps ``..data``; the links in the folder keep their own times, so the renewal is seen
    only through the files they point to. Else the old certificate is served until it expires and
    every scrape that checks it fails until the Pod is restarted."""
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    publish(tmp_path, "2026_01_01_00_00_00.000000001", first, key, TICK - 60)
    server = serve(Metrics(), 0, "127.0.0.1", paths=PROBES, certificate=ServingCertificate(str(tmp_path), clock=clock))
    try:
        assert served(server.server_address) == first.strip()
        second, key2 = self_signed(("localhost", "127.0.0.1"))
        publish(tmp_path, "2026_03_01_00_00_00.000000001", second, key2, TICK)  # cert-manager renewed the Secret
        assert (tmp_path / "tls.crt").read_bytes() == second, "the volume now holds the renewed pair"
        clock.now += tls_module.RELOAD_CHECK
        assert served(server.server_address) == second.strip(), "the renewed certificate is served"
    finally:
        server.shutdown()
        server.server_close()
