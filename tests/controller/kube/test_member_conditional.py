"""Member writes are conditional on what the plan was made from (issue 12 M1).

Each test observes a member (FakeKube over HTTP), lets someone change it between that observation and
the execution of the plan made from it, and checks the member write is refused with 409 rather than
applied over the change; and that a decision already applied is not applied again (decision key).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from controller.executor import ExecutionResult, execute
from controller.kube.member import KubeMemberCluster
from controller.kube.member_cache import CacheNotSyncedError
from controller.planning.member_hpa import ANNOTATION_DECISION, decision_key, render_spec
from controller.planning.observation import ClusterObservation
from controller.planning.plan import HPAAction, Plan, ReplicaWrite, bind
from controller.ports import ControlPlane
from controller.reconcile import reconcile_federated_hpa
from fhpa_api.models import ClusterStatus, FederatedHPA, FederatedHPAStatus
from tests.controller.kube.test_member_cache import FAST
from tests.support.fakekube import FakeKube
from tests.support.member_world import HPAS, FixedClock, RecordingControlPlane, make_fhpa
from tests.support.member_world import make_member as polling_member

_STARTED: list[KubeMemberCluster] = []
_WATCH = {"on": False}


@pytest.fixture(autouse=True, params=[False, True], ids=["polling", "watch-cache"])
def member_mode(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test twice: members reading the API, and members reading their watch-backed cache (the
    controller's default), whose view may be a moment behind: the 409s must be the same."""
    _WATCH["on"] = request.param
    yield
    while _STARTED:
        _STARTED.pop().close()


def caught_up(member: KubeMemberCluster, fake: FakeKube, timeout: float = 30.0) -> None:
    """With a watch cache: wait until it holds the member HPA and the workload at the server's
    resourceVersions (a test that means "observe after the change" must not race the watch)."""
    cache = member.cache
    if cache is None:
        return

    def rv(obj: dict[str, Any] | None) -> Any:
        return (obj or {}).get("metadata", {}).get("resourceVersion")

    end = time.monotonic() + timeout
    while True:
        hpa_ok = rv(cache.hpa("default", "web")) == rv(fake.store.find(HPAS, "default", "web"))
        try:
            workload = cache.workload(("apps", "Deployment"), "default", "web")
            workload_ok = rv(workload) == rv(fake.store.find("deployments", "default", "web"))
        except CacheNotSyncedError:  # the kind is not watched before the first observe: nothing to wait for
            workload_ok = True
        if hpa_ok and workload_ok:
            return
        assert time.monotonic() < end, "the watch cache never caught up"
        time.sleep(0.01)


def make_member(fake: FakeKube, name: str = "m1") -> KubeMemberCluster:
    member = polling_member(fake, name)
    if not _WATCH["on"]:
        return member
    cached = KubeMemberCluster(
        member.identity,
        member.client,
        watch=True,
        cache_options={"backoff": FAST, "min_watch_interval": 0.05},
    )
    cached.start()
    assert cached.cache is not None and cached.cache.wait_synced(30)
    _STARTED.append(cached)
    return cached


def someone_changes(fake: FakeKube, resource: str, change: dict[str, Any]) -> str:
    """Another writer (a user, another leader) updates the object's spec; returns the new resourceVersion."""
    obj = fake.store.get(resource, "default", "web")
    obj["spec"].update(change)
    obj["metadata"].pop("resourceVersion")
    return str(fake.store.update(resource, obj)["metadata"]["resourceVersion"])


def update_plan(fhpa: FederatedHPA, lo: int, hi: int, cluster: str = "m1") -> Plan:
    spec = cast(dict[str, object], render_spec(fhpa, lo, hi))
    return Plan(
        hpa_actions=[HPAAction(cluster=cluster, op="update", min_replicas=lo, max_replicas=hi, spec=spec)],
        status=FederatedHPAStatus(clusters=[ClusterStatus(name=cluster)]),
    )


def run(
    plan: Plan, fhpa: FederatedHPA, member: KubeMemberCluster, seen: ClusterObservation
) -> ExecutionResult:
    """Execute ``plan`` as reconcile does: bound to the observation it was made from."""
    cp = cast(ControlPlane, RecordingControlPlane())
    return execute(bind(plan, fhpa, [seen]), fhpa, {"m1": member}, cp)


def decision_row(result: ExecutionResult) -> str | None:
    assert result.updated is not None and result.updated.status is not None
    [row] = result.updated.status.clusters or []
    return row.decision_key


def test_the_observation_carries_the_versions_and_the_decision(fake: FakeKube) -> None:
    member, fhpa = make_member(fake), make_fhpa()
    spec = render_spec(fhpa, 1, 5)
    member.apply_hpa(fhpa, spec, decision="k1")
    seen = member.observe(fhpa)
    stored = fake.store.get(HPAS, "default", "web")
    assert seen.hpa is not None and seen.hpa.resource_version == stored["metadata"]["resourceVersion"]
    assert seen.hpa.uid == stored["metadata"]["uid"] and seen.hpa.decision == "k1"
    deployment = fake.store.get("deployments", "default", "web")
    assert seen.scale_resource_version == deployment["metadata"]["resourceVersion"]


def test_a_stale_hpa_update_is_refused_with_409_and_not_applied(fake: FakeKube) -> None:
    member, fhpa = make_member(fake), make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    seen = member.observe(fhpa)  # the pass observes: max 5 at resourceVersion R1
    assert seen.hpa is not None
    observed_rv = seen.hpa.resource_version
    someone_changes(fake, HPAS, {"maxReplicas": 3})  # R2: changed after we looked
    result = run(update_plan(fhpa, 1, 9), fhpa, member, seen)  # a plan made from R1
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 3  # the change stands
    put = fake.requests_matching("PUT", HPAS)[-1]
    assert put.body["metadata"]["resourceVersion"] == observed_rv  # the observed version, not a re-read
    assert list(result.stale) == ["update/m1"] and result.conflict and not result.failed
    assert len(fake.requests_matching("PUT", HPAS)) == 1  # no retry with a fresh read
    assert decision_row(result) is None  # not applied: the row keeps what was observed


def test_a_stale_delete_is_refused(fake: FakeKube) -> None:
    member, fhpa = make_member(fake), make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    seen = member.observe(fhpa)
    someone_changes(fake, HPAS, {"maxReplicas": 3})
    plan = Plan(hpa_actions=[HPAAction(cluster="m1", op="delete")], status=FederatedHPAStatus())
    result = run(plan, fhpa, member, seen)
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 3
    assert list(result.stale) == ["delete/m1"]


def test_a_create_planned_from_absence_is_a_create(fake: FakeKube) -> None:
    """Planned when no HPA was there: a POST, and one made meanwhile (with another spec) answers 409."""
    member, fhpa = make_member(fake), make_fhpa()
    seen = member.observe(fhpa)
    assert seen.hpa is None
    member.apply_hpa(fhpa, render_spec(fhpa, 2, 4))  # someone (another leader) created one meanwhile
    plan = update_plan(fhpa, 1, 9)
    plan.hpa_actions[0].op = "create"
    result = run(plan, fhpa, member, seen)
    assert list(result.stale) == ["create/m1"]
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 4
    assert not fake.requests_matching("PUT", HPAS)


def test_two_controllers_executing_one_plan_apply_it_once(fake: FakeKube) -> None:
    """Two leaders (an old one not yet fenced, a new one) hold the same decision, made from the same
    observation. The first applies it and records its key; the second sees the key on the HPA and does
    not write. When the first has meanwhile moved on to a newer decision, the second's late write of the
    old one is refused (409): the old decision is never applied twice, nor over the newer one."""
    a, b, fhpa = make_member(fake, "m1"), make_member(fake, "m1"), make_fhpa()
    a.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    caught_up(b, fake)  # both leaders observe the same HPA (with watch caches: once b's has seen it)
    seen_a, seen_b = a.observe(fhpa), b.observe(fhpa)
    plan = update_plan(fhpa, 1, 9)
    key = decision_key(fhpa, "m1", render_spec(fhpa, 1, 9))

    first = run(plan, fhpa, a, seen_a)
    assert first.done == ["update/m1"] and decision_row(first) == key
    assert fake.store.get(HPAS, "default", "web")["metadata"]["annotations"][ANNOTATION_DECISION] == key
    second = run(plan, fhpa, b, seen_b)  # the same decision again
    assert second.done == ["update/m1"] and decision_row(second) == key  # as applied, by the other
    # one write applied; a watch cache that had not yet seen it may have tried once more, refused (409)
    applied = [r for r in fake.requests_matching("PUT", HPAS) if r.status is not None and r.status < 300]
    assert len(applied) == 1
    if not _WATCH["on"]:  # reading the API, the second sees the key and sends nothing
        assert len(fake.requests_matching("PUT", HPAS)) == 1

    # a newer decision by the new leader; then the old leader's late copy of the first one
    newer = run(update_plan(fhpa, 1, 7), fhpa, a, a.observe(fhpa))
    assert newer.done == ["update/m1"]
    caught_up(b, fake)
    late = run(plan, fhpa, b, seen_b)
    assert list(late.stale) == ["update/m1"]
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 7
    applied = [r for r in fake.requests_matching("PUT", HPAS) if r.status is not None and r.status < 300]
    assert len(applied) == 2  # first and newer; the late one refused


def test_a_scale_write_is_conditional_on_the_observed_scale(fake: FakeKube) -> None:
    member, fhpa = make_member(fake), make_fhpa()
    seen = member.observe(fhpa)  # 3 replicas at the Scale's resourceVersion R1
    assert seen.current_replicas == 3 and seen.scale_resource_version is not None
    someone_changes(fake, "deployments", {"replicas": 6})  # another writer scales after we looked
    plan = Plan(
        replica_writes=[ReplicaWrite(cluster="m1", replicas=4, reason="test")], status=FederatedHPAStatus()
    )
    result = run(plan, fhpa, member, seen)
    assert fake.store.get("deployments", "default", "web")["spec"]["replicas"] == 6  # theirs stands
    [put] = fake.requests_matching("PUT", "/deployments/web/scale")
    assert put.body["metadata"]["resourceVersion"] == seen.scale_resource_version
    assert list(result.stale) == ["scale/m1"] and result.conflict

    caught_up(member, fake)
    fresh = member.observe(fhpa)  # the next pass replans from a fresh observation, and writes
    assert run(plan, fhpa, member, fresh).done == ["scale/m1"]
    assert fake.store.get("deployments", "default", "web")["spec"]["replicas"] == 4


def test_a_scale_write_from_the_cache_does_not_read_the_scale_first(fake: FakeKube) -> None:
    member, fhpa = make_member(fake), make_fhpa()
    caught_up(member, fake)
    seen = member.observe(fhpa)
    plan = Plan(
        replica_writes=[ReplicaWrite(cluster="m1", replicas=4, reason="test")], status=FederatedHPAStatus()
    )
    before = len(fake.requests_matching("GET", "/deployments/web/scale$"))
    assert run(plan, fhpa, member, seen).done == ["scale/m1"]
    assert fake.store.get("deployments", "default", "web")["spec"]["replicas"] == 4
    reads = len(fake.requests_matching("GET", "/deployments/web/scale$")) - before
    assert reads == (0 if member.cache is not None else 1)  # the cache held it at the observed version


def test_the_status_row_records_the_decision_through_reconciles(fake: FakeKube) -> None:
    """Through the real planner: the pass that creates the HPA records the key it stamped; a pass with
    nothing to write records the key observed on the HPA; a pass that cannot see the cluster keeps it."""
    member, fhpa = make_member(fake), make_fhpa()
    cp = cast(ControlPlane, RecordingControlPlane())
    members: dict[str, Any] = {"m1": member}
    first_plan, first = reconcile_federated_hpa(fhpa, members, cp, FixedClock())
    [action] = first_plan.hpa_actions
    assert action.op == "create" and action.decision is not None
    stored = fake.store.get(HPAS, "default", "web")["metadata"]["annotations"][ANNOTATION_DECISION]
    assert stored == action.decision == decision_row(first)

    assert first.updated is not None
    second_plan, second = reconcile_federated_hpa(first.updated, members, cp, FixedClock())
    assert not second_plan.hpa_actions and decision_row(second) == action.decision

    assert second.updated is not None
    fake.faults.add("GET", HPAS, status=500)  # the cluster cannot be observed
    _, third = reconcile_federated_hpa(second.updated, members, cp, FixedClock())
    assert decision_row(third) == action.decision
