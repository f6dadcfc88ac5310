"""Rules for a CronFederatedHPA (seed 003's webhook section, Karmada's checks and its CRD bounds).

Schedules and time zones are checked with the same parser the cron executor runs
(fhpa_api.schedule), so whatever is admitted can run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fhpa_api import API_VERSION, CRON_FEDERATED_HPA, FEDERATED_HPA, GROUP
from fhpa_api.defaulting import CRON_RULE_DEFAULTS
from fhpa_api.field_checks import (
    Report,
    array,
    at,
    boolean,
    each_mapping,
    integer,
    join,
    mapping,
    present,
    string,
)
from fhpa_api.limits import (
    FAILED_ENTRY_MAX_BYTES,
    HISTORY_BUDGET_BYTES,
    OBJECT_NAME_MAX_CHARS,
    RULES_MAX_ITEMS,
    SCHEDULE_MAX_CHARS,
    SUCCESS_ENTRY_MAX_BYTES,
    TIME_ZONE_MAX_CHARS,
    history_bytes,
    shorten,
)

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from fhpa_api.schedule import Schedule

RULE_NAME_MAX = 32
CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
HISTORY_LIMIT_MAX = 32
_NOT_WORKLOADS = (FEDERATED_HPA, CRON_FEDERATED_HPA, "HorizontalPodAutoscaler")


def target_mode(ref: dict[str, Any]) -> str:
    """'fhpa' when the rule sets a FederatedHPA's min/max, 'workload' when it sets a scale subresource."""
    return "fhpa" if ref.get("apiVersion") == API_VERSION else "workload"


def check_cron_spec(spec: dict[str, Any], ref: dict[str, Any] | None, report: Report) -> None:
    mode = _check_target(ref, report) if ref is not None else None
    rules = array(spec, "rules", "spec", report, required=True, max_items=RULES_MAX_ITEMS)
    if rules is None:
        return
    if not rules:
        report.error("spec.rules", "must list at least one rule")
        return
    each_mapping(rules, "spec.rules", report, lambda r, where: check_rule(r, where, mode, report))
    _check_unique_names(rules, report)
    _check_history_budget(rules, report)


def _check_history_budget(rules: list[Any], report: Report) -> None:
    """The histories of all rules at their limits must fit the status budget, so that the object stays
    far below etcd's 1.5 MiB whatever the controller records (see fhpa_api.limits)."""
    total = 0
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        succeeded = _limit(rule, "successfulHistoryLimit")
        failed = _limit(rule, "failedHistoryLimit")
        total += history_bytes(succeeded, failed)
    if total > HISTORY_BUDGET_BYTES:
        report.error(
            "spec.rules",
            f"the execution histories of these {len(rules)} rules could take {total // 1024} KiB "
            "of status at their successfulHistoryLimit/failedHistoryLimit; the limit is "
            f"{HISTORY_BUDGET_BYTES // 1024} KiB (each kept success counts {SUCCESS_ENTRY_MAX_BYTES} "
            f"bytes, each kept failure {FAILED_ENTRY_MAX_BYTES}): lower the history limits "
            "or split the rules over several objects",
        )


def _limit(rule: dict[str, Any], key: str) -> int:
    """A rule's history limit as the controller will apply it (the default when unset or invalid)."""
    value = rule.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= HISTORY_LIMIT_MAX:
        return value
    return int(CRON_RULE_DEFAULTS[key])


def _check_target(ref: dict[str, Any], report: Report) -> str:
    """Report a wrong target, and return the mode the rules are checked in all the same.

    The rules are checked even when the target is refused, so that every error shows at once instead
    of the rule errors appearing only after the target is fixed. A refused target is taken as the
    FederatedHPA the fix points to when it names our API group or the FederatedHPA kind (the messages
    say to use kind FederatedHPA, or apiVersion autoscaling.karmada.io/v1alpha1); otherwise as the
    workload its apiVersion implies (the message there offers a Deployment-like workload).
    """
    kind = ref.get("kind")
    path = "spec.scaleTargetRef"
    if target_mode(ref) == "fhpa":
        if kind != FEDERATED_HPA:
            report.error(
                join(path, "kind"),
                f"{shorten(kind)} is not supported with apiVersion {API_VERSION}: "
                f"the only kind there is {FEDERATED_HPA}",
            )
        return "fhpa"
    if kind in _NOT_WORKLOADS:
        if kind == FEDERATED_HPA:
            report.error(
                join(path, "apiVersion"),
                f"must be {API_VERSION} to target a FederatedHPA (rules then set targetMinReplicas/"
                "targetMaxReplicas)",
            )
        else:
            report.error(
                join(path, "kind"),
                f"{kind} has no scale subresource: target a FederatedHPA or a workload such as a Deployment",
            )
        return "fhpa" if kind == FEDERATED_HPA or _in_our_group(ref) else "workload"
    return "workload"


def _in_our_group(ref: dict[str, Any]) -> bool:
    api_version = ref.get("apiVersion")
    return isinstance(api_version, str) and api_version.split("/", 1)[0] == GROUP


def check_rule(rule: dict[str, Any], path: str, mode: str | None, report: Report) -> None:
    name = string(rule, "name", path, report, required=True)
    if name and len(name) > RULE_NAME_MAX:
        report.error(
            join(path, "name"), f"is {len(name)} characters long: use 1 to {RULE_NAME_MAX} characters"
        )
    schedule = _check_schedule(rule, path, report)
    zone = _check_time_zone(rule, path, report)
    if mode == "fhpa":
        _check_fhpa_replicas(rule, path, report)
    elif mode == "workload":
        _check_workload_replicas(rule, path, report)
    boolean(rule, "suspend", path, report)
    integer(rule, "successfulHistoryLimit", path, report, minimum=1, maximum=HISTORY_LIMIT_MAX)
    integer(rule, "failedHistoryLimit", path, report, minimum=0, maximum=HISTORY_LIMIT_MAX)
    _check_max_delay(rule, path, report, schedule, zone)
    _check_exclude_dates(rule, path, report)
    _check_calendar_ref(rule, path, report)


def _check_exclude_dates(rule: dict[str, Any], path: str, report: Report) -> None:
    """Each entry a date or a range (fhpa_api.exclusions, the parser the controller runs)."""
    from fhpa_api.exclusions import EXCLUDE_DATES_MAX_ITEMS, ExclusionError, parse_entry

    entries = array(rule, "excludeDates", path, report, max_items=EXCLUDE_DATES_MAX_ITEMS)
    for index, entry in enumerate(entries or []):
        try:
            parse_entry(entry)
        except ExclusionError as exc:
            report.error(at(join(path, "excludeDates"), index), str(exc))


def _check_calendar_ref(rule: dict[str, Any], path: str, report: Report) -> None:
    """The calendar is a ConfigMap of the object's namespace, named by a valid name and key. Its content
    is read by the controller when the rule is decided (an admission webhook does not read ConfigMaps)."""
    from fhpa_api.names import dns1123_subdomain

    ref = mapping(rule, "excludeCalendarRef", path, report)
    if ref is None:
        return
    where = join(path, "excludeCalendarRef")
    name = string(ref, "name", where, report, required=True, max_length=OBJECT_NAME_MAX_CHARS)
    problem = dns1123_subdomain(name) if name else None
    if problem:
        report.error(join(where, "name"), problem)
    key = string(ref, "key", where, report, max_length=OBJECT_NAME_MAX_CHARS)
    if key is not None and not CONFIG_MAP_KEY.fullmatch(key):
        report.error(
            join(where, "key"),
            f"{shorten(key)} is not a ConfigMap key: use letters, digits, '-', '_' and '.' (default: dates)",
        )


def _check_schedule(rule: dict[str, Any], path: str, report: Report) -> Schedule | None:
    from fhpa_api.schedule import ScheduleError, parse_schedule

    text = string(rule, "schedule", path, report, required=True)
    if not text:
        return None
    if len(text) > SCHEDULE_MAX_CHARS:  # before any parsing: croniter's check is slow on long text
        report.error(
            join(path, "schedule"),
            f"is {len(text)} characters long; a schedule has at most {SCHEDULE_MAX_CHARS} "
            "(use ranges and steps such as '*/5 8-18 * * 1-5' instead of long lists)",
        )
        return None
    try:
        return parse_schedule(text)
    except ScheduleError as exc:
        report.error(join(path, "schedule"), str(exc))
        return None


def _check_time_zone(rule: dict[str, Any], path: str, report: Report) -> ZoneInfo | None:
    from fhpa_api.schedule import ScheduleError, load_time_zone

    if rule.get("timeZone") == "":
        report.error(
            join(path, "timeZone"), "must be an IANA time zone name such as Europe/Paris, or be left out"
        )
        return None
    name = string(rule, "timeZone", path, report, max_length=TIME_ZONE_MAX_CHARS)
    if not name:
        return None
    try:
        return load_time_zone(name)
    except ScheduleError as exc:
        report.error(join(path, "timeZone"), str(exc))
        return None


def _check_fhpa_replicas(rule: dict[str, Any], path: str, report: Report) -> None:
    low = integer(rule, "targetMinReplicas", path, report, minimum=1)
    high = integer(rule, "targetMaxReplicas", path, report, minimum=1)
    if not present(rule, "targetMinReplicas") and not present(rule, "targetMaxReplicas"):
        report.error(
            path,
            "must set targetMinReplicas and/or targetMaxReplicas (each >= 1) to scale a FederatedHPA",
        )
    if low is not None and high is not None and low > high:
        report.error(
            join(path, "targetMaxReplicas"),
            f"{high} is below targetMinReplicas {low}: must be >= targetMinReplicas",
        )
    # ignored, but the CRD schema still checks it (0 or more, int32), so its range is checked too
    if integer(rule, "targetReplicas", path, report, minimum=0) is not None:
        report.warn(
            join(path, "targetReplicas"),
            "is ignored when the target is a FederatedHPA (use targetMinReplicas/targetMaxReplicas)",
        )


def _check_workload_replicas(rule: dict[str, Any], path: str, report: Report) -> None:
    integer(
        rule,
        "targetReplicas",
        path,
        report,
        required=True,
        minimum=0,
        hint=" to scale the workload (0 scales it to zero)",
    )
    for key in ("targetMinReplicas", "targetMaxReplicas"):
        if present(rule, key):
            report.warn(join(path, key), "is ignored when the target is a workload (use targetReplicas)")


def _check_max_delay(
    rule: dict[str, Any], path: str, report: Report, schedule: Schedule | None, zone: ZoneInfo | None
) -> None:
    delay = integer(rule, "maxDelaySeconds", path, report, minimum=0, hint=" seconds")
    if delay is None or schedule is None:
        return
    if zone is None and present(rule, "timeZone"):
        return  # the zone is invalid (already reported); the interval cannot be known
    interval = schedule.shortest_interval_seconds(zone)
    if delay >= interval:
        report.error(
            join(path, "maxDelaySeconds"),
            f"{delay} must be shorter than the schedule's shortest interval between two fires "
            f"({interval} s): use 0 to {interval - 1}",
        )


def _check_unique_names(rules: list[Any], report: Report) -> None:
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        name = rule.get("name") if isinstance(rule, dict) else None
        if not isinstance(name, str) or not name:
            continue
        if name in seen:
            report.error(
                join(at("spec.rules", index), "name"),
                f"duplicate rule name {shorten(name)}: "
                "rule names must be unique (they key each rule's history)",
            )
        seen.add(name)
