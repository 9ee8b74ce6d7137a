"""Kubernetes' CEL ``quantity`` library, for the validator's rules: ``quantity()``, ``isQuantity()``
and the Quantity methods, as k8s.io/apiserver/pkg/cel/library/quantity.go declares them (kubernetes
@898b9f80, lines 145-180: overloads; 196-356: bindings). The API server offers it to CRD rules
(v1.29+), and the shipped CRD's rules on ``spec.resources`` call it, so without it those rules could
not be judged here as the server judges them.

The value is apimachinery's ``resource.ParseQuantity`` of the text (schemas/quantities.py), compared
and added exactly (``inf.Dec`` there, ``Decimal`` here). Imported only when a rule is evaluated.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from .quantities import strict_quantity

#: resource.ErrFormatWrong (apimachinery resource/quantity.go): the words of a text that is no quantity
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_INT64 = (-(2**63), 2**63 - 1)


class Quantity:
    """A parsed quantity: equal to another of the same value (``200M == 0.2G``)."""

    __slots__ = ("value",)

    def __init__(self, value: Decimal) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


def _no_overload() -> TypeError:
    """cel-go's ``no such overload`` for arguments of the wrong type (types.MaybeNoSuchOverloadErr);
    celpy words a TypeError raised by a function so, whatever it says."""
    return TypeError("no such overload")


def _quantity_arg(*args: Any) -> tuple[Quantity, ...]:
    if not all(isinstance(a, Quantity) for a in args):
        raise _no_overload()
    return args


def to_quantity(text: Any) -> Quantity | CELEvalError:
    """``quantity(<string>)``: ParseQuantity's error for a text it refuses (stringToQuantity), returned
    as a value as cel-go's types.WrapErr does (celpy would word a raised one as its own)."""
    if not isinstance(text, str):
        raise _no_overload()
    value = strict_quantity(text)
    return CELEvalError(FORMAT_WRONG) if value is None else Quantity(value)


def is_quantity(text: Any) -> celtypes.BoolType:
    """``isQuantity(<string>)``: true exactly when quantity() would not fail."""
    if not isinstance(text, str):
        raise _no_overload()
    return celtypes.BoolType(strict_quantity(text) is not None)


def _compare(a: Any, b: Any) -> int:
    x, y = _quantity_arg(a, b)
    return (x.value > y.value) - (x.value < y.value)


def compare_to(a: Any, b: Any) -> celtypes.IntType:
    return celtypes.IntType(_compare(a, b))


def is_greater_than(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_compare(a, b) == 1)


def is_less_than(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_compare(a, b) == -1)


def sign(a: Any) -> celtypes.IntType:
    (q,) = _quantity_arg(a)
    return celtypes.IntType((q.value > 0) - (q.value < 0))


def is_integer(a: Any) -> celtypes.BoolType:
    """Quantity.AsInt64 succeeds: a whole number within int64."""
    (q,) = _quantity_arg(a)
    return celtypes.BoolType(q.value == q.value.to_integral_value() and _INT64[0] <= q.value <= _INT64[1])


def as_integer(a: Any) -> celtypes.IntType | CELEvalError:
    if not is_integer(a):
        return CELEvalError("cannot convert value to integer")
    return celtypes.IntType(int(a.value))


def as_approximate_float(a: Any) -> celtypes.DoubleType:
    (q,) = _quantity_arg(a)
    return celtypes.DoubleType(float(q.value))


def _operand(a: Any, b: Any) -> tuple[Decimal, Decimal]:
    """A Quantity and a Quantity or an int (``quantity_add_int``: NewQuantity(b, DecimalExponent))."""
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.value, b.value
    if isinstance(a, Quantity) and isinstance(b, int) and not isinstance(b, (bool, celtypes.BoolType)):
        return a.value, Decimal(int(b))
    raise _no_overload()


def add(a: Any, b: Any) -> Quantity:
    x, y = _operand(a, b)
    return Quantity(x + y)


def sub(a: Any, b: Any) -> Quantity:
    x, y = _operand(a, b)
    return Quantity(x - y)


#: the library's functions by their CEL names, for celpy's ``Environment.program(functions=...)``
FUNCTIONS = {"quantity": to_quantity, "isQuantity": is_quantity, "compareTo": compare_to,
             "isGreaterThan": is_greater_than, "isLessThan": is_less_than, "sign": sign,
             "isInteger": is_integer, "asInteger": as_integer, "asApproximateFloat": as_approximate_float,
             "add": add, "sub": sub}
