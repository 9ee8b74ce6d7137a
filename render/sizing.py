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

Without a memory limit or request the seeds' ``--memory-limit=64`` stays, so a CR without
``resources`` renders today's Deployment.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

MIB = 1024 * 1024
DEFAULT_CACHE_MB = 64
HEADROOM_SHARE = Decimal("0.2")
HEADROOM_MIN = 32 * MIB
MIN_CACHE_MB = 16
MAX_THREADS = 16
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_QUANTITY_PARTS = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
#: an exponent suffix (``e3``, ``E-2``), not ``E`` (exa) or ``Ei`` (exbi)
_INT64_MAX = 2**63 - 1
_EXPONENT = re.compile(r"^[eE][+-]?[0-9]+$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def quantity(value: object) -> Decimal | None:
    """The number a Kubernetes quantity stands for (``128Mi`` -> 134217728, ``500m`` -> 0.5), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    m = _QUANTITY.match(str(value).strip())
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    suffix = m.group(2) or ""
    if suffix in _BINARY:
        return number * Decimal(1024) ** _BINARY[suffix]
    if _EXPONENT.match(suffix):
        return number.scaleb(int(suffix[1:]))
    return number.scaleb(_DECIMAL[suffix])


def _canonical(number: Decimal, binary: bool) -> str:
    """resource.Quantity's CanonicalizeBytes: binary by the largest ``Ki``..``Ei`` that divides a
    whole number of bytes of 1Ki or more, else decimal with the largest SI suffix that keeps the
    number whole (amount.go AsCanonicalBytes)."""
    if number == 0:
        return "0"
    if binary and number == number.to_integral_value() and abs(number) >= 1024:
        whole, power = int(number), 0
        while whole % 1024 == 0 and power < 6:
            whole //= 1024
            power += 1
        return f"{whole}{next(k for k, v in _BINARY.items() if v == power) if power else ''}"
    exponent, mantissa = 0, number
    if mantissa == mantissa.to_integral_value():
        while mantissa % 1000 == 0:
            mantissa, exponent = mantissa / 1000, exponent + 3
    else:
        while mantissa != mantissa.to_integral_value() and exponent > -9:
            mantissa, exponent = mantissa * 1000, exponent - 3
        mantissa = mantissa.to_integral_value(rounding="ROUND_CEILING")
    # beyond E (10**18) there is no suffix, and Go's constructBytes gives none: 10**21 is written "1" (43)
    return f"{int(mantissa)}{ {v: k for k, v in _DECIMAL.items()}.get(exponent, '')}"


def canonical_quantity(value: object) -> object:
    """A container resource quantity as the API server stores it (transcript 25, and 148 random
    quantities checked against kube-apiserver v1.36.2 by tests/test_reconciler_real_cluster.py):

    - ParseQuantity (apimachinery resource/quantity.go) keeps the text when it is already in a
      canonical form: a decimal whose digits without the point neither start with 0 nor end in
      000 and whose scale is a multiple of 3 (``98.110k``, ``63.798``, ``1500k``, ``67108864``), a
      binary whole number in a power of 1024 that is not a multiple of 8 (``1Gi``, ``3Mi``);
      otherwise it writes the canonical form (``0.1`` -> ``100m``, ``1000m`` -> ``1``, ``1024Mi`` ->
      ``1Gi``, ``1.5Gi`` -> ``1536Mi``);
    - core/v1 SetDefaults_ResourceList then rounds a resource up to milli units (``4000n`` ->
      ``1m``, ``29.12m`` -> ``30m``), writing it anew when that changed it.

    Anything that is not a quantity is returned as it is (the validator has refused it already)."""
    text = str(value).strip() if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    m = _QUANTITY_PARTS.match(text) if text is not None else None
    number = quantity(value)
    if m is None or number is None:
        return value
    digits, fraction, suffix = m.group(2) or "", m.group(3) or "", m.group(4) or ""
    num = digits.lstrip("0")
    binary = suffix in _BINARY
    exponent = int(suffix[1:]) if _EXPONENT.match(suffix) else (0 if binary else _DECIMAL[suffix])
    kept = None
    if binary:
        precision = 15 - len(num) - 3 * _BINARY[suffix] - 1 if not fraction else -1  # 1Mi has ~6 digits of precision
    else:
        precision = 18 - len(num) - len(fraction)
    scale = exponent - len(fraction)
    shifted = num + fraction
    if precision >= 0 and scale >= -9 and shifted and int(shifted) * (1024 ** _BINARY[suffix] if binary else 1) < 2**63:
        if binary:
            if int(shifted) & 0x07:
                kept = text
        elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
            kept = text
    if binary and number > _INT64_MAX:  # ParseQuantity caps a binary quantity at int64's maximum (43)
        number, kept = Decimal(_INT64_MAX), None
    rounded = number.quantize(Decimal("0.001"), rounding="ROUND_CEILING") if number != number.quantize(Decimal("0.001")) else number
    if rounded != number or kept is None:
        return _canonical(rounded, binary)
    return kept


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


def memcached_flags(memory_limit: Decimal | int | None, cpu: Decimal | None, connections: int | None = None,
                    threads: int | None = None) -> list[str]:
    """memcached's arguments after its name: the rendered container's command, less ``memcached``."""
    flags = [f"--memory-limit={cache_megabytes(Decimal(memory_limit) if memory_limit is not None else None)}"]
    if connections is not None:
        flags.append(f"--conn-limit={connections}")
    chosen = threads if threads is not None else thread_count(cpu)
    if chosen is not None:
        flags.append(f"--threads={chosen}")
    return flags + ["-o", "modern", "-v"]
