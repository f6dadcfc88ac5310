"""divide() and greedy_fill(): the arithmetic every policy shares (DESIGN §3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.planning.divide import divide, greedy_fill

NAMES = st.lists(st.sampled_from([f"c{i}" for i in range(8)]), min_size=1, max_size=8, unique=True)


def test_floor_shares_then_remainder_by_weight_descending() -> None:
    # 10 * 1/6 = 1.67, 10 * 2/6 = 3.33, 10 * 3/6 = 5: floors 1/3/5, the spare one to the heaviest
    assert divide(10, {"member1": 1, "member2": 2, "member3": 3}) == {
        "member1": 1,
        "member2": 3,
        "member3": 6,
    }


def test_remainder_ties_go_by_name() -> None:
    assert divide(2, {"b": 1, "a": 1, "c": 1}) == {"a": 1, "b": 1, "c": 0}


def test_all_zero_weights_mean_equal_weights() -> None:
    assert divide(5, {"x": 0, "y": 0}) == {"x": 3, "y": 2}


def test_zero_weight_gets_nothing_when_others_weigh() -> None:
    assert divide(7, {"x": 0, "y": 3}) == {"x": 0, "y": 7}


def test_dynamic_weights_of_the_seed() -> None:
    assert divide(24, {"member1": 1, "member2": 5, "member3": 2}) == {
        "member1": 3,
        "member2": 15,
        "member3": 6,
    }
    assert divide(8, {"member1": 1, "member2": 5, "member3": 2}) == {"member1": 1, "member2": 5, "member3": 2}


def test_negative_total_is_refused() -> None:
    with pytest.raises(ValueError, match="total must be >= 0"):
        divide(-1, {"a": 1})


@settings(max_examples=300)
@given(total=st.integers(0, 500), names=NAMES, data=st.data())
def test_divide_places_everything_and_ignores_order(
    total: int, names: list[str], data: st.DataObject
) -> None:
    weights = {n: data.draw(st.integers(0, 20)) for n in names}
    shares = divide(total, weights)
    assert sum(shares.values()) == total
    assert all(s >= 0 for s in shares.values())
    assert divide(total, dict(reversed(list(weights.items())))) == shares
    whole = sum(weights.values())
    if whole:  # the remainder goes by weight, not by fraction: within one
        for n, w in weights.items():
            assert abs(shares[n] - total * w / whole) <= 1


def test_greedy_fill_up_to_capacity_rest_to_first() -> None:
    assert greedy_fill(24, ["m1", "m2", "m3"], {"m1": 8, "m2": 2, "m3": 2}) == {"m1": 20, "m2": 2, "m3": 2}
    assert greedy_fill(8, ["m1", "m2", "m3"], {"m1": 8, "m2": 2, "m3": 2}) == {"m1": 8, "m2": 0, "m3": 0}


def test_greedy_fill_unlimited_capacity_takes_all() -> None:
    assert greedy_fill(9, ["a", "b"], {"a": None, "b": 3}) == {"a": 9, "b": 0}


@settings(max_examples=300)
@given(total=st.integers(0, 500), names=NAMES, data=st.data())
def test_greedy_fill_places_everything(total: int, names: list[str], data: st.DataObject) -> None:
    capacity = {n: data.draw(st.none() | st.integers(0, 50)) for n in names}
    shares = greedy_fill(total, names, capacity)
    assert sum(shares.values()) == total
    for n in names[1:]:  # only the first may exceed its capacity
        cap = capacity[n]
        assert cap is None or shares[n] <= cap
