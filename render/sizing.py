"""memcached's own limits, derived from the container's resources: pure, deterministic.

memcached's ``-m`` (``--memory-limit``) bounds item storage only: its hash table (8 bytes a bucket,
doubling as items grow), connection buffers, threads' caches and the binary itself come on top
(memcached's wiki, "ConfiguringServer" and "Memory"). So a Pod whose ``-m`` equals its memory limit
is OOM-killed once full. The rule, measured by bench/memcached_memory.py with Debian's memcached
filled to eviction with small and large values and 200 idle connections:

- ``-m`` = the memory limit less a headroom of HEADROOM_SHARE of it, and at least HEADROOM_MIN;
  never below MIN_CACHE_MB (memcached refuses less than its slab page size times its slab classes);
- ``-t`` (threads) = the CPU limit (else the request) rounded up, between 1 and MAX_THREADS, when
  the CR gives one (memcached's default, 4, otherwise); ``spec.threads`` says it outright;
- ``-c`` (connections) = ``spec.maxConnections`` when given (memcached's default, 1024, otherwise).

memcached sets its open-files limit, soft and hard, to ``-c`` before it opens its sockets and each
worker thread's descriptors, and the Pod's non-root user cannot raise it again: with too few
connections for its threads it exits at start ("Maxconns setting is too low" or "Too many open
files"), and the Pod never becomes Ready. ``min_connections`` is the least ``-c`` for ``-t`` threads,
measured with Debian's memcached 1.6.18 listening on every address as the Pod's user
(``bench/memcached_connections.py``): the CRD refuses an explicit ``spec.threads`` above what
``spec.maxConnections`` allows (and ``maxConnections`` below one thread's least), and threads derived
from the cpu, or memcached's default 4, are lowered to what the connections allow.

Without a memory limit or request (or with a zero one: the kubelet bounds no container at 0) the
seeds' ``--memory-limit=64`` stays, so a CR without ``resources`` renders today's Deployment.
"""

from __future__ import annotations

import math
from decimal import Decimal

MIB = 1024 * 1024
DEFAULT_CACHE_MB = 64
HEADROOM_SHARE = Decimal("0.2")
HEADROOM_MIN = 32 * MIB
MIN_CACHE_MB = 16
MAX_THREADS = 16
#: memcached's own thread count without ``-t``, and the CRD's bound on ``spec.threads``.
DEFAULT_THREADS, MEMCACHED_MAX_THREADS = 4, 64
def cache_megabytes(memory_limit: Decimal | None) -> int:
    """``-m`` for a container of ``memory_limit`` bytes (None: the seeds' 64)."""
    if memory_limit is None:
        return DEFAULT_CACHE_MB
    headroom = max(Decimal(HEADROOM_MIN), memory_limit * HEADROOM_SHARE)
    return max(MIN_CACHE_MB, math.floor((memory_limit - headroom) / MIB))


def thread_count(cpu: Decimal | None) -> int | None:
    """``-t`` for ``cpu`` cores (None: memcached's default)."""
    if cpu is None or cpu <= 0:
        return None
    return max(1, min(MAX_THREADS, math.ceil(cpu)))


def min_connections(threads: int) -> int:
    """The least ``-c`` memcached starts with at ``threads`` threads as a non-root user: four
    descriptors a thread and ten more up to six threads, then the five a thread memcached reserves
    itself (its ``reserved_fds`` check) and four more."""
    return max(4 * threads + 10, 5 * threads + 4)


def threads_allowed(connections: int) -> int:
    """The most threads memcached starts with at ``connections`` (at least one)."""
    return max([1, *(t for t in range(1, MEMCACHED_MAX_THREADS + 1) if min_connections(t) <= connections)])


def memcached_flags(memory_limit: Decimal | int | None, cpu: Decimal | None, connections: int | None = None,
                    threads: int | None = None) -> list[str]:
    """memcached's arguments after its name: the rendered container's command, less ``memcached``."""
    flags = [f"--memory-limit={cache_megabytes(Decimal(memory_limit) if memory_limit is not None else None)}"]
    if connections is not None:
        flags.append(f"--conn-limit={connections}")
    chosen = threads if threads is not None else thread_count(cpu)
    if threads is None and connections is not None and connections < min_connections(chosen or DEFAULT_THREADS):
        chosen = threads_allowed(connections)  # a default, not the CR's word: lowered so that memcached starts
    if chosen is not None:
        flags.append(f"--threads={chosen}")
    return flags + ["-o", "modern", "-v"]
