"""Scalar resolution: the value go-yaml v2 gives a scalar, and the JSON rules kubectl applies to it
(numbers, map keys). Pure functions of one node."""

from __future__ import annotations

import base64
import calendar
import math
import re
import struct
from decimal import Decimal
from typing import Any

from yaml.nodes import Node, ScalarNode

from ..excerpt import quote_value
from .limits import YAMLInputError

CORE = "tag:yaml.org,2002:"
PLAIN = "!plain"  # the tag given to untagged plain scalars, resolved go-yaml's way

_BOOLS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
#: resolve.go's ``resolveMap``: the words a plain scalar resolves by, whatever its first character.
_RESOLVED = {**_BOOLS, **dict.fromkeys(_NULLS), **_SPECIAL_FLOATS}
#: resolve.go's hint for an int, float or timestamp: a plain scalar starting with a sign or digit.
_NUMBER_START = frozenset("+-0123456789")
_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
#: Go's ParseFloat of a scalar that starts with "." (go-yaml tries it with no pattern first):
#: underscores are allowed between digits (strconv's underscoreOK), as in ``.5_0``.
_DOT_FLOAT = re.compile(r"^\.[0-9]+(_[0-9]+)*([eE][-+]?[0-9]+(_[0-9]+)*)?$")
#: Go's integer syntax with base 0: a sign, then hex, octal (``0o17`` or ``017``), binary or decimal digits.
_GO_INT = re.compile(r"^(?P<sign>[-+]?)(?:0[xX](?P<x>[0-9a-fA-F]+)|0[oO]?(?P<o>[0-7]+)|0[bB](?P<b>[01]+)|(?P<d>[1-9][0-9]*|0))$")
_BASES = {"x": 16, "o": 8, "b": 2, "d": 10}
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
#: The scalar tags go-yaml v2 decodes (resolve.go, decode.go); any other tag is refused here.
_SCALAR_TAGS = frozenset(CORE + tag for tag in ("str", "timestamp", "binary", "null", "bool", "int", "float"))
#: Decimal digits of the largest uint64: a longer decimal is out of ParseUint's range.
_UINT64_DIGITS = 20
#: json.Marshal writes each byte of a Go string that is not UTF-8 as U+FFFD; Python's
#: surrogateescape decoding has turned each such byte into one of these surrogates.
_NOT_UTF8 = dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd")


def _go_int(text: str) -> int | None:
    """strconv.ParseInt/ParseUint with base 0 (``text`` has no underscores)."""
    match = _GO_INT.match(text)
    if not match:
        return None
    base, digits = next((base, digits) for base, digits in match.groupdict().items() if base in _BASES and digits)
    if base == "d" and len(digits) > _UINT64_DIGITS:
        return None  # out of range, and never handed to int() (CPython's 4300-digit limit for decimals)
    n = int(digits, _BASES[base])
    if match["sign"] == "-":
        n = -n
    return n if _INT64_MIN <= n <= _UINT64_MAX else None


def _go_float(plain: str, text: str) -> float | str:
    """strconv.ParseFloat of ``plain`` (``text`` without underscores): beyond float64 it fails with
    ErrRange, and go-yaml keeps ``text``, a string.

    So a 5,000-digit ``size`` reaches the server as a string (``must be of type integer``).
    """
    value = float(plain)
    return text if math.isinf(value) else value


def resolve_plain(text: str) -> Any:
    """The value go-yaml v2 gives an untagged plain scalar."""
    if text in _RESOLVED:
        return _RESOLVED[text]
    if text.startswith("."):
        return _go_float(text, text) if _DOT_FLOAT.match(text) else text  # Python's float() takes "5_0" too
    if text[0] in _NUMBER_START:
        plain = text.replace("_", "")
        n = _go_int(plain)
        if n is not None:
            return n
        if _YAML_FLOAT.match(plain):
            return _go_float(plain, text)
    return text


#: go-yaml v2's allowedTimestampFormats (resolve.go), as Go's time.Parse reads them: a four-digit
#: year, then month and day of one or two digits; then nothing, or a time (hours, minutes, seconds of
#: one or two digits, an optional fraction) after ``T``/``t`` with a zone (``Z`` or ``+hh:mm``), or
#: after a space with no zone.
_TIMESTAMP = re.compile(r"^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
                        r"(?:(?:[Tt](?P<h>[0-9]{1,2}):(?P<mi>[0-9]{1,2}):(?P<s>[0-9]{1,2})(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2}))"
                        r"|(?: (?P<h2>[0-9]{1,2}):(?P<mi2>[0-9]{1,2}):(?P<s2>[0-9]{1,2})(?:\.[0-9]+)?))?$")


def go_timestamp(text: str) -> bool:
    """Whether go-yaml v2's parseTimestamp accepts ``text`` (its formats, and time.Parse's ranges:
    a real day of the month, hours below 24, minutes and seconds below 60)."""
    m = _TIMESTAMP.match(text)
    if not m:
        return False
    year, month, day = int(m["y"]), int(m["mo"]), int(m["d"])
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return False
    hour, minute, second = (m["h"] or m["h2"]), (m["mi"] or m["mi2"]), (m["s"] or m["s2"])
    return hour is None or (int(hour) < 24 and int(minute) < 60 and int(second) < 60)


def _tagged_scalar(node: ScalarNode) -> Any:
    """A scalar with an explicit core tag (``!!str 1``, ``!!int "3"``...), as go-yaml decodes it.

    ``!!timestamp`` keeps the text of a timestamp (decoded into interface{}, go-yaml v2 gives the
    original text, decode.go); anything else under it is an error naming what it resolves to
    (resolve.go: ``cannot decode !!int `02` as a !!timestamp``)."""
    tag, text = node.tag[len(CORE):], node.value
    if tag == "str" or (tag == "timestamp" and go_timestamp(text)):
        return text
    if tag == "binary":
        return _binary(node)
    value = resolve_plain(text)
    if tag == "null" and value is None:
        return None
    if tag == "bool" and isinstance(value, bool):
        return value
    if tag == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tag == "float" and (isinstance(value, float) or type(value) is int and value <= _INT64_MAX):
        return float(value)  # go-yaml converts an int or int64, not a uint64 (resolve.go)
    raise node_error(node, f"cannot decode !!{_resolved_tag(value)} {quote_value(text)} as a !!{tag}")


def _binary(node: ScalarNode) -> str:
    """go-yaml's ``!!binary``: Go's base64 StdEncoding (padded; line breaks skipped) decoded to a Go
    string, which json.Marshal writes with each byte that is not UTF-8 as U+FFFD."""
    try:
        data = base64.b64decode(node.value.replace("\n", "").replace("\r", ""), validate=True)
    except ValueError:  # binascii.Error, or a character beyond ASCII
        raise node_error(node, "!!binary value contains invalid base64 data") from None
    return data.decode(errors="surrogateescape").translate(_NOT_UTF8)


def _resolved_tag(value: Any) -> str:
    """The tag go-yaml resolves a plain scalar to, for its "cannot decode" message."""
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float"}.get(type(value), "str")


def scalar(node: ScalarNode) -> Any:
    """The value go-yaml v2 decodes a scalar to, before kubectl's JSON step."""
    if node.tag == PLAIN:
        return resolve_plain(node.value)
    if node.tag in _SCALAR_TAGS:
        return _tagged_scalar(node)
    raise node_error(node, f"unknown tag {quote_value(node.tag)}: only the YAML core tags are allowed")


def node_error(node: Node, message: str) -> YAMLInputError:
    return YAMLInputError(message, node.start_mark.line + 1, node.start_mark.column + 1)


def json_number(value: Any, node: Node) -> Any:
    """The number as the API server reads it back from kubectl's JSON."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise node_error(node, f"unsupported value {quote_value(node.value)}: JSON has no NaN or infinity")
        if value.is_integer():
            # json.Marshal prints the shortest digits that read back as this float (2**60 is
            # 1152921504606847000), without a fraction; the server reads them as an int64 if they fit
            printed = int(Decimal(repr(value)))
            if _INT64_MIN <= printed <= _INT64_MAX:
                return printed
        return value
    if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:  # (a bool is 0 or 1)
        return float(value)
    return value


def key_string(value: Any, node: Node) -> str:
    """The map key as sigs.k8s.io/yaml's ``convertToJSONableObject`` writes it (yaml.go)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value > _INT64_MAX:
        raise node_error(node, f"unsupported map key {quote_value(node.value)}: an integer key must fit in int64")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float32_key(value)
    raise node_error(node, f"unsupported map key {quote_value(node.value)}: a key must be a string, number or boolean")


def _float32(value: float) -> float:
    """Go's ``float32(value)``: rounded to the nearest single, infinite beyond its range."""
    try:
        rounded: float = struct.unpack("<f", struct.pack("<f", value))[0]
        return rounded
    except OverflowError:
        return math.copysign(math.inf, value)


def _go_float32_key(value: float) -> str:
    """``strconv.FormatFloat(value, 'g', -1, 32)`` with ``.inf``/``-.inf``/``.nan`` for Go's words.

    The shortest digits that read back as the same float32; an exponent below -4 or from 6 on is
    written ``1e+06``/``5e-05`` (Go's %e, two exponent digits at least), otherwise plainly.
    """
    single = _float32(value)
    if math.isnan(single):
        return ".nan"
    if math.isinf(single):
        return {math.inf: ".inf", -math.inf: "-.inf"}[single]
    precision = 0  # a float32 reads back from 9 significant digits at most
    while _float32(float(f"{single:.{precision}e}")) != single:
        precision += 1
    mantissa, exponent = f"{single:.{precision}e}".split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits, exp = mantissa.replace("-", "").replace(".", ""), int(exponent)
    if exp < -4 or exp >= 6:
        fraction = "." + digits[1:] if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{exp:+03d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    if exp + 1 >= len(digits):
        return sign + digits + "0" * (exp + 1 - len(digits))
    return f"{sign}{digits[:exp + 1]}.{digits[exp + 1:]}"
