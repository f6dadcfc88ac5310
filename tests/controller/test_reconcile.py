"""One reconcile: every member observed (an unreachable one as unhealthy, identity kept), planned, run."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

import controller.reconcile as reconcile_module
from controller.errors import NotFoundError
from controller.executor import ActionHook, ExecutionResult
from controller.planning.member_hpa import render_spec
from controller.planning.observation import ClusterObservation, MemberHPAObservation, Taint
from controller.planning.plan import HPAAction, Plan
from controller.planning.planner import PlannerConfig
from controller.ports import ClusterIdentity, ControlPlane, MemberCluster
from controller.reconcile import observe_all, reconcile_federated_hpa
from fhpa_api.models import FederatedHPA, FederatedHPAStatus
from tests.support.member_fakes import FakeMember, LoggingControlPlane

NOW = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)
NO_EXECUTE = Taint(key="maintenance", value="yes", effect="NoExecute")


class FixedClock:
    def now(self) -> datetime:
        return NOW


def make_fhpa(**spec: Any) -> FederatedHPA:
    body = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 10,
        **spec,
    }
    return FederatedHPA.model_validate(
        {"metadata": {"name": "web", "namespace": "shop", "uid": "u1"}, "spec": body}
    )


def hpa(max_replicas: int) -> MemberHPAObservation:
    return MemberHPAObservation(name="web", owned=True, min_replicas=1, max_replicas=max_replicas)


class Fleet:
    def __init__(self, fhpa: FederatedHPA) -> None:
        self.calls: list[str] = []
        self.control_plane = LoggingControlPlane(calls=self.calls)
        self.control_plane.add(fhpa)
        self.members: dict[str, FakeMember] = {}

    def member(self, identity: ClusterIdentity, **kw: Any) -> FakeMember:
        self.members[identity.name] = FakeMember(identity, self.calls, **kw)
        return self.members[identity.name]

    @property
    def fhpa(self) -> FederatedHPA:
        return self.control_plane.fhpas[("shop", "web")]

    def ports(self) -> dict[str, MemberCluster]:
        return dict(self.members)


def test_an_unreachable_cluster_is_observed_unhealthy_with_its_identity() -> None:
    fleet = Fleet(make_fhpa())
    down = ClusterIdentity(
        name="b",
        labels={"env": "prod"},
        provider="aws",
        region="eu-west-1",
        zone="eu-west-1a",
        taints=[NO_EXECUTE],
    )
    fleet.member(ClusterIdentity(name="a", labels={"env": "prod"}))
    fleet.member(down, reachable=False)
    observations = observe_all(fleet.fhpa, fleet.ports())
    assert [o.name for o in observations] == ["a", "b"]
    assert observations[0].healthy
    b = observations[1]
    assert not b.healthy
    assert (b.labels, b.provider, b.region, b.zone, b.taints) == (
        {"env": "prod"},
        "aws",
        "eu-west-1",
        "eu-west-1a",
        [NO_EXECUTE],
    )
    assert b.hpa is None


def test_observations_are_sorted_by_cluster_name_and_each_cluster_is_asked_once() -> None:
    fleet = Fleet(make_fhpa())
    for name in ["c", "a", "b"]:
        fleet.member(ClusterIdentity(name=name))
    assert [o.name for o in observe_all(fleet.fhpa, fleet.ports())] == ["a", "b", "c"]
    assert fleet.calls == ["observe/a", "observe/b", "observe/c"]


def test_an_observation_is_passed_through_unchanged() -> None:
    fleet = Fleet(make_fhpa())
    seen = ClusterObservation(name="a", current_replicas=4, ready_replicas=3, hpa=hpa(6))
    fleet.member(ClusterIdentity(name="a"), observation=seen)
    assert observe_all(fleet.fhpa, fleet.ports()) == [seen]


def test_a_down_cluster_keeps_its_affinity_through_the_planner() -> None:
    """A down cluster's labels still select it: it keeps its status row (and fails over), not vanishing."""
    fhpa = make_fhpa(clusterAffinity={"labelSelector": {"matchLabels": {"env": "prod"}}})
    fleet = Fleet(fhpa)
    fleet.member(ClusterIdentity(name="a", labels={"env": "prod"}))
    fleet.member(ClusterIdentity(name="b", labels={"env": "prod"}), reachable=False)
    fleet.member(ClusterIdentity(name="c", labels={"env": "dev"}), reachable=False)
    the_plan, result = reconcile_federated_hpa(fleet.fhpa, fleet.ports(), fleet.control_plane, FixedClock())
    assert the_plan.status.clusters is not None
    assert [row.name for row in the_plan.status.clusters] == ["a", "b"]
    assert result.updated is not None and result.updated.status == written(the_plan)


def written(the_plan: Plan) -> FederatedHPAStatus:
    """The plan's status with the decision keys of the member writes it applied (all succeed here)."""
    status = the_plan.status.model_copy(deep=True)
    decisions = {a.cluster: a.decision for a in the_plan.hpa_actions}
    for row in status.clusters or []:
        if row.name in decisions:
            row.decision_key = decisions[row.name]
    return status


def test_the_plan_is_executed() -> None:
    fleet = Fleet(make_fhpa())
    fleet.member(ClusterIdentity(name="a"), observation=ClusterObservation(name="a", current_replicas=1))
    fleet.member(ClusterIdentity(name="b"), observation=ClusterObservation(name="b", current_replicas=1))
    hooked: list[tuple[str, str, bool]] = []
    the_plan, result = reconcile_federated_hpa(
        fleet.fhpa,
        fleet.ports(),
        fleet.control_plane,
        FixedClock(),
        on_action=lambda kind, cluster, ok: hooked.append((kind, cluster, ok)),
    )
    assert {(a.cluster, a.op) for a in the_plan.hpa_actions} == {("a", "create"), ("b", "create")}
    expected_spec = render_spec(fleet.fhpa, 2, 10)
    assert fleet.members["a"].hpa_specs == {"web": expected_spec}
    assert fleet.members["b"].hpa_specs == {"web": expected_spec}
    assert result.ok
    assert fleet.calls[:2] == ["observe/a", "observe/b"]
    assert "status" in fleet.calls
    assert ("create", "a", True) in hooked and ("create", "b", True) in hooked
    stored = fleet.control_plane.fhpas[("shop", "web")]
    assert stored.status == written(the_plan)
    # each row records the decision key its member HPA now holds: the one each create stamped
    keys = {row.name: row.decision_key for row in stored.status.clusters or []}
    assert keys == {a.cluster: a.decision for a in the_plan.hpa_actions} and None not in keys.values()
    assert stored.status is not None and stored.status.last_scale_time == NOW


class Spy:
    """Stands in for the planner and the executor to see what reconcile hands them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plan = Plan(hpa_actions=[HPAAction(cluster="a", op="delete")], status=FederatedHPAStatus())
        self.planned: list[tuple[list[ClusterObservation], datetime, PlannerConfig]] = []
        self.executed: list[dict[str, Any]] = []
        monkeypatch.setattr(reconcile_module, "plan", self._plan)
        monkeypatch.setattr(reconcile_module, "execute", self._execute)

    def _plan(
        self, fhpa: FederatedHPA, observations: list[ClusterObservation], now: datetime, config: PlannerConfig
    ) -> Plan:
        self.planned.append((observations, now, config))
        return self.plan

    def _execute(
        self,
        plan: Plan,
        fhpa: FederatedHPA,
        members: Mapping[str, MemberCluster],
        control_plane: ControlPlane,
        current_max: Mapping[str, int] | None = None,
        on_action: ActionHook | None = None,
        now: datetime | None = None,
    ) -> ExecutionResult:
        self.executed.append(
            {"plan": plan, "members": members, "current_max": current_max, "on_action": on_action, "now": now}
        )
        return ExecutionResult(done=["spy"])


def test_current_max_is_passed_from_the_observed_hpas(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = Spy(monkeypatch)
    fleet = Fleet(make_fhpa())
    fleet.member(ClusterIdentity(name="a"), observation=ClusterObservation(name="a", hpa=hpa(7)))
    fleet.member(ClusterIdentity(name="b"), observation=ClusterObservation(name="b"))  # no member HPA yet
    fleet.member(ClusterIdentity(name="c"), observation=ClusterObservation(name="c", hpa=hpa(0)))
    fleet.member(ClusterIdentity(name="d"), reachable=False)

    def hook(kind: str, cluster: str, ok: bool) -> None:
        return None

    the_plan, result = reconcile_federated_hpa(
        fleet.fhpa, fleet.ports(), fleet.control_plane, FixedClock(), on_action=hook
    )
    # bound to the observations (member writes made conditional on them): equal here, nothing was versioned
    assert the_plan == spy.plan and result.done == ["spy"]
    [call] = spy.executed
    assert call["current_max"] == {"a": 7, "c": 0}
    assert call["plan"] is the_plan and call["on_action"] is hook
    assert call["now"] == NOW  # the pass's clock dates what the members' answers change in status
    assert set(call["members"]) == {"a", "b", "c", "d"}


def test_the_planner_gets_every_observation_the_clock_and_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = Spy(monkeypatch)
    fleet = Fleet(make_fhpa())
    fleet.member(ClusterIdentity(name="a"))
    fleet.member(ClusterIdentity(name="b", labels={"x": "y"}), reachable=False)
    config = PlannerConfig(failover_grace_seconds=5)
    reconcile_federated_hpa(fleet.fhpa, fleet.ports(), fleet.control_plane, FixedClock(), config)
    [(observations, now, passed)] = spy.planned
    assert [(o.name, o.healthy, o.labels) for o in observations] == [
        ("a", True, {}),
        ("b", False, {"x": "y"}),
    ]
    assert now == NOW and passed is config
    reconcile_federated_hpa(fleet.fhpa, fleet.ports(), fleet.control_plane, FixedClock())
    assert spy.planned[1][2] == PlannerConfig()


def test_a_cluster_that_refuses_our_reads_is_observed_unhealthy_not_fatal() -> None:
    fleet = Fleet(make_fhpa())
    fleet.member(ClusterIdentity(name="a"))
    refusing = fleet.member(ClusterIdentity(name="b", labels={"env": "prod"}))
    refusing.fail_next("observe", NotFoundError("deployments.apps is not served here"))
    observations = observe_all(fleet.fhpa, fleet.ports())
    assert [(o.name, o.healthy) for o in observations] == [("a", True), ("b", False)]
    assert observations[1].labels == {"env": "prod"}
