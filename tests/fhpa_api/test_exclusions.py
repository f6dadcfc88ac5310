"""Exclusion dates (fhpa_api.exclusions): the grammar, local dates across DST, leap days, calendars."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fhpa_api.exclusions import (
    ExclusionError,
    Exclusions,
    excluding,
    parse_calendar,
    parse_entry,
)
from fhpa_api.schedule import parse_schedule

BERLIN = ZoneInfo("Europe/Berlin")
PARIS = ZoneInfo("Europe/Paris")


def local(tz: ZoneInfo, *parts: int) -> datetime:
    return datetime(*parts, tzinfo=tz)


def test_a_date_and_a_range_parse_and_bad_entries_say_what_is_allowed() -> None:
    assert (parse_entry("2026-12-25").first, parse_entry("2026-12-25").last) == (date(2026, 12, 25),) * 2
    r = parse_entry(" 2026-12-24..2026-12-26 ")
    assert (r.first, r.last) == (date(2026, 12, 24), date(2026, 12, 26))
    for bad, says in [
        ("2026-12-26..2026-12-24", "ends before it starts"),
        ("2027-02-29", "not a calendar date"),
        ("25/12/2026", "YYYY-MM-DD"),
        ("2026-12-24..2026-12-2", "YYYY-MM-DD"),
        ("x" * 10_000, "characters long"),
    ]:
        with pytest.raises(ExclusionError, match=says):
            parse_entry(bad)


def test_a_calendar_ignores_comments_and_blank_lines_and_names_each_bad_line() -> None:
    ranges, problems = parse_calendar("# 2026\n2026-12-25  # Christmas\n\n2026-13-01\n2026-12-31\n", "cal")
    assert [r.first for r in ranges] == [date(2026, 12, 25), date(2026, 12, 31)]
    assert problems == [
        "line 4: '2026-13-01': 2026-13-01 is not a calendar date (YYYY-MM-DD, e.g. 2028-02-29)"
    ]


def test_overlapping_and_adjacent_ranges_merge_and_lookup_finds_them() -> None:
    ex = Exclusions(
        [parse_entry("2026-12-24..2026-12-26"), parse_entry("2026-12-27"), parse_entry("2026-12-25")]
    )
    assert [(r.first, r.last) for r in ex.ranges] == [(date(2026, 12, 24), date(2026, 12, 27))]
    assert ex.covering(date(2026, 12, 27)) is not None
    assert ex.covering(date(2026, 12, 23)) is None and ex.covering(date(2026, 12, 28)) is None


def test_a_date_is_the_local_day_of_the_rule_zone_not_the_utc_day() -> None:
    fires = excluding(parse_schedule("30 0 * * *"), ["2026-12-25"])
    # 00:30 in Paris on the 25th is 23:30 UTC on the 24th: excluded; the next fire is the 26th
    nxt = fires.next_after(local(PARIS, 2026, 12, 24, 12), PARIS)
    assert nxt == local(PARIS, 2026, 12, 26, 0, 30)
    assert fires.next_after(datetime(2026, 12, 24, 12, tzinfo=UTC), ZoneInfo("UTC")).day == 26


def test_a_spring_forward_day_excluded_skips_its_shifted_fire_and_not_the_next_day() -> None:
    fires = excluding(parse_schedule("30 2 * * *"), ["2026-03-29"])  # 02:30 does not exist that day
    unexcluded = parse_schedule("30 2 * * *").next_after(local(BERLIN, 2026, 3, 28, 12), BERLIN)
    assert unexcluded == local(BERLIN, 2026, 3, 29, 3, 0)  # the transition instant, still on the 29th
    assert fires.next_after(local(BERLIN, 2026, 3, 28, 12), BERLIN) == local(BERLIN, 2026, 3, 30, 2, 30)
    assert fires.latest_at_or_before(local(BERLIN, 2026, 3, 30, 1), BERLIN) == local(
        BERLIN, 2026, 3, 28, 2, 30
    )


def test_a_fall_back_day_excluded_skips_its_repeated_hour() -> None:
    fires = excluding(parse_schedule("30 2 * * *"), ["2026-10-25"])
    after = fires.next_after(local(BERLIN, 2026, 10, 24, 12), BERLIN)
    assert after == local(BERLIN, 2026, 10, 26, 2, 30)
    assert (
        fires.count_fires_between(local(BERLIN, 2026, 10, 23, 12), local(BERLIN, 2026, 10, 27, 12), BERLIN)
        == 3
    )  # the 24th, 26th and 27th


def test_a_leap_day_is_excluded_by_its_date_only() -> None:
    fires = excluding(parse_schedule("0 9 29 2 *"), ["2028-02-29"])
    assert fires.next_after(datetime(2028, 1, 1, tzinfo=UTC), ZoneInfo("UTC")).year == 2032
    daily = excluding(parse_schedule("0 9 * * *"), ["2028-02-29"])
    assert daily.next_after(datetime(2028, 2, 28, 10, tzinfo=UTC), ZoneInfo("UTC")).date() == date(2028, 3, 1)


def test_a_long_range_is_jumped_over_whole() -> None:
    fires = excluding(parse_schedule("* * * * *"), ["2026-01-01..2026-12-31"])
    assert fires.next_after(datetime(2025, 12, 31, 23, 59, tzinfo=UTC), ZoneInfo("UTC")) == datetime(
        2027, 1, 1, tzinfo=UTC
    )
    skipped = fires.skipped_between(
        datetime(2025, 12, 31, 23, 58, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC), ZoneInfo("UTC")
    )
    assert [(f, r.first) for f, r in skipped] == [(datetime(2026, 1, 1, tzinfo=UTC), date(2026, 1, 1))]


def test_bad_entries_are_all_named_and_no_entries_leave_the_schedule_as_it_is() -> None:
    schedule = parse_schedule("0 9 * * *")
    assert excluding(schedule, None) is schedule
    with pytest.raises(ExclusionError) as caught:
        excluding(schedule, ["nope", "2026-01-01"], "2026-02-30\n", "calendar hol/dates")
    assert "excludeDates[0]" in str(caught.value) and "calendar hol/dates: line 1" in str(caught.value)


@given(st.dates(min_value=date(2024, 1, 1), max_value=date(2030, 12, 31)), st.integers(0, 40))
def test_no_fire_ever_lands_on_an_excluded_local_day(first: date, length: int) -> None:
    last = date.fromordinal(first.toordinal() + length)
    fires = excluding(parse_schedule("15 1,13 * * *"), [f"{first}..{last}"])
    start = local(BERLIN, first.year, first.month, first.day).replace(day=1)
    nxt = fires.next_after(start, BERLIN)
    assert not first <= nxt.astimezone(BERLIN).date() <= last
    latest = fires.latest_at_or_before(local(BERLIN, last.year, last.month, last.day, 23), BERLIN)
    assert latest is not None and not first <= latest.astimezone(BERLIN).date() <= last
