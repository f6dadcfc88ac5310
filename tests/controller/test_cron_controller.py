"""The CronFederatedHPA controller: due fires, catch-up, history, FederatedHPA and workload targets.

The pure decisions alone are tested in tests/controller/planning/test_cron.py."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cron_controller import MARKER_TYPE, RETRY_AFTER, SCALE_RETRYING, CronController
from controller.errors import ConflictError, PortError
from controller.planning.cron import SCALE_FAILED, SCALE_SKIPPED, SCALE_SUCCEEDED
from controller.ports import NotLeaderError
from fhpa_api.models import CronFederatedHPA, ExecutionHistory, FederatedHPA
from tests.support.fakes import FakeControlPlane

NS = "shop"
FHPA_REF = {"apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "FederatedHPA", "name": "web"}
DEPLOY_REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
Z = ZoneInfo("UTC")


def at(hour: int, minute: int = 0, second: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 6, day, hour, minute, second, tzinfo=UTC)


def make_cron(
    rules: list[dict[str, Any]], ref: dict[str, str] | None = None, created: datetime | None = None
) -> CronFederatedHPA:
    meta: dict[str, Any] = {"name": "peak", "namespace": NS, "generation": 1}
    if created is not None:
        meta["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return CronFederatedHPA.model_validate(
        {"metadata": meta, "spec": {"scaleTargetRef": ref or DEPLOY_REF, "rules": rules}}
    )


def make_fhpa(min_replicas: int = 2, max_replicas: int = 10) -> FederatedHPA:
    return FederatedHPA.model_validate(
        {
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": min_replicas,
                "maxReplicas": max_replicas,
            },
        }
    )


def setup(
    rules: list[dict[str, Any]],
    ref: dict[str, str] | None = None,
    created: datetime | None = None,
    tz: str = "UTC",
) -> tuple[FakeControlPlane, CronController]:
    cp = FakeControlPlane()
    cp.workloads[(NS, "Deployment", "web")] = 1
    cp.add(make_fhpa())
    cp.add(make_cron(rules, ref, created))
    return cp, CronController(cp, default_time_zone=tz)


def history(cp: FakeControlPlane, rule: str = "r") -> ExecutionHistory:
    status = cp.crons[(NS, "peak")].status
    assert status is not None and status.execution_histories is not None
    found = [h for h in status.execution_histories if h.rule_name == rule]
    assert len(found) == 1
    return found[0]


def rule(**fields: Any) -> dict[str, Any]:
    return {"name": "r", "schedule": "3 * * * *", "targetReplicas": 5, **fields}


# ----- seed examples: next execution time -----


def test_seed_applied_at_904_next_is_1003() -> None:
    cp, ctl = setup([rule()], created=at(9, 4))
    assert ctl.reconcile(NS, "peak", at(9, 4)) == at(10, 3)
    assert history(cp).next_execution_time == at(10, 3)
    assert cp.scale_calls == []


def test_seed_applied_at_901_next_is_903_then_1003() -> None:
    cp, ctl = setup([rule()], created=at(9, 1))
    assert ctl.reconcile(NS, "peak", at(9, 1)) == at(9, 3)
    assert ctl.reconcile(NS, "peak", at(9, 3)) == at(10, 3)
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]
    h = history(cp)
    assert h.next_execution_time == at(10, 3)
    assert h.successful_executions is not None
    assert h.successful_executions[0].schedule_time == at(9, 3)
    assert h.successful_executions[0].applied_replicas == 5
    assert cp.reasons() == [SCALE_SUCCEEDED]


def test_created_after_a_fire_never_counts_it_as_missed() -> None:
    cp, ctl = setup([rule()], created=at(9, 3, 30))
    ctl.reconcile(NS, "peak", at(9, 3, 40))
    assert cp.scale_calls == [] and cp.events == []
    assert history(cp).failed_executions is None


def test_created_before_a_fire_the_controller_noticed_late_still_runs_it() -> None:
    cp, ctl = setup([rule()], created=at(9, 2))
    ctl.reconcile(NS, "peak", at(9, 3, 20))  # 20 s late, default limit 60 s
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]


def test_rule_time_zone_and_controller_default_zone() -> None:
    _, ctl = setup([rule(schedule="30 7 * * *", timeZone="Asia/Shanghai")], created=at(0))
    assert ctl.reconcile(NS, "peak", at(0)) == at(23, 30)
    _, ctl2 = setup([rule(schedule="30 7 * * *")], created=at(0), tz="America/Los_Angeles")
    assert ctl2.reconcile(NS, "peak", at(0)) == at(14, 30)


# ----- FederatedHPA target -----


def test_federated_hpa_min_is_patched() -> None:
    cp, ctl = setup([{"name": "r", "schedule": "3 * * * *", "targetMinReplicas": 8}], FHPA_REF, at(9))
    ctl.reconcile(NS, "peak", at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    assert cp.fhpas[(NS, "web")].spec.min_replicas == 8
    assert cp.fhpas[(NS, "web")].spec.max_replicas == 10
    ok = history(cp).successful_executions
    assert ok is not None and ok[0].applied_min_replicas == 8 and ok[0].applied_max_replicas is None


def test_federated_hpa_min_above_max_changes_nothing_and_fails() -> None:
    cp, ctl = setup([{"name": "r", "schedule": "3 * * * *", "targetMinReplicas": 12}], FHPA_REF, at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    assert cp.patch_calls == []
    assert cp.fhpas[(NS, "web")].spec.min_replicas == 2
    failed = history(cp).failed_executions
    assert failed is not None and "12" in failed[0].message and "10" in failed[0].message
    assert cp.reasons() == [SCALE_FAILED]
    assert cp.events[0].type == "Warning"


def test_a_fire_on_a_paused_federated_hpa_is_recorded_as_skipped_and_changes_nothing() -> None:
    cp, ctl = setup([{"name": "r", "schedule": "3 * * * *", "targetMinReplicas": 8}], FHPA_REF, at(9))
    paused = cp.fhpas[(NS, "web")]
    meta = paused.metadata.model_copy(update={"annotations": {"autoscaling.karmada.io/paused": "true"}})
    cp.fhpas[(NS, "web")] = paused.model_copy(update={"metadata": meta})
    ctl.reconcile(NS, "peak", at(9, 3))
    assert cp.patch_calls == []
    assert cp.fhpas[(NS, "web")].spec.min_replicas == 2
    failed = history(cp).failed_executions
    assert failed is not None and failed[0].message.startswith("skipped: FederatedHPA shop/web is paused")
    assert history(cp).successful_executions is None
    assert cp.reasons() == [SCALE_SKIPPED]
    assert cp.events[0].type == "Normal"


def test_federated_hpa_patch_conflict_is_retried_on_a_fresh_read() -> None:
    cp, ctl = setup([{"name": "r", "schedule": "3 * * * *", "targetMaxReplicas": 30}], FHPA_REF, at(9))
    cp.fail_next("patch_federated_hpa_bounds", ConflictError("changed"), ConflictError("changed"))
    ctl.reconcile(NS, "peak", at(9, 3))
    assert cp.fhpas[(NS, "web")].spec.max_replicas == 30
    assert history(cp).successful_executions is not None


def test_missing_federated_hpa_fails() -> None:
    ref = {**FHPA_REF, "name": "nope"}
    cp, ctl = setup([{"name": "r", "schedule": "3 * * * *", "targetMinReplicas": 3}], ref, at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    failed = history(cp).failed_executions
    assert failed is not None and "not found" in failed[0].message


def test_missing_workload_fails() -> None:
    cp, ctl = setup([rule()], {**DEPLOY_REF, "name": "gone"}, at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    failed = history(cp).failed_executions
    assert failed is not None and "not found" in failed[0].message


def test_workload_scaled_to_zero() -> None:
    cp, ctl = setup([rule(targetReplicas=0)], created=at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    assert cp.workloads[(NS, "Deployment", "web")] == 0


# ----- status conflicts: retried on a fresh read, no execution repeated -----


def test_status_conflict_is_retried_without_repeating_the_execution() -> None:
    cp, ctl = setup([rule()], created=at(9))
    cp.fail_next("update_cron_federated_hpa_status", ConflictError("changed"))
    ctl.reconcile(NS, "peak", at(9, 3))
    assert len(cp.scale_calls) == 1
    assert len(cp.events) == 1
    ok = history(cp).successful_executions
    assert ok is not None and len(ok) == 1


def test_status_that_cannot_be_written_is_written_later_without_re_running() -> None:
    cp, ctl = setup([rule()], created=at(9))
    cp.fail_next("update_cron_federated_hpa_status", *[ConflictError("changed") for _ in range(5)])
    assert ctl.reconcile(NS, "peak", at(9, 3)) == at(9, 3, 5)  # gave up for now: retry in 5 s
    assert cp.status_writes == 0
    assert ctl.reconcile(NS, "peak", at(9, 3, 5)) == at(10, 3)
    assert len(cp.scale_calls) == 1 and len(cp.events) == 1
    ok = history(cp).successful_executions
    assert ok is not None and [e.schedule_time for e in ok] == [at(9, 3)]


# ----- catch-up after downtime -----


def test_missed_beyond_max_delay_is_recorded_failed_with_the_delay() -> None:
    cp, ctl = setup([rule(schedule="0 9 * * *", maxDelaySeconds=300)], created=at(8))
    ctl.reconcile(NS, "peak", at(8))  # next 09:00
    ctl.reconcile(NS, "peak", at(11, 14))  # controller was down from 08:00 to 11:14
    assert cp.scale_calls == []
    failed = history(cp).failed_executions
    assert failed is not None
    assert failed[0].message == "missed by 2h14m; maxDelaySeconds is 300"
    assert failed[0].schedule_time == at(9)
    assert history(cp).next_execution_time == at(9, day=2)


def test_only_the_latest_missed_fire_runs_and_earlier_ones_are_counted() -> None:
    cp, ctl = setup([rule(schedule="*/10 * * * *", maxDelaySeconds=300)], created=at(8))
    ctl.reconcile(NS, "peak", at(8, 5))  # next 08:10
    ctl.reconcile(NS, "peak", at(8, 42))  # 08:10, 08:20, 08:30 missed; 08:40 is 2 min late
    assert len(cp.scale_calls) == 1
    ok = history(cp).successful_executions
    assert ok is not None and [e.schedule_time for e in ok] == [at(8, 40)]
    assert "3 earlier scheduled executions were skipped" in cp.events[0].message


def test_late_fire_with_earlier_skips_reports_count_in_failure() -> None:
    cp, ctl = setup([rule(schedule="0 * * * *", maxDelaySeconds=300)], created=at(8))
    ctl.reconcile(NS, "peak", at(8, 30))
    ctl.reconcile(NS, "peak", at(11, 30))
    failed = history(cp).failed_executions
    assert failed is not None
    assert failed[0].message.startswith("missed by 30m0s; maxDelaySeconds is 300; 2 earlier")


def test_default_max_delay_is_half_the_shortest_interval_when_below_a_minute() -> None:
    cp, ctl = setup([rule(schedule="* * * * *")], created=at(8))
    ctl.reconcile(NS, "peak", at(8))
    ctl.reconcile(NS, "peak", at(8, 1, 31))  # 31 s late; every minute -> limit 30 s
    assert cp.scale_calls == []
    failed = history(cp).failed_executions
    assert failed is not None and "limit is 30s" in failed[0].message


def test_same_schedule_time_never_runs_twice() -> None:
    cp, ctl = setup([rule()], created=at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    ctl.reconcile(NS, "peak", at(9, 3))
    ctl.reconcile(NS, "peak", at(9, 3, 30))
    assert len(cp.scale_calls) == 1


def test_history_is_the_guard_even_if_next_execution_time_is_lost() -> None:
    cp, ctl = setup([rule()], created=at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    stored = cp.crons[(NS, "peak")]
    assert stored.status is not None and stored.status.execution_histories is not None
    stale = stored.status.execution_histories[0].model_copy(update={"next_execution_time": at(9, 3)})
    cp.crons[(NS, "peak")] = stored.model_copy(
        update={"status": stored.status.model_copy(update={"execution_histories": [stale]})}
    )
    ctl.reconcile(NS, "peak", at(9, 3, 20))
    assert len(cp.scale_calls) == 1


# ----- suspend, rename, remove, limits -----


def test_suspend_clears_next_execution_time_and_stops_executions() -> None:
    cp, ctl = setup([rule(suspend=True)], created=at(9))
    assert ctl.reconcile(NS, "peak", at(9, 3)) is None
    assert history(cp).next_execution_time is None
    assert cp.scale_calls == []


def test_resume_does_not_catch_up_fires_during_suspension() -> None:
    cp, ctl = setup([rule()], created=at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    cron = cp.crons[(NS, "peak")]
    suspended = cron.spec.model_copy(
        update={"rules": [cron.spec.rules[0].model_copy(update={"suspend": True})]}
    )
    cp.crons[(NS, "peak")] = cron.model_copy(update={"spec": suspended})
    ctl.reconcile(NS, "peak", at(9, 30))
    cron = cp.crons[(NS, "peak")]
    resumed = cron.spec.model_copy(
        update={"rules": [cron.spec.rules[0].model_copy(update={"suspend": False})]}
    )
    cp.crons[(NS, "peak")] = cron.model_copy(update={"spec": resumed})
    assert ctl.reconcile(NS, "peak", at(12, 3, 10)) == at(13, 3)
    assert len(cp.scale_calls) == 1
    ok = history(cp).successful_executions
    assert ok is not None and len(ok) == 1  # history kept through suspension


def test_renamed_rule_starts_a_new_history_and_removed_rules_lose_theirs() -> None:
    cp, ctl = setup([rule(), rule(name="other", schedule="5 * * * *")], created=at(9))
    ctl.reconcile(NS, "peak", at(9, 3))
    cron = cp.crons[(NS, "peak")]
    renamed = cron.spec.model_copy(
        update={"rules": [cron.spec.rules[0].model_copy(update={"name": "renamed"})]}
    )
    cp.crons[(NS, "peak")] = cron.model_copy(update={"spec": renamed})
    ctl.reconcile(NS, "peak", at(9, 4))
    status = cp.crons[(NS, "peak")].status
    assert status is not None and status.execution_histories is not None
    assert [h.rule_name for h in status.execution_histories] == ["renamed"]
    assert status.execution_histories[0].successful_executions is None
    assert status.execution_histories[0].next_execution_time == at(10, 3)


def test_history_newest_first_and_trimmed() -> None:
    cp, ctl = setup([rule(schedule="*/10 * * * *", successfulHistoryLimit=2)], created=at(8, 5))
    for minute in (10, 20, 30, 40):
        ctl.reconcile(NS, "peak", at(8, minute))
    ok = history(cp).successful_executions
    assert ok is not None and [e.schedule_time for e in ok] == [at(8, 40), at(8, 30)]


def test_failed_history_limit_zero_keeps_none() -> None:
    rules = [{"name": "r", "schedule": "*/10 * * * *", "targetMinReplicas": 99, "failedHistoryLimit": 0}]
    cp, ctl = setup(rules, FHPA_REF, at(8, 5))
    ctl.reconcile(NS, "peak", at(8, 10))
    ctl.reconcile(NS, "peak", at(8, 20))
    h = history(cp)
    assert h.failed_executions is None
    assert h.next_execution_time == at(8, 30)
    assert cp.reasons() == [SCALE_FAILED, SCALE_FAILED]  # the Event still says what happened


def test_invalid_rule_is_reported_and_not_scheduled() -> None:
    cp, ctl = setup([rule(schedule="@every 1h")], created=at(9))
    assert ctl.reconcile(NS, "peak", at(9)) is None
    assert cp.reasons() == ["InvalidRule"]
    assert history(cp).next_execution_time is None


def test_deleted_object_needs_no_wakeup() -> None:
    cp, ctl = setup([rule()], created=at(9))
    del cp.crons[(NS, "peak")]
    assert ctl.reconcile(NS, "peak", at(9)) is None


# ----- restart in the middle of a schedule -----


def drive(
    cp: FakeControlPlane,
    start: datetime,
    end: datetime,
    down: tuple[datetime, datetime],
    restart_delay: float,
) -> None:
    """Run a timer-driven controller; it is down during ``down`` and a new instance takes over after."""
    ctl = CronController(cp)
    now = start
    wake = ctl.reconcile(NS, "peak", now)
    while wake is not None and wake <= end:
        now = wake
        if down[0] <= now < down[1]:
            ctl = CronController(cp)  # the old process died; a new one starts when the outage ends
            now = down[1] + timedelta(seconds=restart_delay)
        wake = ctl.reconcile(NS, "peak", now)


def test_restart_within_max_delay_neither_skips_nor_repeats() -> None:
    cp = FakeControlPlane()
    cp.workloads[(NS, "Deployment", "web")] = 1
    cp.add(make_cron([rule(schedule="*/15 * * * *", maxDelaySeconds=120)], created=at(8)))
    drive(cp, at(8), at(10), down=(at(8, 44), at(8, 45, 30)), restart_delay=30)  # 08:45 runs 60 s late
    ok = history(cp).successful_executions
    assert len(cp.scale_calls) == 8  # 08:15 .. 10:00, every fire exactly once
    assert ok is not None and ok[0].schedule_time == at(10) and len(ok) == 3
    assert history(cp).failed_executions is None


def test_restart_beyond_max_delay_records_the_miss_once() -> None:
    cp = FakeControlPlane()
    cp.workloads[(NS, "Deployment", "web")] = 1
    cp.add(make_cron([rule(schedule="*/15 * * * *", maxDelaySeconds=120)], created=at(8)))
    drive(cp, at(8), at(10), down=(at(8, 44), at(8, 45, 30)), restart_delay=32 * 60 + 30)  # back at 09:18
    failed = history(cp).failed_executions
    assert failed is not None and len(failed) == 1
    assert failed[0].schedule_time == at(9, 15)
    assert failed[0].message == (
        "missed by 3m0s; maxDelaySeconds is 120; "
        "2 earlier scheduled executions were skipped since 2026-06-01T08:45:00Z"
    )
    assert len(cp.scale_calls) == 8 - 3  # 08:45 and 09:00 skipped, 09:15 too late


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.integers(min_value=1, max_value=3 * 3600), min_size=1, max_size=25),
    max_delay=st.sampled_from([30, 120, 299]),
)
def test_property_each_fire_runs_at_most_once_and_is_never_lost_within_max_delay(
    gaps: list[int], max_delay: int
) -> None:
    """Reconciles at arbitrary moments (restarts included): every run is a distinct fire, and a fire whose
    first reconcile after it came within maxDelaySeconds, with no later fire before that reconcile, runs."""
    cp = FakeControlPlane()
    cp.workloads[(NS, "Deployment", "web")] = 1
    cp.add(
        make_cron(
            [rule(schedule="*/5 * * * *", maxDelaySeconds=max_delay, successfulHistoryLimit=32)],
            created=at(8),
        )
    )
    now = at(8)
    moments = [now]
    for gap in gaps:
        now += timedelta(seconds=gap)
        moments.append(now)
    ran: list[datetime] = []
    for moment in moments:
        before = len(cp.scale_calls)
        CronController(cp).reconcile(NS, "peak", moment)  # a fresh process each time: state only in status
        if len(cp.scale_calls) > before:
            ok = history(cp).successful_executions
            assert ok is not None
            ran.append(ok[0].schedule_time)
    assert len(ran) == len(set(ran))
    for previous, moment in itertools.pairwise(moments):
        latest = moment.replace(minute=moment.minute - moment.minute % 5, second=0)
        if latest > previous and (moment - latest).total_seconds() <= max_delay:
            assert latest in ran


# ----- issue 12: a refused write is retried; one fire is applied once across leaders -----


def test_a_fire_whose_write_was_refused_is_retried_while_its_window_is_open() -> None:
    """7(c): the API server (or a webhook) refuses the scale write at 09:03:00; the fire stays owed and
    runs on the retry at 09:03:06, inside the default 60 s window; nothing is recorded as failed."""
    cp, ctl = setup([rule()], created=at(9, 1))
    ctl.reconcile(NS, "peak", at(9, 1))
    cp.fail_next("scale_workload", PortError("admission webhook denied the request"))
    wake = ctl.reconcile(NS, "peak", at(9, 3))
    assert wake == at(9, 3) + RETRY_AFTER
    assert cp.scale_calls == []
    assert history(cp).next_execution_time == at(9, 3)  # still owed
    assert history(cp).failed_executions is None
    assert SCALE_RETRYING in cp.reasons()
    assert ctl.reconcile(NS, "peak", at(9, 3, 6)) == at(10, 3)
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]
    h = history(cp)
    assert h.successful_executions is not None and h.successful_executions[0].schedule_time == at(9, 3)
    assert h.failed_executions is None


def test_a_refused_write_is_recorded_as_failed_when_the_window_closes() -> None:
    cp, ctl = setup([rule()], created=at(9, 1))
    ctl.reconcile(NS, "peak", at(9, 1))
    cp.fail_next("scale_workload", PortError("denied"))
    ctl.reconcile(NS, "peak", at(9, 3, 57))  # 57 s late: a retry 5 s on would be past the 60 s window
    h = history(cp)
    assert h.failed_executions is not None and h.failed_executions[0].schedule_time == at(9, 3)
    assert "denied" in (h.failed_executions[0].message or "")


def test_a_refused_fire_is_not_retried_by_passes_sooner_than_its_backoff() -> None:
    """A pass triggered by anything else (a watch event, the status write of the refusal itself) does not
    try the write again before its retry is due; the delays are 5 s, then 10 s, then 20 s, and the fire is
    recorded failed once the next retry would fall outside its window."""
    cp, ctl = setup([rule()], created=at(9, 1))
    ctl.reconcile(NS, "peak", at(9, 1))
    attempts: list[datetime] = []

    def refusing(*args: Any, **kwargs: Any) -> Any:
        attempts.append(now[0])
        raise PortError("admission webhook denied the request")

    cp.scale_workload = refusing  # type: ignore[method-assign]
    now = [at(9, 3)]
    wakes = []
    for tenth in range(0, 400):  # 40 s of passes, ten a second
        now[0] = at(9, 3) + timedelta(seconds=tenth / 10)
        wakes.append(ctl.reconcile(NS, "peak", now[0]))
    assert attempts == [at(9, 3), at(9, 3, 5), at(9, 3, 15), at(9, 3, 35)]
    assert wakes[0] == at(9, 3, 5)
    assert cp.reasons().count(SCALE_RETRYING) == 3  # the fourth refusal's retry (75 s) is past the window
    h = history(cp)
    assert h.failed_executions is not None and h.failed_executions[0].schedule_time == at(9, 3)


class ConditionalControlPlane(FakeControlPlane):
    """The fake with conditional writes and a Scale resourceVersion per workload; it logs the order of
    status and scale writes so the marker can be seen to come first."""

    def __init__(self) -> None:
        super().__init__()
        self.scale_versions: dict[tuple[str, str, str], int] = {}
        self.order: list[str] = []

    def get_scale(self, namespace: str, target: Any) -> tuple[int, str]:
        key = (namespace, target.kind, target.name)
        return self.workloads[key], str(self.scale_versions.setdefault(key, 1))

    def scale_workload_if_unchanged(
        self, namespace: str, target: Any, replicas: int, resource_version: str
    ) -> None:
        key = (namespace, target.kind, target.name)
        if str(self.scale_versions.setdefault(key, 1)) != resource_version:
            raise ConflictError("scale moved")
        self.order.append("scale")
        self.scale_versions[key] += 1
        self.scale_workload(namespace, target, replicas)

    def patch_federated_hpa_bounds_if_unchanged(
        self, namespace: str, name: str, lo: int | None, hi: int | None, resource_version: str
    ) -> FederatedHPA:
        if self.fhpas[(namespace, name)].metadata.resource_version != resource_version:
            raise ConflictError("moved")
        return self.patch_federated_hpa_bounds(namespace, name, lo, hi)

    def update_cron_federated_hpa_status(self, cron: CronFederatedHPA, status: Any) -> CronFederatedHPA:
        written = super().update_cron_federated_hpa_status(cron, status)
        marked = any(c.type == MARKER_TYPE for c in (status.conditions or []))
        self.order.append("marker" if marked else "status")
        return written


def conditional_setup() -> tuple[ConditionalControlPlane, CronController]:
    cp = ConditionalControlPlane()
    cp.workloads[(NS, "Deployment", "web")] = 1
    cp.add(make_fhpa())
    cp.add(make_cron([rule()], None, at(9, 1)))
    return cp, CronController(cp, identity="a")


def test_the_marker_is_written_before_the_scale_and_removed_after() -> None:
    cp, ctl = conditional_setup()
    ctl.reconcile(NS, "peak", at(9, 1))
    cp.order.clear()
    ctl.reconcile(NS, "peak", at(9, 3))
    assert cp.order == ["marker", "scale", "status"]
    status = cp.crons[(NS, "peak")].status
    assert status is not None and not [c for c in status.conditions or [] if c.type == MARKER_TYPE]


def test_a_successor_uses_the_old_leaders_version_so_only_one_write_lands() -> None:
    """The old leader marked the fire and its write is still in flight; the successor writes with the
    marker's version. Whichever comes second conflicts: the fire is applied once."""
    cp, old = conditional_setup()
    old.reconcile(NS, "peak", at(9, 1))
    held: list[tuple[str, Any, int, str]] = []
    real = cp.scale_workload_if_unchanged

    def send_and_die(ns: str, t: Any, n: int, rv: str) -> None:
        held.append((ns, t, n, rv))
        raise NotLeaderError("the old leader stops here")

    cp.scale_workload_if_unchanged = send_and_die  # type: ignore[method-assign]
    with pytest.raises(NotLeaderError):
        old.reconcile(NS, "peak", at(9, 3))  # marks, "sends" the write (held), stops before recording
    cp.scale_workload_if_unchanged = real  # type: ignore[method-assign]
    assert held and cp.scale_calls == []
    new = CronController(cp, identity="b")
    new.reconcile(NS, "peak", at(9, 3, 5))
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]
    ns, target, replicas, version = held[0]
    with pytest.raises(ConflictError):
        cp.scale_workload_if_unchanged(ns, target, replicas, version)  # the old leader's write lands late
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]  # applied once
    h = history(cp)
    assert h.successful_executions is not None and len(h.successful_executions) == 1


def test_bounds_of_a_federated_hpa_are_patched_once_after_the_marker_with_a_precondition() -> None:
    cp = ConditionalControlPlane()
    cp.add(make_fhpa())
    cp.add(
        make_cron([rule(targetReplicas=None, targetMinReplicas=4, targetMaxReplicas=12)], FHPA_REF, at(9, 1))
    )
    preconditions: list[str] = []
    real = cp.patch_federated_hpa_bounds_if_unchanged

    def spy(ns: str, name: str, lo: int | None, hi: int | None, rv: str) -> FederatedHPA:
        cp.order.append("patch")
        preconditions.append(rv)
        return real(ns, name, lo, hi, rv)

    cp.patch_federated_hpa_bounds_if_unchanged = spy  # type: ignore[method-assign]
    ctl = CronController(cp, identity="a")
    ctl.reconcile(NS, "peak", at(9, 1))
    cp.order.clear()
    ctl.reconcile(NS, "peak", at(9, 3))
    assert cp.order == ["marker", "patch", "status"]
    assert cp.patch_calls == [(NS, "web", 4, 12)]
    assert preconditions and preconditions[0]  # the FederatedHPA's resourceVersion as read
    assert ctl.reconcile(NS, "peak", at(9, 3, 20)) == at(10, 3)
    assert cp.patch_calls == [(NS, "web", 4, 12)]  # not again


def test_the_cron_reconciler_answers_its_next_wake_up_as_a_requeue_after() -> None:
    from controller.cron_controller import CronFederatedHPAReconciler
    from controller.result import Result

    now = datetime(2026, 6, 1, 8, 0, 0, tzinfo=UTC)

    class Runner:
        def __init__(self, wake: datetime | None) -> None:
            self.wake = wake

        def reconcile(self, namespace: str, name: str, at: datetime) -> datetime | None:
            assert at == now
            return self.wake

    class Clock:
        def now(self) -> datetime:
            return now

    wakes = CronFederatedHPAReconciler(Runner(now + timedelta(seconds=90)), Clock())  # type: ignore[arg-type]
    assert wakes.reconcile("ns", "c") == Result(90.0)
    assert CronFederatedHPAReconciler(Runner(None), Clock()).reconcile("ns", "c") == Result()  # type: ignore[arg-type]


def test_status_summarises_the_next_execution_and_the_last_result_for_kubectl_get() -> None:
    cp, ctl = setup([rule(), rule(name="late", schedule="30 * * * *")], created=at(9, 1))
    ctl.reconcile(NS, "peak", at(9, 1))
    status = cp.crons[(NS, "peak")].status
    assert status is not None and (status.next_execution_time, status.last_result) == (at(9, 3), None)
    ctl.reconcile(NS, "peak", at(9, 3))
    status = cp.crons[(NS, "peak")].status
    assert status is not None and (status.next_execution_time, status.last_result) == (
        at(9, 30),
        "Succeeded (r)",
    )


# ----- exclusion dates -----


def test_an_excluded_day_does_not_fire_is_not_recorded_and_next_execution_skips_it() -> None:
    cp, ctl = setup([rule(schedule="0 9 * * *", excludeDates=["2026-06-02..2026-06-03"])], created=at(0))
    assert ctl.reconcile(NS, "peak", at(9)) == at(9, day=4)  # the 1st fires; the 2nd and 3rd are holidays
    assert ctl.reconcile(NS, "peak", at(9, day=2)) == at(9, day=4)  # woken on a holiday: nothing owed
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]
    h = history(cp)
    assert h.failed_executions is None and len(h.successful_executions or []) == 1
    assert h.next_execution_time == at(9, day=4)


def test_a_calendar_config_map_is_read_from_the_objects_namespace() -> None:
    cp, ctl = setup([rule(schedule="0 9 * * *", excludeCalendarRef={"name": "holidays"})], created=at(0))
    cp.config_maps[(NS, "holidays")] = {"dates": "# team holidays\n2026-06-01\n"}
    assert ctl.reconcile(NS, "peak", at(0)) == at(9, day=2)
    cp.config_maps[(NS, "holidays")] = {"dates": "2026-06-01..2026-06-02\n"}  # edited: read again
    assert ctl.reconcile(NS, "peak", at(1)) == at(9, day=3)


@pytest.mark.parametrize(
    ("maps", "says"),
    [
        ({}, "ConfigMap shop/holidays not found"),
        ({(NS, "holidays"): {"other": "2026-06-01"}}, "has no key 'dates'"),
        ({(NS, "holidays"): {"dates": "2026-06-31"}}, "calendar holidays/dates: line 1"),
    ],
)
def test_a_rule_whose_calendar_cannot_be_read_does_not_fire_and_says_why(
    maps: dict[tuple[str, str], dict[str, str]], says: str
) -> None:
    cp, ctl = setup([rule(schedule="0 9 * * *", excludeCalendarRef={"name": "holidays"})], created=at(0))
    cp.config_maps.update(maps)
    assert ctl.reconcile(NS, "peak", at(9)) is None
    assert cp.scale_calls == []
    assert history(cp).next_execution_time is None
    assert cp.reasons() == ["InvalidRule"] and says in cp.events[0].message
