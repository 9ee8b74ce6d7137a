"""The probe and metrics ports under abuse: does /healthz still answer, and how much memory does the
reconciler's process take, while strangers hold connections and flood headers (issue 47)?

Run:  python bench/ports_under_abuse.py [--source DIR] [--seconds 20] [--slow 200] [--floods 32]

A child process runs the product's own servers (reconciler/orchestration/serving.py of ``--source``,
default this checkout; give a ``git archive`` of another commit to measure it): the probe server
(plain HTTP, /healthz and /readyz) and the metrics server (HTTPS with a self-signed certificate,
each request passed by bearer_guard, whose TokenReviews go to a stub that counts them and answers
"not authenticated"), both on 127.0.0.1. This process then attacks them, on loopback only:

- ``--slow`` clients, half on each port, each sending one byte a second and reconnecting when cut,
  from many loopback addresses (127.0.2.x, a few connections each, as pods of a cluster would);
- ``--floods`` clients on the metrics port sending 99 headers of almost 64 KiB each, over and over, from
  127.0.3.x;
- a prober on 127.0.0.1 (the kubelet) asking /healthz every 0.25 s with a 1 s timeout;
- after the attack, ``--tokens`` requests (1,500) with random tokens to /metrics, for 60 s at most: the
  TokenReviews they caused.

Printed: the probes answered within 1 s and the slowest, the child's resident memory before and at
its peak (VmRSS, VmHWM), and the TokenReviews. Bounded: every loop stops at ``--seconds``. Not a
test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVER = r'''
import sys, threading
from memcached_gitops.reconciler.client.reviews import AccessReviews
from memcached_gitops.reconciler.orchestration import serving
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.reconciler.orchestration.tls import ServingCertificate

class CountingAPI:
    """A TokenReview answered 'not authenticated' after a round trip's worth of time, counted."""
    def __init__(self):
        self.reviews, self.lock = 0, threading.Lock()
    def request(self, method, path, body=None, verb="", **kwargs):
        with self.lock:
            self.reviews += 1
        return {"status": {"authenticated": False}}

api, metrics = CountingAPI(), Metrics()
metrics.ready = True
probes = serving.serve(metrics, 0, "127.0.0.1", paths=serving.PROBES, name="probe-server")
secure = serving.serve(metrics, 0, "127.0.0.1", paths=serving.METRICS, guard=serving.bearer_guard(AccessReviews(api)),
                       certificate=ServingCertificate(None))
print(serving.__file__, probes.server_address[1], secure.server_address[1], flush=True)
for line in sys.stdin:
    print(api.reviews, flush=True)
'''


def import_tree(source: Path, into: Path) -> Path:
    """``source``'s packages laid out as installed (its pyproject.toml's package-dir), as symlinks."""
    dirs = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(dirs.items()):
        place = into.joinpath(*package.split("."))
        place.mkdir(parents=True, exist_ok=True)
        for entry in (source / folder).iterdir():
            if entry.name != "__pycache__" and not (place / entry.name).exists():
                (place / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return into


def rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in KiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _open(port: int, source: str, tls: bool, timeout: float = 2.0) -> socket.socket | ssl.SSLSocket | None:
    try:
        s = socket.socket()
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        if tls:
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            return context.wrap_socket(s, server_hostname="localhost")
        return s
    except OSError:
        return None


def slow_client(port: int, source: str, until: float) -> None:
    """One byte a second of a request that never ends; a new connection when cut."""
    while time.monotonic() < until:
        s = _open(port, source, tls=False)
        if s is None:
            time.sleep(0.5)
            continue
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nX: ")
            while time.monotonic() < until:
                time.sleep(1)
                s.sendall(b"a")
        except OSError:
            pass
        finally:
            s.close()


def flood_client(port: int, source: str, until: float) -> None:
    """99 headers of almost 64 KiB each (under http.client's 65,536-byte line limit), over TLS; again when cut."""
    header = b"X-Flood: " + b"a" * 65_000 + b"\r\n"
    while time.monotonic() < until:
        s = _open(port, source, tls=True)
        if s is None:
            time.sleep(0.2)
            continue
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            for _ in range(99):
                if time.monotonic() >= until:
                    break
                s.sendall(header)
            s.sendall(b"\r\n")
            s.recv(1024)
        except OSError:
            pass
        finally:
            s.close()


def probe(port: int) -> float | None:
    """Seconds /healthz took to answer 200, or None (refused, cut, or more than 1 s)."""
    start = time.monotonic()
    s = _open(port, "127.0.0.1", tls=False, timeout=1.0)
    if s is None:
        return None
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = s.recv(1024)
        return time.monotonic() - start if answer.startswith(b"HTTP/1.0 200") else None
    except OSError:
        return None
    finally:
        s.close()


def random_tokens(port: int, count: int, until: float, threads: int = 8) -> int:
    """``count`` requests with a random token each, ``threads`` at a time (each from an address of
    its own, as many pods would send them); how many were answered at all (401, 429, 500...)."""
    answered, lock = [0], threading.Lock()

    def one(source: str) -> None:
        s = _open(port, source, tls=True)
        if s is None:
            return
        try:
            s.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secrets.token_hex(16)}\r\n\r\n".encode())
            if s.recv(1024):
                with lock:
                    answered[0] += 1
        except OSError:
            pass
        finally:
            s.close()

    def worker(share: int, source: str) -> None:
        for _ in range(share):
            if time.monotonic() >= until:
                return
            one(source)

    workers = [threading.Thread(target=worker, args=(count // threads + (i < count % threads), f"127.0.4.{i + 1}"))
               for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return answered[0]


def _crowd(target: Any, ports: list[int], prefix: str, count: int, until: float) -> None:
    """``count`` clients running ``target``, four to a loopback address under ``prefix``, in this process."""
    threads = [threading.Thread(target=target, args=(ports[i % len(ports)], f"{prefix}.{i // 4 + 1}", until), daemon=True)
               for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, until - time.monotonic()) + 5)


def _prober(port: int, until: float, out: Any) -> None:
    """/healthz every 0.25 s until ``until``; each result put on ``out``."""
    while time.monotonic() < until:
        out.put(("probe", probe(port)))
        time.sleep(0.25)
    out.put("done")


def attack(ports: tuple[int, int], args: argparse.Namespace, pid: int) -> tuple[list[float | None], int]:
    """The slow clients, the floods and the prober, each in a process of its own (so that the
    attackers' work does not delay the prober's own thread), for ``args.seconds``; the probe
    results and the peak VmRSS seen (KiB)."""
    until = time.monotonic() + args.seconds
    results: Any = multiprocessing.Queue()
    attackers = [multiprocessing.Process(target=_crowd, args=(slow_client, list(ports), "127.0.2", args.slow, until)),
                 multiprocessing.Process(target=_crowd, args=(flood_client, [ports[1]], "127.0.3", args.floods, until))]
    for process in attackers:
        process.start()
    time.sleep(1.0)  # let the attack take hold
    prober = multiprocessing.Process(target=_prober, args=(ports[0], until, results))
    prober.start()
    seen: list[float | None] = []
    peak = 0
    while True:
        try:
            item = results.get(timeout=0.2)
        except queue.Empty:
            item = None
        peak = max(peak, rss(pid)[0])
        if item == "done" or (item is None and not prober.is_alive()):
            break
        if item is not None:
            seen.append(item[1])
    for process in [*attackers, prober]:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    return seen, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=HERE.parent, help="a checkout whose servers to run [this one]")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--floods", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=1500, help="requests with a random token, within 60 s")
    args = parser.parse_args()
    print(f"# python {sys.version.split()[0]}; command: python bench/ports_under_abuse.py --source {args.source} "
          f"--seconds {args.seconds:g} --slow {args.slow} --floods {args.floods} --tokens {args.tokens}")
    tree = Path(tempfile.mkdtemp(prefix="ports-abuse-"))
    env = {**os.environ, "PYTHONPATH": str(import_tree(args.source.resolve(), tree))}
    child = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None and child.stdin is not None
        served_from, probe_port, metrics_port = child.stdout.readline().split()
        print(f"servers of {served_from}: probes :{probe_port}, metrics :{metrics_port} (TLS)")
        time.sleep(0.5)
        idle = rss(child.pid)[0]
        results, peak = attack((int(probe_port), int(metrics_port)), args, child.pid)
        answered = [r for r in results if r is not None]
        print(f"/healthz during the attack: {sum(r <= 1.0 for r in answered)}/{len(results)} answered within 1 s, "
              f"{len(results) - len(answered)} refused or unanswered; slowest answer "
              f"{max(answered) * 1000 if answered else float('nan'):.0f} ms")
        hwm = rss(child.pid)[1]
        print(f"memory: {idle / 1024:.0f} MiB idle, {peak / 1024:.0f} MiB peak seen, VmHWM {hwm / 1024:.0f} MiB")
        start = time.monotonic()
        got = random_tokens(int(metrics_port), args.tokens, time.monotonic() + 60)
        spent = time.monotonic() - start
        child.stdin.write("count\n")
        child.stdin.flush()
        reviews = int(child.stdout.readline())
        print(f"{args.tokens} random tokens (60 s at most): {got} answered in {spent:.1f} s, "
              f"{reviews} TokenReviews ({reviews / spent:.0f}/s)")
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
