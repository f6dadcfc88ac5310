"""The one cron parser: what the validator admits is exactly what the cron controller can run.

A schedule is standard 5-field cron (minute, hour, day of month, month, day of week) or one of the
@yearly/@annually/@monthly/@weekly/@daily/@midnight/@hourly macros. Fires are computed on the wall clock
of a time zone, with the daylight-saving rules of DESIGN §5:

- a local time that a spring-forward skips fires once, at the first valid instant after it (the
  transition itself), and never twice when several skipped times (or the transition time) coincide;
- a local time in a repeated (fall-back) hour fires once, at its first occurrence;
- day of month and day of week are OR-ed when both are restricted (neither written as ``*``), as in
  standard cron (Vixie cron, robfig/cron, Kubernetes CronJob).

The parser is strict on purpose: the reference implementation admitted expressions (seconds fields,
``L``/``W``/``#``, weekday names beyond the standard) that its executor could not run. croniter is used
for the one thing it does reliably for this subset, checking that admitted text is plain cron
(see ``_croniter_agrees``); fire times are computed here, because DST handling must follow DESIGN §5.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from fhpa_api.limits import SCHEDULE_MAX_CHARS, TIME_ZONE_MAX_CHARS

__all__ = ["Schedule", "ScheduleError", "count_fires", "load_time_zone", "parse_schedule"]


class ScheduleError(ValueError):
    """A schedule or zone name that cannot be used; the message says what is wrong and what is allowed."""


FIELD_HELP = (
    "use 5 fields 'minute hour day-of-month month day-of-week' (e.g. '30 8 * * 1-5') "
    "or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"
)

MACROS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
MONTH_NAMES = {n: i + 1 for i, n in enumerate(MONTHS)}
DAY_NAMES = {n: i for i, n in enumerate(DAYS)}

# How far the fire search looks: long enough for "29 February" (8 years across 2100) plus margin.
SEARCH_DAYS = 366 * 9
# Largest daylight-saving shift in tzdata is 2 hours (historical double summer time); search margin.
DST_MARGIN = timedelta(hours=3)


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    low: int
    high: int
    names: dict[str, int]


FIELDS = (
    _FieldSpec("minute", 0, 59, {}),
    _FieldSpec("hour", 0, 23, {}),
    _FieldSpec("day-of-month", 1, 31, {}),
    _FieldSpec("month", 1, 12, MONTH_NAMES),
    _FieldSpec("day-of-week", 0, 7, DAY_NAMES),
)

_NUMBER = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: the set of values each field matches, and fire-time arithmetic over a zone."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    dom_restricted: bool
    dow_restricted: bool
    _times: tuple[time, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_times", tuple(time(h, m) for h in self.hours for m in self.minutes))

    # ----- which days fire -----

    def matches_day(self, day: date) -> bool:
        """Whether the schedule fires on this calendar day (month, and day of month OR/AND day of week)."""
        if day.month not in self.months:
            return False
        dom_ok = day.day in self.days_of_month
        dow_ok = (day.isoweekday() % 7) in self.days_of_week
        if self.dom_restricted and self.dow_restricted:
            return dom_ok or dow_ok
        return dom_ok and dow_ok

    # ----- fires in a zone -----

    def next_after(self, instant: datetime, tz: ZoneInfo) -> datetime:
        """The first fire strictly after ``instant``, as an aware datetime in ``tz``."""
        _require_aware(instant)
        instant = point = instant.astimezone(UTC)  # arithmetic on zoned datetimes is wall-clock arithmetic
        start = instant.astimezone(tz).replace(tzinfo=None) - _dst_margin(instant, tz)
        for wall in _walls(self, start, forward=True):
            fire = _fire_instant(wall, tz)
            if fire > point:
                return fire.astimezone(tz)
        raise ScheduleError(f"schedule {self.text!r} has no fire within {SEARCH_DAYS} days of {instant}")

    def latest_at_or_before(self, instant: datetime, tz: ZoneInfo) -> datetime | None:
        """The last fire at or before ``instant`` (aware, in ``tz``); None when none in the search window."""
        _require_aware(instant)
        instant = point = instant.astimezone(UTC)  # arithmetic on zoned datetimes is wall-clock arithmetic
        start = instant.astimezone(tz).replace(tzinfo=None) + _dst_margin(instant, tz)
        for wall in _walls(self, start, forward=False):
            fire = _fire_instant(wall, tz)
            if fire <= point:
                return fire.astimezone(tz)
        return None

    def count_fires_between(self, after: datetime, until: datetime, tz: ZoneInfo, cap: int = 10_000) -> int:
        """How many fires fall in (after, until], counted up to ``cap`` (a long outage reports ``cap``)."""
        return count_fires(self.next_after, after, until, tz, cap)

    def shortest_interval_seconds(self, tz: ZoneInfo | None = None) -> int:
        """The shortest time between two consecutive fires; with ``tz``, DST transitions count too.

        Used to bound ``maxDelaySeconds`` (a late fire must not overlap the next one) and to default it.
        """
        return _shortest_interval(self, tz.key if tz is not None else None)


def count_fires(
    next_after: Callable[[datetime, ZoneInfo], datetime],
    after: datetime,
    until: datetime,
    tz: ZoneInfo,
    cap: int,
) -> int:
    """How many instants ``next_after`` steps through in (after, until], up to ``cap``."""
    count = 0
    current = after
    end = until.astimezone(UTC)
    while count < cap:
        nxt = next_after(current, tz)
        if nxt.astimezone(UTC) > end:
            break
        count += 1
        current = nxt
    return count


def _walls(schedule: Schedule, start: datetime, forward: bool) -> Iterator[datetime]:
    """Naive wall-clock times matching the fields, from ``start`` (inclusive) forwards or backwards."""
    first = start.replace(second=0, microsecond=0)
    if forward and first < start:
        first += timedelta(minutes=1)
    step = timedelta(days=1 if forward else -1)
    times = schedule._times if forward else tuple(reversed(schedule._times))
    day = first.date()
    for _ in range(SEARCH_DAYS):
        if schedule.matches_day(day):
            for t in times:
                wall = datetime.combine(day, t)
                if (wall >= first) if forward else (wall <= first):
                    yield wall
        day += step


def _dst_margin(instant: datetime, tz: ZoneInfo) -> timedelta:
    """How far wall-clock order may disagree with instant order near ``instant`` (0 away from DST)."""
    before = (instant - DST_MARGIN).astimezone(tz).utcoffset()
    after = (instant + DST_MARGIN).astimezone(tz).utcoffset()
    if before is None or after is None or before == after:
        return timedelta(0)
    return abs(after - before) + timedelta(minutes=1)


def _seconds_between(earlier: datetime, later: datetime) -> int:
    """Elapsed seconds; through UTC, since subtracting datetimes that share a tzinfo ignores DST."""
    return int((later.astimezone(UTC) - earlier.astimezone(UTC)).total_seconds())


def _require_aware(instant: datetime) -> None:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"instant {instant!r} must be timezone-aware")


def _fire_instant(wall: datetime, tz: ZoneInfo) -> datetime:
    """The UTC instant a wall fire time maps to: itself, its first occurrence, or the end of its DST gap.

    Returned in UTC because Python compares two datetimes sharing one tzinfo by wall time, ignoring fold.
    """
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if first.astimezone(tz).replace(tzinfo=None) == wall:
        return first
    return _gap_end(wall, tz)


def _gap_end(wall: datetime, tz: ZoneInfo) -> datetime:
    """The transition instant that ends the daylight-saving gap containing the (non-existent) ``wall``."""
    low = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)  # wall read with the post-transition offset: before
    high = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)  # wall read with the pre-transition offset: after
    after_offset = high.astimezone(tz).utcoffset()
    while high - low > timedelta(seconds=1):
        mid = low + (high - low) / 2
        mid = mid.replace(microsecond=0)
        if mid.astimezone(tz).utcoffset() == after_offset:
            high = mid
        else:
            low = mid
    return high


# ----- parsing -----


def parse_schedule(text: str) -> Schedule:
    """Parse a schedule, refusing anything the controller cannot run, with a message that says why."""
    if not isinstance(text, str):
        raise ScheduleError(f"schedule must be a string; {FIELD_HELP}")
    if len(text) > SCHEDULE_MAX_CHARS:  # before any parsing: croniter's check is slow on long text
        raise ScheduleError(
            f"schedule is {len(text)} characters long; at most {SCHEDULE_MAX_CHARS} are allowed"
        )
    return _parse_cached(text)


@lru_cache(maxsize=4096)
def _parse_cached(text: str) -> Schedule:
    """Schedules are immutable, and a controller re-reads the same few texts on every reconcile."""
    stripped = text.strip()
    if not stripped:
        raise ScheduleError(f"schedule is empty; {FIELD_HELP}")
    upper = stripped.upper()
    if upper.startswith("CRON_TZ=") or upper.startswith("TZ="):
        raise ScheduleError(
            "a CRON_TZ=/TZ= prefix is not supported in schedule; put the IANA zone name in the rule's "
            "timeZone field instead (e.g. timeZone: Asia/Shanghai)"
        )
    if stripped.startswith("@"):
        return _parse_macro(stripped)
    return _parse_fields(stripped, stripped.split())


def _parse_macro(text: str) -> Schedule:
    word = text.split()[0].lower()
    if word == "@every":
        raise ScheduleError(
            "@every is not supported: it counts from when the controller started, not from the clock; "
            "use a step such as '*/15 * * * *'"
        )
    if word == "@reboot":
        raise ScheduleError(
            f"@reboot is not supported: a controller restart is no scaling event; {FIELD_HELP}"
        )
    if word not in MACROS or len(text.split()) != 1:
        raise ScheduleError(f"unknown schedule macro {text!r}; {FIELD_HELP}")
    return _parse_fields(text, MACROS[word].split())


def _parse_fields(text: str, parts: list[str]) -> Schedule:
    if len(parts) == 6:
        raise ScheduleError(f"schedule has 6 fields; a seconds or year field is not supported: {FIELD_HELP}")
    if len(parts) == 7:
        raise ScheduleError(f"schedule has 7 fields; seconds and year fields are not supported: {FIELD_HELP}")
    if len(parts) != 5:
        raise ScheduleError(f"schedule has {len(parts)} field(s), expected 5: {FIELD_HELP}")
    sets = [_parse_field(part, spec) for part, spec in zip(parts, FIELDS, strict=True)]
    dows = frozenset(0 if d == 7 else d for d in sets[4])
    schedule = Schedule(
        text=text,
        minutes=tuple(sorted(sets[0])),
        hours=tuple(sorted(sets[1])),
        days_of_month=frozenset(sets[2]),
        months=frozenset(sets[3]),
        days_of_week=dows,
        dom_restricted=not _is_star(parts[2]),
        dow_restricted=not _is_star(parts[4]),
    )
    _check_fires(schedule)
    _croniter_agrees(schedule, parts)
    return schedule


def _is_star(part: str) -> bool:
    """Unrestricted in the sense of standard cron's day OR rule: '*' or '?' with no step above 1."""
    return part in ("*", "?", "*/1", "?/1")


def _parse_field(part: str, spec: _FieldSpec) -> set[int]:
    values: set[int] = set()
    for item in part.split(","):
        if not item:
            raise ScheduleError(f"{spec.name} field {part!r} has an empty list item; write lists as 'a,b,c'")
        values |= _parse_item(item, spec)
    return values


def _parse_item(item: str, spec: _FieldSpec) -> set[int]:
    range_part, _, step_part = item.partition("/")
    step = 1
    if "/" in item:
        step = _parse_step(step_part, item, spec)
    if range_part in ("*", "?"):
        if range_part == "?" and spec.name not in ("day-of-month", "day-of-week"):
            raise ScheduleError(f"'?' is only allowed in day-of-month and day-of-week, not in {spec.name}")
        return set(range(spec.low, spec.high + 1, step))
    low_text, dash, high_text = range_part.partition("-")
    low = _parse_value(low_text, item, spec)
    if dash:
        high = _parse_value(high_text, item, spec)
    elif "/" in item:
        high = spec.high  # 'N/step' means from N to the end of the range, as in robfig/cron
    else:
        high = low
    if low > high:
        raise ScheduleError(
            f"{spec.name} range {range_part!r} is reversed ({low} > {high}); ranges run low-high, "
            "write a list such as '5,6,0' for a range across the end"
        )
    return set(range(low, high + 1, step))


def _parse_step(step_text: str, item: str, spec: _FieldSpec) -> int:
    if not _NUMBER.match(step_text):
        raise ScheduleError(f"{spec.name} step in {item!r} must be a positive whole number, as in '*/15'")
    step = int(step_text)
    if step == 0:
        raise ScheduleError(f"{spec.name} step 0 in {item!r} never advances; use a step of 1 or more")
    if step > spec.high - spec.low + 1:
        raise ScheduleError(
            f"{spec.name} step {step} in {item!r} is larger than the field's range {spec.low}-{spec.high}"
        )
    return step


def _parse_value(text: str, item: str, spec: _FieldSpec) -> int:
    if _NUMBER.match(text):
        value = int(text)
    elif text.upper() in spec.names:
        return spec.names[text.upper()]
    else:
        raise ScheduleError(_bad_value_message(text, item, spec))
    if not spec.low <= value <= spec.high:
        extra = " (0 and 7 are Sunday)" if spec.name == "day-of-week" else ""
        raise ScheduleError(f"{spec.name} value {value} is out of range {spec.low}-{spec.high}{extra}")
    return value


def _bad_value_message(text: str, item: str, spec: _FieldSpec) -> str:
    allowed = f"numbers {spec.low}-{spec.high}"
    if spec.name == "month":
        allowed += " or JAN-DEC"
    if spec.name == "day-of-week":
        allowed += " (0 and 7 are Sunday) or SUN-SAT"
    special = ""
    if any(c in text.upper() for c in "LW#H"):
        special = " ('L', 'W', '#' and 'H' are not standard cron and are not supported)"
    return (
        f"{spec.name} field has an invalid value {text!r} in {item!r}{special}; allowed: {allowed}, "
        "'*', ranges a-b, steps */n or a-b/n, lists a,b"
    )


def _check_fires(schedule: Schedule) -> None:
    """Refuse a schedule that can never fire (e.g. 30 February), rather than admit a rule that never runs."""
    if schedule.dom_restricted and schedule.dow_restricted:
        return
    if not schedule.dow_restricted or not schedule.dom_restricted:
        month_days = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
        if not any(d <= month_days[m] for m in schedule.months for d in schedule.days_of_month):
            raise ScheduleError(
                f"schedule {schedule.text!r} never fires: none of its days of month exists in its months"
            )


def _croniter_agrees(schedule: Schedule, parts: list[str]) -> None:
    """A second opinion: croniter must accept the same 5 fields (guards the strict parser against drift)."""
    if not croniter.is_valid(" ".join(parts)):
        raise ScheduleError(f"schedule {schedule.text!r} is not valid cron; {FIELD_HELP}")


# ----- shortest interval -----


@lru_cache(maxsize=4096)
def _shortest_interval(schedule: Schedule, tz_key: str | None) -> int:
    naive = _naive_shortest(schedule)
    if tz_key is None or naive <= 60:
        return naive
    tz = ZoneInfo(tz_key)
    best = naive
    transitions = _transitions_cached(tz_key)
    for transition in transitions:
        best = min(best, _shortest_near(schedule, tz, transition))
    shift = _largest_shift(tz, transitions)
    if naive > shift:
        # The window's transitions show the sub-day patterns, but which weekdays and days of the month
        # meet a transition changes from year to year: an interval that straddles one in another year
        # is shorter by up to the zone's shift, so that bound holds whatever the year.
        best = min(best, naive - shift)
    return best


def _largest_shift(tz: ZoneInfo, transitions: tuple[datetime, ...]) -> int:
    """The largest change of UTC offset, in seconds, at any of the zone's transitions."""
    largest = 0
    for moment in transitions:
        before = (moment - timedelta(seconds=1)).astimezone(tz).utcoffset()
        after = moment.astimezone(tz).utcoffset()
        if before is not None and after is not None:
            largest = max(largest, int(abs((after - before).total_seconds())))
    return largest


def _shortest_near(schedule: Schedule, tz: ZoneInfo, transition: datetime) -> int:
    """Shortest interval among consecutive fires that start before, straddle or touch a DST transition."""
    window_start = transition - DST_MARGIN
    fire = schedule.latest_at_or_before(window_start, tz) or schedule.next_after(window_start, tz)
    best = 10**12
    while fire.astimezone(UTC) <= transition + DST_MARGIN:
        following = schedule.next_after(fire, tz)
        best = min(best, _seconds_between(fire, following))
        fire = following
    return best


def _naive_shortest(schedule: Schedule) -> int:
    """Shortest gap without DST: within a day, and from a firing day's last time to the next's first."""
    minutes_of_day = sorted(h * 60 + m for h in schedule.hours for m in schedule.minutes)
    best = 10**12
    for a, b in itertools.pairwise(minutes_of_day):
        best = min(best, b - a)
    day_gap = _shortest_day_gap(schedule)
    span = minutes_of_day[-1] - minutes_of_day[0]
    best = min(best, day_gap * 1440 - span)
    return best * 60


def _shortest_day_gap(schedule: Schedule) -> int:
    """Fewest days between consecutive firing days, over a 28-year cycle (weekdays and leap years)."""
    day = date(2001, 1, 1)
    previous: date | None = None
    best = 10**9
    for _ in range(366 * 28 + 7):
        if schedule.matches_day(day):
            if previous is not None:
                best = min(best, (day - previous).days)
                if best == 1:
                    return 1
            previous = day
        day += timedelta(days=1)
    return best


@lru_cache(maxsize=256)
def _transitions_cached(tz_key: str) -> tuple[datetime, ...]:
    """UTC-offset changes of a zone from mid-2025 to mid-2027.

    A fixed window keeps the result deterministic; zones' rules repeat yearly.
    """
    tz = ZoneInfo(tz_key)
    found: list[datetime] = []
    moment = datetime(2025, 7, 1, 12, tzinfo=UTC)
    end = datetime(2027, 7, 1, tzinfo=UTC)
    previous = moment.astimezone(tz).utcoffset()
    while moment < end:
        moment += timedelta(days=1)
        offset = moment.astimezone(tz).utcoffset()
        if offset != previous:
            found.append(_exact_change(tz, moment - timedelta(days=1), moment))
            previous = offset
    return tuple(found)


def _exact_change(tz: ZoneInfo, low: datetime, high: datetime) -> datetime:
    """The first second at which the zone's offset is the one it has at ``high`` (bisection)."""
    target = high.astimezone(tz).utcoffset()
    while high - low > timedelta(seconds=1):
        mid = (low + (high - low) / 2).replace(microsecond=0)
        if mid.astimezone(tz).utcoffset() == target:
            high = mid
        else:
            low = mid
    return high


def load_time_zone(name: str) -> ZoneInfo:
    """An IANA zone by name (tzdata ships with the package, so slim images work), or ScheduleError."""
    if not isinstance(name, str) or not name.strip():
        raise ScheduleError("timeZone is empty; give an IANA name such as 'UTC' or 'Europe/London'")
    if len(name) > TIME_ZONE_MAX_CHARS:
        raise ScheduleError(
            f"timeZone is {len(name)} characters long; an IANA name has at most {TIME_ZONE_MAX_CHARS}"
        )
    if name != name.strip() or name.startswith("/") or ".." in name.split("/"):
        raise ScheduleError(f"timeZone {name!r} is not an IANA name such as 'Europe/London'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ScheduleError(
            f"unknown timeZone {name!r}; use an IANA name such as 'UTC' or 'America/Los_Angeles'"
        ) from exc
