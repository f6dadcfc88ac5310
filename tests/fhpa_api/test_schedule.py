"""The cron parser: acceptance and refusal rules (issue #2), fire arithmetic and DST behaviour (DESIGN §5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from fhpa_api.schedule import ScheduleError, load_time_zone, parse_schedule

LA = ZoneInfo("America/Los_Angeles")
LONDON = ZoneInfo("Europe/London")
SYDNEY = ZoneInfo("Australia/Sydney")
SHANGHAI = ZoneInfo("Asia/Shanghai")
Z = ZoneInfo("UTC")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(
    tz: ZoneInfo, year: int, month: int, day: int, hour: int, minute: int = 0, fold: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=tz, fold=fold)


def fires(text: str, start: datetime, tz: ZoneInfo, n: int) -> list[datetime]:
    schedule = parse_schedule(text)
    out = []
    for _ in range(n):
        start = schedule.next_after(start, tz)
        out.append(start)
    return out


def as_utc(values: list[datetime]) -> list[datetime]:
    return [v.astimezone(UTC) for v in values]


# ----- acceptance -----


@pytest.mark.parametrize(
    "text",
    [
        "* * * * *",
        "3 * * * *",
        "*/15 * * * *",
        "0-30/10 8-18 * * 1-5",
        "5/15 * * * *",
        "0 0 1,15 * *",
        "30 8 * JAN-MAR MON-FRI",
        "30 8 * jan,jul sun",
        "0 0 * * 7",
        "0 0 * * 0-7",
        "0 0 * * 5-7",
        "0 0 29 2 *",
        "0 0 ? * MON",
        "  0   9  *  *  *  ",
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
        "@DAILY",
    ],
)
def test_accepts_standard_cron(text: str) -> None:
    parse_schedule(text)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("0 0 * * * *", "seconds or year"),
        ("0 0 0 * * * 2030", "seconds and year"),
        ("0 0 13 *", "expected 5"),
        ("CRON_TZ=Asia/Shanghai 0 8 * * *", "timeZone"),
        ("TZ=UTC 0 8 * * *", "timeZone"),
        ("cron_tz=UTC 0 8 * * *", "timeZone"),
        ("@every 1h", "@every"),
        ("@reboot", "@reboot"),
        ("@5minutes", "unknown schedule macro"),
        ("@daily extra", "unknown schedule macro"),
        ("60 * * * *", "minute value 60 is out of range 0-59"),
        ("0 24 * * *", "hour value 24 is out of range 0-23"),
        ("0 0 0 * *", "day-of-month value 0 is out of range 1-31"),
        ("0 0 32 * *", "day-of-month value 32"),
        ("0 0 * 13 *", "month value 13"),
        ("0 0 * * 8", "day-of-week value 8 is out of range 0-7 (0 and 7 are Sunday)"),
        ("*/0 * * * *", "step 0"),
        ("0 0/0 * * *", "step 0"),
        ("5-1 * * * *", "reversed"),
        ("0 0 * * FRI-MON", "reversed"),
        ("0 0 L * *", "'L', 'W', '#' and 'H'"),
        ("0 0 * * 1#2", "not standard cron"),
        ("H * * * *", "not standard cron"),
        ("0 0 1,,2 * *", "empty list item"),
        ("0 0 * * FOO", "invalid value 'FOO'"),
        ("0 0 * XYZ *", "JAN-DEC"),
        ("*/x * * * *", "positive whole number"),
        ("*/61 * * * *", "larger than the field's range"),
        ("? * * * *", "'?' is only allowed"),
        ("0 0 30 2 *", "never fires"),
        ("0 0 31 4,6,9,11 *", "never fires"),
        ("1 -2 * * *", "invalid value"),
    ],
)
def test_refuses_with_a_reason(text: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse_schedule(text)
    assert fragment in str(info.value)


def test_refusal_of_prefix_points_to_time_zone_field() -> None:
    with pytest.raises(ScheduleError, match="rule's timeZone field"):
        parse_schedule("CRON_TZ=America/New_York 0 8 * * *")


def test_schedule_error_is_a_value_error() -> None:
    assert issubclass(ScheduleError, ValueError)


def test_non_string_is_refused() -> None:
    with pytest.raises(ScheduleError):
        parse_schedule(5)  # type: ignore[arg-type]


# ----- seed examples -----


def test_seed_example_applied_after_the_minute_waits_an_hour() -> None:
    schedule = parse_schedule("3 * * * *")
    first = schedule.next_after(utc(2026, 5, 1, 9, 4), Z)
    assert first == utc(2026, 5, 1, 10, 3)
    assert schedule.next_after(first, Z) == utc(2026, 5, 1, 11, 3)


def test_seed_example_applied_before_the_minute_fires_this_hour() -> None:
    schedule = parse_schedule("3 * * * *")
    first = schedule.next_after(utc(2026, 5, 1, 9, 1), Z)
    assert first == utc(2026, 5, 1, 9, 3)
    assert schedule.next_after(first, Z) == utc(2026, 5, 1, 10, 3)


def test_strictly_after_a_fire_time() -> None:
    schedule = parse_schedule("3 * * * *")
    assert schedule.next_after(utc(2026, 5, 1, 9, 3), Z) == utc(2026, 5, 1, 10, 3)
    assert schedule.next_after(utc(2026, 5, 1, 9, 2, 59), Z) == utc(2026, 5, 1, 9, 3)


def test_seed_time_zone_story_two_zones_fire_at_their_own_morning() -> None:
    schedule = parse_schedule("30 07 * * *")
    start = utc(2026, 6, 1, 0, 0)
    # 00:00 UTC is already 08:00 in Shanghai: its next 07:30 is the next morning.
    assert schedule.next_after(start, SHANGHAI) == local(SHANGHAI, 2026, 6, 2, 7, 30)
    assert schedule.next_after(start, SHANGHAI).astimezone(UTC) == utc(2026, 6, 1, 23, 30)
    assert schedule.next_after(start, LA).astimezone(UTC) == utc(2026, 6, 1, 14, 30)


def test_result_is_aware_and_in_the_zone() -> None:
    result = parse_schedule("0 8 * * *").next_after(utc(2026, 1, 1), SHANGHAI)
    assert result.tzinfo is SHANGHAI
    assert result.utcoffset() == timedelta(hours=8)


def test_naive_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_schedule("* * * * *").next_after(datetime(2026, 1, 1), Z)


# ----- day-of-month / day-of-week -----


def test_day_of_month_and_day_of_week_are_ored_when_both_restricted() -> None:
    # 2026-03-01 is a Sunday. "1st of the month OR Monday".
    got = fires("0 0 1 * MON", utc(2026, 2, 27), Z, 4)
    assert got == [utc(2026, 3, 1), utc(2026, 3, 2), utc(2026, 3, 9), utc(2026, 3, 16)]


def test_star_day_of_month_means_only_weekday_counts() -> None:
    got = fires("0 0 * * MON", utc(2026, 2, 27), Z, 2)
    assert got == [utc(2026, 3, 2), utc(2026, 3, 9)]


def test_weekday_seven_is_sunday() -> None:
    assert fires("0 0 * * 7", utc(2026, 2, 27), Z, 1) == fires("0 0 * * 0", utc(2026, 2, 27), Z, 1)
    assert fires("0 0 * * 7", utc(2026, 2, 27), Z, 1) == [utc(2026, 3, 1)]


def test_leap_day_schedule() -> None:
    assert fires("0 0 29 2 *", utc(2026, 1, 1), Z, 2) == [utc(2028, 2, 29), utc(2032, 2, 29)]


# ----- DST: America/Los_Angeles (2026: spring 8 March 02:00 -> 03:00, fall 1 November 02:00 -> 01:00) -----


def test_la_spring_forward_skipped_time_fires_once_at_the_transition() -> None:
    got = fires("30 2 * * *", local(LA, 2026, 3, 7, 12, 0), LA, 3)
    assert got[0] == local(LA, 2026, 3, 8, 3, 0)
    assert got[0].astimezone(UTC) == utc(2026, 3, 8, 10, 0)
    assert got[1] == local(LA, 2026, 3, 9, 2, 30)
    assert got[1].astimezone(UTC) == utc(2026, 3, 9, 9, 30)


def test_la_several_skipped_times_and_the_transition_time_fire_once() -> None:
    got = as_utc(fires("0,15,30,45 2,3 * * *", local(LA, 2026, 3, 8, 1, 0), LA, 4))
    # 02:00..02:45 do not exist: together with 03:00 they fire once, at 03:00 PDT (10:00 UTC).
    assert got == [
        utc(2026, 3, 8, 10, 0),
        utc(2026, 3, 8, 10, 15),
        utc(2026, 3, 8, 10, 30),
        utc(2026, 3, 8, 10, 45),
    ]


def test_la_fall_back_repeated_time_fires_once_at_first_occurrence() -> None:
    got = fires("30 1 * * *", local(LA, 2026, 10, 31, 12, 0), LA, 2)
    assert got[0].astimezone(UTC) == utc(2026, 11, 1, 8, 30)  # 01:30 PDT
    assert got[1].astimezone(UTC) == utc(2026, 11, 2, 9, 30)  # next day, 01:30 PST


def test_la_fall_back_hourly_skips_the_second_pass_of_the_hour() -> None:
    got = as_utc(fires("0 * * * *", local(LA, 2026, 11, 1, 0, 30), LA, 3))
    # 01:00 PDT (08:00 UTC); 01:00 PST (09:00 UTC) is the repeat and does not fire; then 02:00 PST.
    assert got == [utc(2026, 11, 1, 8, 0), utc(2026, 11, 1, 10, 0), utc(2026, 11, 1, 11, 0)]


def test_la_asked_during_the_second_pass_waits_for_the_next_wall_time() -> None:
    second_pass = local(LA, 2026, 11, 1, 1, 10, fold=1)  # 01:10 PST, 09:10 UTC
    got = parse_schedule("20 1 * * *").next_after(second_pass, LA)
    assert got.astimezone(UTC) == utc(2026, 11, 2, 9, 20)
    every_quarter = parse_schedule("*/15 * * * *").next_after(second_pass, LA)
    assert every_quarter.astimezone(UTC) == utc(2026, 11, 1, 10, 0)  # 02:00 PST


def test_la_latest_at_or_before_during_second_pass_is_the_first_occurrence() -> None:
    second_pass = local(LA, 2026, 11, 1, 1, 10, fold=1)
    latest = parse_schedule("45 1 * * *").latest_at_or_before(second_pass, LA)
    assert latest is not None
    assert latest.astimezone(UTC) == utc(2026, 11, 1, 8, 45)  # 01:45 PDT, before 01:10 PST


# ----- Europe/London (2026: spring 29 March 01:00 -> 02:00, fall 25 October 02:00 -> 01:00) -----


def test_london_spring_forward() -> None:
    got = as_utc(fires("30 1 * * *", local(LONDON, 2026, 3, 28, 12), LONDON, 2))
    assert got == [utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]


def test_london_fall_back() -> None:
    got = as_utc(fires("30 1 * * *", local(LONDON, 2026, 10, 24, 12), LONDON, 2))
    assert got == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


# ----- Australia/Sydney (2026: fall back 5 April 03:00 -> 02:00, spring 4 October 02:00 -> 03:00) -----


def test_sydney_spring_forward_in_october() -> None:
    got = fires("15 2 * * *", local(SYDNEY, 2026, 10, 3, 12), SYDNEY, 2)
    assert got[0] == local(SYDNEY, 2026, 10, 4, 3, 0)
    assert got[0].astimezone(UTC) == utc(2026, 10, 3, 16, 0)
    assert got[1].astimezone(UTC) == utc(2026, 10, 4, 15, 15)


def test_sydney_fall_back_in_april() -> None:
    got = as_utc(fires("30 2 * * *", local(SYDNEY, 2026, 4, 4, 12), SYDNEY, 2))
    assert got == [utc(2026, 4, 4, 15, 30), utc(2026, 4, 5, 16, 30)]  # 02:30 AEDT, then 02:30 AEST


# ----- Asia/Shanghai (no DST) -----


def test_shanghai_has_no_surprises() -> None:
    got = as_utc(fires("0 8 * * *", utc(2026, 2, 28, 23), SHANGHAI, 3))
    assert got == [utc(2026, 3, 1, 0), utc(2026, 3, 2, 0), utc(2026, 3, 3, 0)]
    schedule = parse_schedule("0 8 * * *")
    assert schedule.shortest_interval_seconds(SHANGHAI) == 86400


# ----- latest at or before -----


def test_latest_at_or_before_includes_the_instant() -> None:
    schedule = parse_schedule("3 * * * *")
    assert schedule.latest_at_or_before(utc(2026, 5, 1, 9, 3), Z) == utc(2026, 5, 1, 9, 3)
    assert schedule.latest_at_or_before(utc(2026, 5, 1, 9, 2), Z) == utc(2026, 5, 1, 8, 3)


def test_latest_at_or_before_on_a_spring_forward_gap() -> None:
    schedule = parse_schedule("30 2 * * *")
    assert schedule.latest_at_or_before(utc(2026, 3, 8, 10, 0), LA) == local(LA, 2026, 3, 8, 3, 0)
    latest = schedule.latest_at_or_before(utc(2026, 3, 8, 9, 59), LA)
    assert latest is not None
    assert latest.astimezone(UTC) == utc(2026, 3, 7, 10, 30)


# ----- shortest interval -----


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("* * * * *", 60),
        ("*/15 * * * *", 900),
        ("0,50 * * * *", 600),
        ("3 * * * *", 3600),
        ("0 8,20 * * *", 43200),
        ("0 23 * * *", 86400),
        ("0 1,23 * * *", 7200),
        ("0 0 * * 1,3", 2 * 86400),
        ("@weekly", 7 * 86400),
        ("@monthly", 28 * 86400),
        ("@yearly", 365 * 86400),
        ("0 0 29 2 *", (365 * 3 + 366) * 86400),
    ],
)
def test_shortest_interval_without_zone(text: str, seconds: int) -> None:
    assert parse_schedule(text).shortest_interval_seconds() == seconds


def test_shortest_interval_counts_dst() -> None:
    assert parse_schedule("0 1 * * *").shortest_interval_seconds(LA) == 23 * 3600
    assert parse_schedule("30 1,2 * * *").shortest_interval_seconds(LA) == 1800  # 01:30 PST -> 03:00 PDT
    assert parse_schedule("30 1,2 * * *").shortest_interval_seconds(SHANGHAI) == 3600
    assert parse_schedule("* * * * *").shortest_interval_seconds(LA) == 60


# ----- time zones -----


def test_load_time_zone() -> None:
    assert load_time_zone("Asia/Shanghai") == SHANGHAI
    assert load_time_zone("UTC").key == "UTC"


@pytest.mark.parametrize("name", ["", " ", "Mars/Olympus", "A/B", "../etc/passwd", "/etc/localtime", " UTC"])
def test_load_time_zone_refuses_unknown(name: str) -> None:
    with pytest.raises(ScheduleError, match=r"IANA|timeZone"):
        load_time_zone(name)


# ----- properties -----

FIELD_ITEMS = {
    "minute": st.sampled_from(["*", "0", "3", "*/5", "*/15", "10-20", "0,30", "5/20", "59"]),
    "hour": st.sampled_from(["*", "0", "1", "2", "1,2", "*/6", "8-18", "23", "1-3"]),
    "dom": st.sampled_from(["*", "1", "15", "1,15", "*/10", "28-31", "29", "31"]),
    "month": st.sampled_from(["*", "1", "3", "MAR-NOV", "*/2", "2", "10,11"]),
    "dow": st.sampled_from(["*", "0", "7", "MON-FRI", "6", "1,3,5", "SUN"]),
}
schedules = st.tuples(*FIELD_ITEMS.values()).map(" ".join)
zones = st.sampled_from([Z, LA, LONDON, SYDNEY, SHANGHAI, ZoneInfo("Australia/Lord_Howe")])
instants = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2030, 12, 31), timezones=st.just(UTC)
)


def _usable(text: str) -> bool:
    try:
        parse_schedule(text)
    except ScheduleError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(text=schedules, tz=zones, instant=instants)
def test_next_after_is_strictly_after_and_is_a_fire(text: str, tz: ZoneInfo, instant: datetime) -> None:
    if not _usable(text):
        return
    schedule = parse_schedule(text)
    nxt = schedule.next_after(instant, tz)
    assert nxt.astimezone(UTC) > instant
    # It is a fire: the latest fire at or before it is itself, and no fire lies between instant and it.
    assert schedule.latest_at_or_before(nxt, tz) == nxt
    # (in UTC: subtracting from a zoned datetime is wall-clock arithmetic, wrong across a DST change)
    before = schedule.latest_at_or_before(nxt.astimezone(UTC) - timedelta(seconds=1), tz)
    assert before is None or before.astimezone(UTC) <= instant


@settings(max_examples=200, deadline=None)
@given(text=schedules, tz=zones, instant=instants)
def test_latest_at_or_before_is_not_after(text: str, tz: ZoneInfo, instant: datetime) -> None:
    if not _usable(text):
        return
    schedule = parse_schedule(text)
    latest = schedule.latest_at_or_before(instant, tz)
    assert latest is not None
    assert latest.astimezone(UTC) <= instant
    assert schedule.next_after(latest, tz).astimezone(UTC) > instant


@settings(max_examples=200, deadline=None)
@given(text=schedules, instant=instants)
def test_agrees_with_croniter_in_utc(text: str, instant: datetime) -> None:
    """Without DST the fires are plain cron; croniter is the independent oracle."""
    if not _usable(text):
        return
    expected = croniter(text, instant.replace(tzinfo=None)).get_next(datetime)
    assert parse_schedule(text).next_after(instant, Z) == expected.replace(tzinfo=UTC)


@settings(max_examples=100, deadline=None)
@given(text=schedules, tz=zones, instant=instants)
def test_consecutive_fires_are_never_closer_than_the_shortest_interval(
    text: str, tz: ZoneInfo, instant: datetime
) -> None:
    if not _usable(text):
        return
    schedule = parse_schedule(text)
    shortest = schedule.shortest_interval_seconds(tz)
    first = schedule.next_after(instant, tz)
    second = schedule.next_after(first, tz)
    assert (second.astimezone(UTC) - first.astimezone(UTC)).total_seconds() >= shortest


def test_zoned_instants_give_the_same_answers_as_utc_ones() -> None:
    """Regression: arithmetic on zoned datetimes is wall-clock arithmetic; results must not depend on it."""
    schedule = parse_schedule("* 2 * 10,11 0")  # every minute of 02:xx on October/November Sundays
    moment = utc(2025, 10, 4, 14, 0)  # Sydney springs forward at 16:00 UTC
    for _ in range(12):
        zoned = moment.astimezone(SYDNEY)
        assert schedule.next_after(zoned, SYDNEY) == schedule.next_after(moment, SYDNEY)
        assert schedule.latest_at_or_before(zoned, SYDNEY) == schedule.latest_at_or_before(moment, SYDNEY)
        moment += timedelta(minutes=17)
    assert schedule.next_after(utc(2025, 10, 4, 15, 59), SYDNEY).astimezone(UTC) == utc(2025, 10, 4, 16, 0)


def test_the_shortest_interval_holds_in_years_whose_weekdays_meet_dst_differently() -> None:
    """Regression: the transitions scanned are those of one window of years, but a schedule restricted by
    both weekday and day of month meets a transition differently in other years. In Europe/London, 2031
    springs forward on Sunday 30 March, and ``0 0 */10 * 0`` fires at 00:00 that Sunday and again on
    Monday the 31st: 23 hours apart, where the window alone shows no gap under 24 hours."""
    london = ZoneInfo("Europe/London")
    schedule = parse_schedule("0 0 */10 * 0")
    first = schedule.next_after(datetime(2031, 3, 29, 12, tzinfo=UTC), london)
    second = schedule.next_after(first, london)
    gap = (second.astimezone(UTC) - first.astimezone(UTC)).total_seconds()
    assert gap == 23 * 3600
    assert schedule.shortest_interval_seconds(london) <= gap
