"""`fhpa cron next FILE [--from ISO8601] [-n N]`: when each CronFederatedHPA rule fires next.

Prints JSON ``{"rules": [{"name", "timeZone", "next": [{"local", "utc"}]}]}``: for every rule the next N
fires strictly after --from (default: now), computed by the same schedule code the controller runs,
daylight saving included. ``local`` carries the rule zone's UTC offset; suspended rules list nothing.
When FILE holds several CronFederatedHPAs, each rule's name is prefixed with its object's name
(``object/rule``).

Exclusion dates: fires on a rule's ``excludeDates`` or on its calendar's dates are left out, and a rule
that has exclusions also lists ``skipped``: each excluded range met up to the last fire listed, with its
first skipped fire and where the range was written (``excludeDates`` or ``calendar NAME/KEY``). A rule's
calendar is read from a ConfigMap of that name and namespace in FILE (put both in one file, as they are
applied); without it the rule cannot be scheduled, as the controller would not fire it.

Exit 0 on success, 1 when a rule cannot be scheduled or FILE has no CronFederatedHPA, 2 when FILE
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError

from fhpa_api import CRON_FEDERATED_HPA
from fhpa_api.documents import Document, DocumentError, load_documents
from fhpa_api.exclusions import ExcludingSchedule, ExclusionError, calendar_source, excluding
from fhpa_api.models import CronFederatedHPA, CronFederatedHPARule
from fhpa_api.schedule import ScheduleError, load_time_zone, parse_schedule

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNREADABLE = 2
MAX_FIRES = 1000


class CommandError(Exception):
    """Bad input for this command; the message is printed on stderr."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cron",
        help="CronFederatedHPA tools (next fire times)",
        description="CronFederatedHPA tools.",
    )
    actions = parser.add_subparsers(dest="cron_command", metavar="ACTION", required=True)
    nxt = actions.add_parser(
        "next",
        help="print the next fire times of every rule as JSON",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    nxt.add_argument(
        "file", metavar="FILE", help="YAML or JSON manifest with CronFederatedHPA objects; - reads stdin"
    )
    nxt.add_argument(
        "--from",
        dest="start",
        metavar="ISO8601",
        help="count fires strictly after this instant, e.g. 2026-03-08T01:00:00-08:00 (no offset: UTC); "
        "default now",
    )
    nxt.add_argument("-n", type=int, default=5, metavar="N", help="fires per rule (default 5)")
    nxt.add_argument(
        "--default-time-zone",
        default="UTC",
        metavar="ZONE",
        help="zone for rules without timeZone, as the controller's flag (default UTC)",
    )
    nxt.set_defaults(func=run_next)


def run_next(args: argparse.Namespace) -> int:
    try:
        documents = load_documents(args.file)
    except DocumentError as exc:
        print(f"fhpa cron next: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        crons = read_crons(documents, args.file)
        start = parse_instant(args.start) if args.start else datetime.now(UTC)
        count = _check_count(args.n)
        default_zone = load_time_zone(args.default_time_zone)
        report = next_fires(crons, start, count, default_zone, read_config_maps(documents))
    except (CommandError, ScheduleError) as exc:
        print(f"fhpa cron next: {exc}", file=sys.stderr)
        return EXIT_INVALID
    print(json.dumps(report, indent=2))
    return EXIT_OK


def next_fires(
    crons: list[CronFederatedHPA],
    start: datetime,
    count: int,
    default_zone: ZoneInfo,
    config_maps: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The report: each rule's next ``count`` fires after ``start``, in file order. ``config_maps``:
    the ConfigMaps in FILE by (namespace, name), for rules that name a calendar."""
    prefix = len(crons) > 1
    rules = []
    for cron in crons:
        for index, rule in enumerate(cron.spec.rules):
            name = f"{cron.metadata.name}/{rule.name}" if prefix else rule.name
            calendar = _calendar_text(cron, index, rule, config_maps or {})
            rules.append(_rule_report(cron, index, rule, name, start, count, default_zone, calendar))
    return {"rules": rules}


def _calendar_text(
    cron: CronFederatedHPA,
    index: int,
    rule: CronFederatedHPARule,
    config_maps: Mapping[tuple[str, str], Mapping[str, str]],
) -> str | None:
    ref = rule.exclude_calendar_ref
    if ref is None:
        return None
    namespace = cron.metadata.namespace or "default"
    where = f"CronFederatedHPA {cron.metadata.name}: spec.rules[{index}].excludeCalendarRef"
    data = config_maps.get((namespace, ref.name))
    if data is None:
        raise CommandError(
            f"{where}: ConfigMap {namespace}/{ref.name} is not in FILE; add it (the controller does not "
            "fire a rule whose calendar it cannot read)"
        )
    if ref.effective_key not in data:
        raise CommandError(f"{where}: ConfigMap {namespace}/{ref.name} has no key {ref.effective_key!r}")
    return data[ref.effective_key]


def read_config_maps(documents: list[Document]) -> dict[tuple[str, str], dict[str, str]]:
    """The ConfigMaps among the documents, by (namespace, name): the calendars rules may name."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for doc in documents:
        body = doc.doc
        if not isinstance(body, dict) or body.get("kind") != "ConfigMap":
            continue
        meta = body.get("metadata")
        data = body.get("data")
        meta = meta if isinstance(meta, dict) else {}
        data = data if isinstance(data, dict) else {}
        key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
        found[key] = {str(k): str(v) for k, v in data.items()}
    return found


def _rule_report(
    cron: CronFederatedHPA,
    index: int,
    rule: CronFederatedHPARule,
    name: str,
    start: datetime,
    count: int,
    default_zone: ZoneInfo,
    calendar: str | None = None,
) -> dict[str, Any]:
    where = f"CronFederatedHPA {cron.metadata.name}: spec.rules[{index}]"
    try:
        plain = parse_schedule(rule.schedule)
    except ScheduleError as exc:
        raise CommandError(f"{where}.schedule: {exc}") from exc
    source = "calendar"
    if rule.exclude_calendar_ref is not None:
        source = calendar_source(rule.exclude_calendar_ref.name, rule.exclude_calendar_ref.effective_key)
    try:
        schedule = excluding(plain, rule.exclude_dates, calendar, source)
    except ExclusionError as exc:
        raise CommandError(f"{where}: {exc}") from exc
    try:
        zone = load_time_zone(rule.time_zone) if rule.time_zone else default_zone
    except ScheduleError as exc:
        raise CommandError(f"{where}.timeZone: {exc}") from exc
    fires: list[dict[str, str]] = []
    current = start
    for _ in range(0 if rule.suspend else count):
        current = schedule.next_after(current, zone)
        fires.append({"local": current.isoformat(), "utc": format_utc(current)})
    report: dict[str, Any] = {"name": name, "timeZone": zone.key, "next": fires}
    if isinstance(schedule, ExcludingSchedule):
        report["skipped"] = [
            {"local": fire.isoformat(), "utc": format_utc(fire), "excludedBy": hit.describe()}
            for fire, hit in (schedule.skipped_between(start, current, zone) if fires else [])
        ]
    return report


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant; without an offset it is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise CommandError(
            f"--from {text!r} is not an ISO 8601 time; write e.g. 2026-03-08T01:00:00-08:00 "
            "or 2026-03-08T09:00:00Z"
        ) from exc
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def format_utc(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_count(n: int) -> int:
    if not 1 <= n <= MAX_FIRES:
        raise CommandError(f"-n {n} is out of range; give 1 to {MAX_FIRES}")
    return n


def read_crons(documents: list[Document], path: str) -> list[CronFederatedHPA]:
    """The CronFederatedHPAs among the documents (others are ignored); their status is not read."""
    crons: list[CronFederatedHPA] = []
    for doc in documents:
        if not isinstance(doc.doc, dict) or doc.doc.get("kind") != CRON_FEDERATED_HPA:
            continue
        try:
            crons.append(CronFederatedHPA.model_validate(_without_status(doc.doc)))
        except ValidationError as exc:
            raise CommandError(
                f"{doc.source}: not a well-formed CronFederatedHPA: {_first_error(exc)}"
            ) from exc
    if not crons:
        raise CommandError(f"{path}: no CronFederatedHPA found")
    return crons


def _without_status(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "status"}


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    return f"{location}: {error['msg']}"
