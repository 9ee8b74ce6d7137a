"""The least connection limit (-c) a real memcached serves a client with, per thread count, started
as a non-root user as the Pod starts it: the figures behind render/sizing.py ``min_connections`` and
the CRD's rule on spec.maxConnections.

    sudo .venv/bin/python bench/memcached_connections.py                 # Debian's memcached on PATH
    sudo .venv/bin/python bench/memcached_connections.py --threads 1 4 64 --uid 1001 --loopback-only

memcached sets its open-files limit, soft and hard, to -c, and a non-root user cannot raise it
again: with too few for its threads it exits ("Maxconns setting is too low", its own check of the
descriptors it reserves) or runs with none left for a client. For each thread count this searches
(bisection) the least -c with which a ``version`` request is answered, and prints it beside
``min_connections``. Needs root (setpriv switches to --uid before memcached starts).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memcached_gitops.render.sizing import min_connections  # noqa: E402


def serves(memcached: str, uid: int, threads: int, connections: int, loopback_only: bool) -> bool:
    """Whether memcached at ``-t threads -c connections`` answers one client's ``version``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", memcached, f"--threads={threads}",
            f"--conn-limit={connections}", "-p", str(port), "-U", "0", *(["-l", "127.0.0.1"] if loopback_only else [])]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                    conn.sendall(b"version\r\n")
                    return conn.recv(100).startswith(b"VERSION")
            except OSError:
                time.sleep(0.03)
        return False
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64])
    parser.add_argument("--uid", type=int, default=1001, help="the Pod's runAsUser (the rendered Deployment's)")
    parser.add_argument("--loopback-only", action="store_true", help="listen on 127.0.0.1 only (one socket fewer)")
    args = parser.parse_args()
    memcached = shutil.which("memcached")
    if memcached is None or shutil.which("setpriv") is None or os.geteuid() != 0:
        print("needs memcached and setpriv on PATH, run as root", file=sys.stderr)
        return 2
    version = subprocess.run([memcached, "-V"], capture_output=True, text=True).stdout.strip()
    print(f"{version}, uid {args.uid}, {'loopback only' if args.loopback_only else 'every address'}")
    print(f"{'threads':>7} {'least -c':>8} {'min_connections':>15}")
    for threads in args.threads:
        low, high = 1, 4096
        while low < high:
            mid = (low + high) // 2
            if serves(memcached, args.uid, threads, mid, args.loopback_only):
                high = mid
            else:
                low = mid + 1
        print(f"{threads:>7} {low:>8} {min_connections(threads):>15}")
    print(f"reproduce: sudo {sys.executable} {' '.join(sys.argv)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
