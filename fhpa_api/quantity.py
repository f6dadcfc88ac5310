"""Kubernetes resource quantities ("500m", "1Gi", "2e3") parsed to exact decimals.

Quantities stay strings in the models so that an object round-trips byte for byte; comparisons and
arithmetic go through :func:`parse_quantity`.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, DecimalException, Overflow, localcontext

from fhpa_api.limits import QUANTITY_MAX_CHARS, shorten

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# [0-9], not \d: \d also matches other scripts' digits ("١٢"), which Kubernetes refuses.
# Each character has one way to match (no `[0-9]+\.?[0-9]*`, which splits a digit run in n ways and
# backtracks quadratically on a failed match), and fullmatch needs no `$` (which also accepts a final
# newline). The length is checked before the pattern runs at all.
_PATTERN = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)"
)
_MAX_EXPONENT_DIGITS = 6  # beyond this Decimal overflows (and int() refuses very long digit strings)


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Return the exact value of a quantity; raise QuantityError on anything else."""
    if isinstance(value, bool):
        raise QuantityError(f"{shorten(value)} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{shorten(value)} is not a quantity")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{shorten(value)} is not a quantity")
    if len(value) > QUANTITY_MAX_CHARS:
        raise QuantityError(
            f"{shorten(value)} is {len(value)} characters long; a quantity has at most {QUANTITY_MAX_CHARS}"
        )
    match = _PATTERN.fullmatch(value)
    if not match:
        raise QuantityError(
            f"{shorten(value)} is not a quantity "
            "(expected a number with an optional suffix such as 500m, 2, 1Gi, 1e3)"
        )
    number, exponent, suffix = match.groups()
    try:
        return _scale(Decimal(number), exponent, suffix or "")
    except DecimalException as exc:
        raise QuantityError(f"{shorten(value)} is out of range for a quantity") from exc


def _scale(base: Decimal, exponent: str | None, suffix: str) -> Decimal:
    """base x 10^exponent or base x suffix, exactly: the default 28-digit context would round."""
    with localcontext() as ctx:
        ctx.prec = len(base.as_tuple().digits) + 20  # the largest multiplier, 2**60, has 19 digits
        if exponent:
            if len(exponent.lstrip("eE+-")) > _MAX_EXPONENT_DIGITS:
                raise Overflow("exponent too long")
            return base.scaleb(int(exponent[1:]))
        if suffix in _BINARY:
            return base * _BINARY[suffix]
        return base * _DECIMAL[suffix]


def is_quantity(value: object) -> bool:
    try:
        parse_quantity(value)  # type: ignore[arg-type]
    except QuantityError:
        return False
    return True
