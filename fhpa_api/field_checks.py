"""The result types of validation and the small typed readers every rule module uses.

Validation runs on the raw JSON-like object (not the pydantic model) so that it can report every
problem with its field path, including wrong types, and never raises on any input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from fhpa_api.limits import cut, shorten
from fhpa_api.quantity import QuantityError, parse_quantity

INT32_MAX = 2**31 - 1
MAX_PATH_CHARS = 200
"""A reported field path is cut to this (a map key in a path is user text)."""
MAX_MESSAGE_CHARS = 400
"""A reported message is cut to this; the values a message quotes are shortened before that."""
_T = TypeVar("_T")


@dataclass(frozen=True)
class FieldError:
    """One problem: the field's path (``spec.rules[1].schedule``) and what is wrong / what is allowed."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class ValidationResult:
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


class Report:
    """Collects errors and warnings while the rule functions walk an object."""

    def __init__(self) -> None:
        self.result = ValidationResult()

    def error(self, path: str, message: str) -> None:
        """Record an error; the path and message are cut to a bounded length (a path can carry a map key
        the user wrote, a message a value): no denial echoes megabytes back."""
        self.result.errors.append(FieldError(cut(path, MAX_PATH_CHARS), cut(message, MAX_MESSAGE_CHARS)))

    def warn(self, path: str, message: str) -> None:
        self.result.warnings.append(f"{cut(path, MAX_PATH_CHARS)}: {cut(message, MAX_MESSAGE_CHARS)}")

    @property
    def error_count(self) -> int:
        return len(self.result.errors)


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def at(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def present(obj: dict[str, Any], key: str) -> bool:
    """A key set to null counts as absent, as the API server's decoder treats it."""
    return obj.get(key) is not None


def mapping(
    obj: dict[str, Any], key: str, path: str, report: Report, required: bool = False
) -> dict[str, Any] | None:
    return _typed(obj, key, path, report, dict, "an object", required)


def array(
    obj: dict[str, Any],
    key: str,
    path: str,
    report: Report,
    required: bool = False,
    max_items: int | None = None,
) -> list[Any] | None:
    """Read a list; one longer than ``max_items`` is reported and returned as None (not checked item
    by item, which is the work the limit is there to bound)."""
    items = _typed(obj, key, path, report, list, "a list", required)
    if items is not None and max_items is not None and len(items) > max_items:
        report.error(join(path, key), f"has {len(items)} items; at most {max_items} are allowed")
        return None
    return items


def limited_mapping(
    obj: dict[str, Any], key: str, path: str, report: Report, max_properties: int
) -> dict[str, Any] | None:
    """Read an object (a map such as matchLabels) of at most ``max_properties`` entries."""
    value = mapping(obj, key, path, report)
    if value is not None and len(value) > max_properties:
        report.error(join(path, key), f"has {len(value)} entries; at most {max_properties} are allowed")
        return None
    return value


def _typed(
    obj: dict[str, Any], key: str, path: str, report: Report, kind: type[_T], noun: str, required: bool
) -> _T | None:
    """Read a field that must be of one JSON type; ``noun`` names that type in the messages."""
    value = obj.get(key)
    where = join(path, key)
    if value is None:
        if required:
            report.error(where, f"is required ({noun})")
        return None
    if not isinstance(value, kind):
        report.error(where, f"must be {noun}, not {_type_name(value)}")
        return None
    return value


def string(
    obj: dict[str, Any],
    key: str,
    path: str,
    report: Report,
    required: bool = False,
    max_length: int | None = None,
) -> str | None:
    """Read a string; one longer than ``max_length`` is reported (with its length, not its text) and
    returned as None, so that no later check (a pattern, a parser) runs on it."""
    value = obj.get(key)
    where = join(path, key)
    if value is None or value == "":
        if required:
            report.error(where, "is required (a non-empty string)")
        return None if value is None else ""
    if not isinstance(value, str):
        report.error(where, f"must be a string, not {_type_name(value)}")
        return None
    if max_length is not None and len(value) > max_length:
        report.error(where, f"{shorten(value, 32)} is too long: at most {max_length} characters")
        return None
    return value


def boolean(obj: dict[str, Any], key: str, path: str, report: Report) -> bool | None:
    return _typed(obj, key, path, report, bool, "true or false", required=False)


def integer(
    obj: dict[str, Any],
    key: str,
    path: str,
    report: Report,
    *,
    required: bool = False,
    minimum: int | None = None,
    maximum: int | None = None,
    hint: str = "",
) -> int | None:
    """Read an int32 and check its bounds; the message states the allowed range and the hint (why)."""
    value = obj.get(key)
    where = join(path, key)
    if value is None:
        if required:
            report.error(where, f"is required (an integer{_range_text(minimum, maximum)}){hint}")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            report.error(where, f"must be an integer{_range_text(minimum, maximum)}, not {_type_name(value)}")
            return None
    low = -INT32_MAX - 1 if minimum is None else minimum
    high = INT32_MAX if maximum is None else maximum
    if value > INT32_MAX:  # the API server's own limit for the field: say that one, not the minimum
        report.error(where, f"{value} is out of range: an int32 field holds at most {INT32_MAX}")
        return None
    if not low <= value <= high:
        report.error(where, f"{value} is out of range: must be an integer{_range_text(low, high)}{hint}")
        return None
    return value


def _range_text(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None and maximum != INT32_MAX:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def quantity(obj: dict[str, Any], key: str, path: str, report: Report) -> Decimal | None:
    """Read a quantity: a string such as "500m" or "1Gi", or an integer (the CRD's int-or-string)."""
    value = obj.get(key)
    if value is None:
        return None
    where = join(path, key)
    if isinstance(value, float):
        report.error(
            where, f'{shorten(value)}: write a fractional quantity as a string, e.g. "500m" or "0.5"'
        )
        return None
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        report.error(where, str(exc))
        return None


def positive_quantity(obj: dict[str, Any], key: str, path: str, report: Report) -> bool:
    """Check a quantity that must be > 0 (metric targets); return whether the field is set at all."""
    number = quantity(obj, key, path, report)
    if number is not None and number <= 0:
        report.error(
            join(path, key), f"{shorten(obj[key])} must be a quantity greater than zero (e.g. 500m, 2, 1Gi)"
        )
    return obj.get(key) is not None


def one_of(
    obj: dict[str, Any], key: str, path: str, report: Report, allowed: tuple[str, ...], required: bool = False
) -> str | None:
    """A string enum; the message lists what is allowed."""
    value = obj.get(key)
    where = join(path, key)
    if value is None:
        if required:
            report.error(where, f"is required: use one of {', '.join(allowed)}")
        return None
    if not isinstance(value, str) or value not in allowed:
        shown = shorten(value) if isinstance(value, str) else type_name(value)
        report.error(where, f"{shown} is not supported: use one of {', '.join(allowed)}")
        return None
    return value


def each_mapping(
    items: list[Any], path: str, report: Report, check: Callable[[dict[str, Any], str], None]
) -> None:
    """Run ``check`` on every element of a list of objects, reporting non-objects."""
    for index, item in enumerate(items):
        where = at(path, index)
        if not isinstance(item, dict):
            report.error(where, f"must be an object, not {_type_name(item)}")
            continue
        check(item, where)


def type_name(value: Any) -> str:
    return _type_name(value)
