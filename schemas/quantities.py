"""Kubernetes resource quantities (``128Mi``, ``500m``, ``1e3``): their value and the text the API
server stores for them. Pure; apimachinery's resource/quantity.go is the reference.

Shared by the renderer (the quantities it writes, memcached's limits derived from them) and the
validator's CEL ``quantity()`` library (the CRD's rules on resources), so both read a quantity one way.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_QUANTITY_PARTS = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_INT64_MAX = 2**63 - 1
#: an exponent suffix (``e3``, ``E-2``), not ``E`` (exa) or ``Ei`` (exbi)
_EXPONENT = re.compile(r"^[eE][+-]?[0-9]+$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def strict_quantity(text: str) -> Decimal | None:
    """resource.ParseQuantity's verdict on a text: its value, or None where it fails (no blanks
    around it, unlike ``quantity``, which reads what a person may have written in a CR)."""
    return quantity(text) if text == text.strip() else None


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
    quantities checked against kube-apiserver v1.36.2 by tests/real_cluster/test_reconciler_real_cluster.py):

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
