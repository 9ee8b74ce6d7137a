"""How much memory a real memcached takes beyond its -m, filled to eviction: the figures behind the
rule that derives -m from a container's memory limit (render/sizing.py).

    .venv/bin/python bench/memcached_memory.py                     # Debian's memcached on PATH
    .venv/bin/python bench/memcached_memory.py --limits 128 512 --value-sizes 64 4096

For each memory limit L (MiB) it starts memcached with the command line the renderer gives for L,
opens --connections idle connections, sets values of one size until memcached has evicted for a
while (the cache is full and its hash table has grown), and prints the process's peak resident
memory (VmHWM) against L: the headroom left is what keeps the kubelet from OOM-killing the Pod.
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

from memcached_gitops.render.sizing import memcached_flags  # noqa: E402

MIB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stats(sock: socket.socket) -> dict[str, str]:
    sock.sendall(b"stats\r\n")
    data = b""
    while not data.endswith(b"END\r\n"):
        data += sock.recv(65536)
    return {p[1]: p[2] for p in (line.split() for line in data.decode().splitlines()) if len(p) == 3}


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def fill(port: int, value_size: int, limit: int) -> dict[str, str]:
    """Set keys until evictions have gone on for as much again as it took to fill the cache."""
    sock = socket.create_connection(("127.0.0.1", port))
    value = b"x" * value_size
    i, first_eviction = 0, 0
    batch = 500
    while True:
        payload = b"".join(b"set k%d 0 0 %d noreply\r\n%s\r\n" % (i + j, value_size, value) for j in range(batch))
        sock.sendall(payload)
        i += batch
        if i % (batch * 20) == 0:
            s = stats(sock)
            if int(s.get("evictions", "0")) > 0 and not first_eviction:
                first_eviction = i
            if first_eviction and i >= 2 * first_eviction:
                return s
            if i > 4 * limit // max(value_size, 1) + 10_000_000:
                return s


def measure(limit_mib: int, value_size: int, connections: int, binary: str) -> tuple[list[str], int, dict[str, str]]:
    flags = memcached_flags(limit_mib * MIB, None)
    port = free_port()
    proc = subprocess.Popen([binary, *flags, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-u", "nobody"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
        s = fill(port, value_size, limit_mib * MIB)
        rss = peak_rss(proc.pid)
        for c in idle:
            c.close()
        return flags, rss, s
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    parser.add_argument("--value-sizes", type=int, nargs="+", default=[32, 1024])
    parser.add_argument("--connections", type=int, default=200)
    args = parser.parse_args()
    binary = shutil.which("memcached")
    if binary is None:
        print("memcached not found: apt-get install memcached", file=sys.stderr)
        return 2
    print(f"{'limit':>7} {'value':>6} {'flags':<40} {'peak RSS':>10} {'of limit':>8}  items, evictions")
    for limit in args.limits:
        for size in args.value_sizes:
            flags, rss, s = measure(limit, size, args.connections, binary)
            print(f"{limit:>5}Mi {size:>5}B {' '.join(flags[:-3]):<40} {rss / MIB:>8.1f}Mi {rss / (limit * MIB):>7.0%}  "
                  f"{s.get('curr_items')}, {s.get('evictions')}")
    print(f"command: {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
