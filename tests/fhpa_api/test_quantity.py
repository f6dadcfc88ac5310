"""Kubernetes quantities parse to their exact values; anything else is refused with QuantityError."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fhpa_api.limits import QUANTITY_MAX_CHARS
from fhpa_api.quantity import _PATTERN, QuantityError, is_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1n", Decimal("0.000000001")),
        ("3u", Decimal("0.000003")),
        ("500m", Decimal("0.5")),
        ("2", Decimal(2)),
        ("2k", Decimal(2000)),
        ("2M", Decimal(2 * 10**6)),
        ("2G", Decimal(2 * 10**9)),
        ("2T", Decimal(2 * 10**12)),
        ("2P", Decimal(2 * 10**15)),
        ("2E", Decimal(2 * 10**18)),
        ("1Ki", Decimal(1024)),
        ("1Mi", Decimal(1024**2)),
        ("1Gi", Decimal(1024**3)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("1.5Gi", Decimal(1536 * 1024**2)),
        ("0.25", Decimal("0.25")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
    ],
)
def test_suffixes(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("2.5e-3", Decimal("0.0025")),
        ("4e+2", Decimal(400)),
        ("1e0", Decimal(1)),
    ],
)
def test_exponents(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+1", Decimal(1)),
        ("-1", Decimal(-1)),
        ("-500m", Decimal("-0.5")),
        ("-1Ki", Decimal(-1024)),
        ("+.5", Decimal("0.5")),
    ],
)
def test_signs(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


def test_numbers_are_quantities_too() -> None:
    assert parse_quantity(3) == Decimal(3)
    assert parse_quantity(0.5) == Decimal("0.5")
    assert parse_quantity(-2) == Decimal(-2)


def test_comparisons_across_forms() -> None:
    assert parse_quantity("500m") < parse_quantity(1) < parse_quantity("1Gi")
    assert parse_quantity("1k") < parse_quantity("1Ki")  # 1000 < 1024
    assert parse_quantity("1000m") == parse_quantity(1) == parse_quantity("1e0")
    assert parse_quantity("1E") > parse_quantity("1P")  # E alone is exa, not an exponent
    assert parse_quantity("1024Mi") == parse_quantity("1Gi")


@pytest.mark.parametrize(
    "junk",
    [
        "",
        " ",
        "abc",
        "1 ",
        " 1",
        "1\n",
        "\t500m",
        "1 Gi",
        "1gi",
        "1K",  # decimal kilo is lower-case k
        "1KiB",
        "1e",
        "1e3m",
        "1Ki3",
        "--1",
        "1.2.3",
        ".",
        "m",
        "0x10",
        "1_000",
        "١٢",  # Arabic-Indic digits: \d would match them
        "NaN",
        "Infinity",
    ],
)
def test_junk_is_refused(junk: str) -> None:
    with pytest.raises(QuantityError, match="not a quantity"):
        parse_quantity(junk)
    assert not is_quantity(junk)


@pytest.mark.parametrize(
    "value", [True, False, None, [1], {"a": 1}, float("nan"), float("inf"), -float("inf")]
)
def test_non_numbers_are_refused(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]
    assert not is_quantity(value)


@pytest.mark.parametrize("text", ["1e99999999", "1e-99999999", "1e" + "9" * 40])
def test_out_of_range_exponent_is_a_quantity_error(text: str) -> None:
    with pytest.raises(QuantityError, match="out of range"):
        parse_quantity(text)


def test_a_quantity_longer_than_the_limit_is_refused_with_its_length_not_echoed() -> None:
    text = "1" * 5000 + "x"
    with pytest.raises(
        QuantityError, match=f"5001 characters long; a quantity has at most {QUANTITY_MAX_CHARS}"
    ):
        parse_quantity(text)
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert len(str(caught.value)) < 200
    assert parse_quantity("1" * QUANTITY_MAX_CHARS) == Decimal("1" * QUANTITY_MAX_CHARS)


ADVERSARIAL = [
    "1" * 100_000 + "x",
    "1." + "1" * 100_000 + "x",
    "." + "1" * 100_000 + "Kx",
    "+" + "9" * 100_000 + "e",
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=["digits", "fraction", "dot", "exponent"])
def test_a_100kb_adversarial_quantity_is_refused_in_well_under_a_second(text: str) -> None:
    """H2: the old pattern took minutes on a 100 KB digit run (quadratic backtracking); the length cap
    refuses it at once, and the pattern itself is linear even without the cap."""
    started = time.thread_time()  # CPU time: a loaded machine cannot make it fail
    with pytest.raises(QuantityError):
        parse_quantity(text)
    assert _PATTERN.fullmatch(text) is None
    assert time.thread_time() - started < 1.0


def test_is_quantity_accepts_good_values() -> None:
    assert is_quantity("500m") and is_quantity(2) and is_quantity("1Gi") and is_quantity(1.5)


def test_large_values_are_exact() -> None:
    big = "123456789012345678901234567890123"
    assert parse_quantity(big) == Decimal(big)
    assert parse_quantity(big + "Ei") == Decimal(int(big) * 2**60)
    assert parse_quantity(big + "e5") == Decimal(int(big) * 10**5)


@given(st.integers())
def test_int_and_its_text_parse_equal(n: int) -> None:
    assert parse_quantity(n) == parse_quantity(str(n)) == Decimal(n)


_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


@given(st.integers(min_value=-(10**12), max_value=10**12), st.sampled_from(sorted(_DECIMAL_SUFFIXES)))
def test_decimal_suffix_round_trip(n: int, suffix: str) -> None:
    """n<suffix> equals n x 10^power, and that value written back with the same suffix parses the same."""
    power = _DECIMAL_SUFFIXES[suffix]
    value = parse_quantity(f"{n}{suffix}")
    assert value == Decimal(n).scaleb(power)
    assert value == parse_quantity(f"{n}e{power}")
    back = value.scaleb(-power)
    assert back == n
    assert parse_quantity(f"{int(back)}{suffix}") == value


@given(st.integers(min_value=0, max_value=2**40), st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]))
def test_binary_suffix_is_a_power_of_1024(n: int, suffix: str) -> None:
    power = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].index(suffix) + 1
    assert parse_quantity(f"{n}{suffix}") == Decimal(n * 1024**power)
