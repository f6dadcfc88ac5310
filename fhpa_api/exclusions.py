"""Exclusion dates of a CronFederatedHPA rule: days on which its schedule does not fire (holidays).

A rule lists them inline (``excludeDates``) or names a shared calendar (``excludeCalendarRef``: a
ConfigMap in the CronFederatedHPA's namespace, so a team keeps one holiday list for many rules). Both use
one grammar, and the webhook, ``fhpa validate``, ``fhpa cron next`` and the cron controller all parse it
here:

- ``YYYY-MM-DD``: one day;
- ``YYYY-MM-DD..YYYY-MM-DD``: every day from the first to the last, both included;
- in a calendar, one entry per line; blank lines and text after ``#`` are ignored.

A date is a calendar day on the wall clock of the rule's time zone, not a UTC day: a fire at 00:30
Europe/Paris on 25 December is excluded by ``2026-12-25`` although it is still the 24th in UTC. The day
is the fire's own local date, so daylight-saving changes and leap days need no special case (a fire on a
29 February is excluded by that date, and only by it).

An excluded fire is not an execution: it is not recorded in the histories (as a day the schedule does
not match is not), so holidays never push real failures out of ``failedHistoryLimit``, and the rule's
``nextExecutionTime`` already skips it. ``fhpa cron next`` lists what was skipped and why.

Every parser here is linear in its input: a line is split once and each date is parsed by
``date.fromisoformat`` on a bounded string; fire-time search jumps over a whole range at once, so a year
excluded from a minutely schedule costs one step, not half a million.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from fhpa_api.schedule import Schedule, count_fires

RANGE_SEPARATOR = ".."
DATE_CHARS = len("2026-12-25")
ENTRY_MAX_CHARS = 2 * DATE_CHARS + len(RANGE_SEPARATOR)
EXCLUDE_DATES_MAX_ITEMS = 400
"""Inline entries per rule; a longer list belongs in a calendar ConfigMap."""
CALENDAR_DEFAULT_KEY = "dates"
CALENDAR_MAX_ENTRIES = 5000
CALENDAR_MAX_CHARS = 256 * 1024
"""A calendar is read as a whole on every pass of its rules: bounded, well below a ConfigMap's 1 MiB."""


class ExclusionError(ValueError):
    """An entry that is not a date or a range of dates; the message says what is allowed."""


@dataclass(frozen=True)
class DateRange:
    """Days ``first``..``last`` (both included) and where they were written (for messages)."""

    first: date
    last: date
    source: str

    def describe(self) -> str:
        span = self.first.isoformat()
        if self.last != self.first:
            span += f"{RANGE_SEPARATOR}{self.last.isoformat()}"
        return f"{span} ({self.source})"


def parse_entry(text: str, source: str = "excludeDates") -> DateRange:
    """One entry: a date or ``first..last``. Raises ExclusionError."""
    if not isinstance(text, str):
        raise ExclusionError(f"must be a string such as 2026-12-25 or 2026-12-24..2026-12-26, not {text!r}")
    entry = text.strip()
    if len(entry) > ENTRY_MAX_CHARS:
        raise ExclusionError(
            f"is {len(entry)} characters long; an entry is a date (2026-12-25) or a range "
            "(2026-12-24..2026-12-26)"
        )
    first_text, sep, last_text = entry.partition(RANGE_SEPARATOR)
    first = _date(first_text, entry)
    last = _date(last_text, entry) if sep else first
    if last < first:
        raise ExclusionError(f"{entry!r}: the range ends before it starts; write the earlier date first")
    return DateRange(first, last, source)


def _date(text: str, entry: str) -> date:
    if len(text) != DATE_CHARS:
        raise ExclusionError(
            f"{entry!r} is not a date (YYYY-MM-DD) or a range of dates (YYYY-MM-DD..YYYY-MM-DD)"
        )
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ExclusionError(
            f"{entry!r}: {text} is not a calendar date (YYYY-MM-DD, e.g. 2028-02-29)"
        ) from None


def parse_calendar(text: str, source: str) -> tuple[list[DateRange], list[str]]:
    """A calendar ConfigMap value: its ranges, and one problem per bad line (``line N: ...``)."""
    if len(text) > CALENDAR_MAX_CHARS:
        return [], [f"is {len(text)} characters; a calendar holds at most {CALENDAR_MAX_CHARS}"]
    ranges: list[DateRange] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.partition("#")[0].strip()
        if not entry:
            continue
        if len(ranges) >= CALENDAR_MAX_ENTRIES:
            problems.append(f"line {number}: more than {CALENDAR_MAX_ENTRIES} entries")
            break
        try:
            ranges.append(parse_entry(entry, source))
        except ExclusionError as exc:
            problems.append(f"line {number}: {exc}")
    return ranges, problems


class Exclusions:
    """A set of excluded days, merged into disjoint ranges for lookup by bisection."""

    def __init__(self, ranges: Iterable[DateRange]) -> None:
        merged: list[DateRange] = []
        for r in sorted(ranges, key=lambda r: (r.first, r.last)):
            if merged and r.first <= merged[-1].last + timedelta(days=1):
                top = merged[-1]
                sources = top.source if r.source in top.source.split("; ") else f"{top.source}; {r.source}"
                merged[-1] = DateRange(top.first, max(top.last, r.last), sources)
            else:
                merged.append(r)
        self.ranges = merged
        self._firsts = [r.first for r in merged]

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def covering(self, day: date) -> DateRange | None:
        """The range that contains ``day``, if any."""
        i = bisect.bisect_right(self._firsts, day) - 1
        if i >= 0 and self.ranges[i].last >= day:
            return self.ranges[i]
        return None


def _midnight(day: date, tz: ZoneInfo) -> datetime:
    """The first instant of ``day`` on the zone's wall clock, in UTC."""
    return datetime.combine(day, time(0), tzinfo=tz).astimezone(UTC)


@dataclass(frozen=True)
class ExcludingSchedule:
    """A schedule whose fires on excluded days do not count: the same interface as ``Schedule``."""

    schedule: Schedule
    exclusions: Exclusions

    @property
    def text(self) -> str:
        return self.schedule.text

    def excluded_by(self, fire: datetime, tz: ZoneInfo) -> DateRange | None:
        """The range that excludes this fire (its local date in ``tz``), if any."""
        return self.exclusions.covering(fire.astimezone(tz).date())

    def next_after(self, instant: datetime, tz: ZoneInfo) -> datetime:
        """The first fire strictly after ``instant`` on a day that is not excluded."""
        while True:
            fire = self.schedule.next_after(instant, tz)
            hit = self.excluded_by(fire, tz)
            if hit is None:
                return fire
            instant = max(_midnight(hit.last + timedelta(days=1), tz) - timedelta(microseconds=1), fire)

    def latest_at_or_before(self, instant: datetime, tz: ZoneInfo) -> datetime | None:
        """The last fire at or before ``instant`` on a day that is not excluded."""
        while True:
            fire = self.schedule.latest_at_or_before(instant, tz)
            if fire is None:
                return None
            hit = self.excluded_by(fire, tz)
            if hit is None:
                return fire
            instant = min(
                _midnight(hit.first, tz) - timedelta(microseconds=1), fire - timedelta(microseconds=1)
            )

    def count_fires_between(self, after: datetime, until: datetime, tz: ZoneInfo, cap: int = 10_000) -> int:
        """How many fires that are not excluded fall in (after, until], up to ``cap``."""
        return count_fires(self.next_after, after, until, tz, cap)

    def shortest_interval_seconds(self, tz: ZoneInfo | None = None) -> int:
        """The schedule's own: excluding days only lengthens intervals, so the bound stays safe."""
        return self.schedule.shortest_interval_seconds(tz)

    def skipped_between(
        self, after: datetime, until: datetime, tz: ZoneInfo
    ) -> list[tuple[datetime, DateRange]]:
        """Each excluded range the schedule meets in (after, until], with its first skipped fire."""
        skipped: list[tuple[datetime, DateRange]] = []
        end = until.astimezone(UTC)
        current = after
        while True:
            fire = self.schedule.next_after(current, tz)
            if fire.astimezone(UTC) > end:
                return skipped
            hit = self.excluded_by(fire, tz)
            if hit is None:
                current = fire
                continue
            skipped.append((fire, hit))
            current = max(_midnight(hit.last + timedelta(days=1), tz) - timedelta(microseconds=1), fire)


def excluding(
    schedule: Schedule,
    exclude_dates: list[str] | None,
    calendar: str | None = None,
    calendar_source: str = "calendar",
) -> Schedule | ExcludingSchedule:
    """``schedule`` with a rule's inline dates and its calendar's text (when it names one) excluded.

    Raises ExclusionError naming every bad entry: a rule with a bad date must not fire on a day its
    author meant to exclude.
    """
    ranges: list[DateRange] = []
    problems: list[str] = []
    for index, entry in enumerate(exclude_dates or []):
        try:
            ranges.append(parse_entry(entry))
        except ExclusionError as exc:
            problems.append(f"excludeDates[{index}]: {exc}")
    if calendar is not None:
        found, bad = parse_calendar(calendar, calendar_source)
        ranges += found
        problems += [f"{calendar_source}: {p}" for p in bad]
    if problems:
        raise ExclusionError("; ".join(problems))
    return ExcludingSchedule(schedule, Exclusions(ranges)) if ranges else schedule


Fires = Schedule | ExcludingSchedule
"""What the cron decisions compute fire times with: a schedule, with or without excluded days."""


def calendar_source(ref_name: str, key: str) -> str:
    """How a calendar is named in messages: ``calendar holidays/dates`` (ConfigMap name and key)."""
    return f"calendar {ref_name}/{key}"
