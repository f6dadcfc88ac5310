"""The executor: a plan becomes port calls in a safe order; one failure never stops the rest."""

from __future__ import annotations

import pytest

from controller.errors import ClusterUnreachableError, ConflictError, NotFoundError, NotOwnedError, PortError
from controller.executor import PUBLIC_TEXT_LIMIT, ExecutionResult, execute, public_text
from controller.planning.plan import EventRecord, HPAAction, Plan, ReplicaWrite
from controller.ports import ClusterIdentity, MemberCluster
from fhpa_api.models import FederatedHPA, FederatedHPAStatus
from tests.support.member_fakes import FakeMember, LoggingControlPlane

STATUS = FederatedHPAStatus(current_replicas=5, desired_replicas=6)


class World:
    """A stored FederatedHPA, a control plane and some member clusters sharing one call log."""

    def __init__(self, *clusters: str) -> None:
        self.calls: list[str] = []
        self.control_plane = LoggingControlPlane(calls=self.calls)
        self.control_plane.add(
            FederatedHPA.model_validate(
                {
                    "metadata": {"name": "web", "namespace": "shop", "uid": "u1"},
                    "spec": {
                        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "maxReplicas": 20,
                    },
                }
            )
        )
        self.members = {c: FakeMember(ClusterIdentity(name=c), self.calls) for c in clusters}
        self.hooked: list[tuple[str, str, bool]] = []

    @property
    def fhpa(self) -> FederatedHPA:
        return self.control_plane.fhpas[("shop", "web")]

    def run(self, plan: Plan, current_max: dict[str, int] | None = None) -> ExecutionResult:
        members: dict[str, MemberCluster] = dict(self.members)
        return execute(
            plan,
            self.fhpa,
            members,
            self.control_plane,
            current_max,
            on_action=lambda kind, cluster, ok: self.hooked.append((kind, cluster, ok)),
        )

    def member_calls(self) -> list[str]:
        return [c for c in self.calls if not c.startswith(("status", "event/"))]


def update(cluster: str, max_replicas: int, op: str = "update") -> HPAAction:
    return HPAAction.model_validate(
        {
            "cluster": cluster,
            "op": op,
            "min_replicas": 1,
            "max_replicas": max_replicas,
            "spec": {"maxReplicas": max_replicas},
        }
    )


def delete(cluster: str) -> HPAAction:
    return HPAAction(cluster=cluster, op="delete")


def test_an_empty_plan_writes_only_the_status() -> None:
    world = World("a")
    result = world.run(Plan(status=STATUS))
    assert world.calls == ["status"]
    assert result.ok and result.done == [] and result.failed == {}
    assert result.updated is not None and result.updated.status == STATUS
    assert world.control_plane.fhpas[("shop", "web")].status == STATUS


def test_a_status_equal_to_the_stored_one_is_not_written_again() -> None:
    """A pass that changes nothing costs no request: a thousand idle FederatedHPAs on a resync must not
    make a thousand status writes (each of which would come back through the watch)."""
    world = World("a")
    world.run(Plan(status=STATUS))
    assert world.calls == ["status"]
    result = world.run(Plan(status=STATUS.model_copy(deep=True)))
    assert world.calls == ["status"]  # the second pass wrote nothing
    assert result.ok and result.updated is not None and result.updated.status == STATUS


def test_increases_before_decreases_largest_increase_first() -> None:
    world = World("a", "b", "c", "d")
    actions = [update("a", 2), update("b", 9), update("c", 5), update("d", 4)]
    world.run(Plan(hpa_actions=actions, status=STATUS), current_max={"a": 6, "b": 3, "c": 5, "d": 1})
    # b +6, d +3, c +0 (no fall), then a -4
    assert world.member_calls() == ["apply/b", "apply/d", "apply/c", "apply/a"]


def test_an_unobserved_hpa_counts_as_max_zero() -> None:
    world = World("a", "b")
    world.run(Plan(hpa_actions=[update("a", 3), update("b", 4, op="create")], status=STATUS), {"a": 10})
    assert world.member_calls() == ["apply/b", "apply/a"]


def test_creates_and_updates_before_deletes_and_replica_writes_after_hpas() -> None:
    world = World("a", "b", "c")
    plan = Plan(
        hpa_actions=[delete("a"), update("b", 1), update("c", 8, op="create")],
        replica_writes=[
            ReplicaWrite(cluster="c", replicas=3, reason="r"),
            ReplicaWrite(cluster="a", replicas=0, reason="r"),
        ],
        status=STATUS,
        events=[EventRecord(reason="Assigned", message="m")],
    )
    result = world.run(plan, current_max={"a": 5, "b": 5})
    assert world.calls == [
        "apply/c",
        "apply/b",
        "delete/a",
        "scale/c=3",
        "scale/a=0",
        "status",
        "event/Assigned",
    ]
    assert result.done == ["create/c", "update/b", "delete/a", "scale/c", "scale/a"]
    assert result.ok


def test_apply_gets_the_rendered_spec_and_scale_the_target() -> None:
    world = World("a")
    plan = Plan(
        hpa_actions=[update("a", 7)],
        replica_writes=[ReplicaWrite(cluster="a", replicas=4, reason="r")],
        status=STATUS,
    )
    world.run(plan)
    assert world.members["a"].hpa_specs == {"web": {"maxReplicas": 7}}
    assert world.members["a"].replicas == {"shop/Deployment/web": 4}


@pytest.mark.parametrize(
    "error",
    [
        ClusterUnreachableError("b", "timeout"),
        NotOwnedError("not ours"),
        PortError("boom"),
    ],
    ids=["unreachable", "not-owned", "port"],
)
def test_a_failing_member_action_does_not_stop_the_others(error: PortError) -> None:
    world = World("a", "b", "c")
    world.members["b"].fail_next("apply_hpa", error)
    world.members["a"].fail_next("scale_workload", PortError("scale refused"))
    plan = Plan(
        hpa_actions=[update("a", 9), update("b", 8), delete("c")],
        replica_writes=[
            ReplicaWrite(cluster="a", replicas=2, reason="r"),
            ReplicaWrite(cluster="c", replicas=0, reason="r"),
        ],
        status=STATUS,
    )
    result = world.run(plan)
    assert world.member_calls() == ["apply/a", "apply/b", "delete/c", "scale/a=2", "scale/c=0"]
    assert result.done == ["update/a", "delete/c", "scale/c"]
    assert result.failed == {"update/b": str(error), "scale/a": "scale refused"}
    assert not result.ok
    assert result.updated is not None  # the status is still written
    warnings = [e for e in world.control_plane.events if e.reason == "MemberActionFailed"]
    assert [(e.type, e.message) for e in warnings] == [
        ("Warning", f"update/b: {error}"),
        ("Warning", "scale/a: scale refused"),
    ]
    assert world.hooked == [
        ("update", "a", True),
        ("update", "b", False),
        ("delete", "c", True),
        ("scale", "a", False),
        ("scale", "c", True),
    ]


def test_plan_events_come_before_failure_warnings_and_after_the_status() -> None:
    world = World("a")
    world.members["a"].fail_next("delete_hpa", PortError("x"))
    world.run(
        Plan(hpa_actions=[delete("a")], status=STATUS, events=[EventRecord(reason="Rescaled", message="m")])
    )
    assert world.calls == ["delete/a", "status", "event/Rescaled", "event/MemberActionFailed"]


def test_an_unregistered_cluster_is_reported() -> None:
    world = World("a")
    plan = Plan(
        hpa_actions=[update("gone", 3), delete("gone2"), update("a", 2)],
        replica_writes=[ReplicaWrite(cluster="gone3", replicas=1, reason="r")],
        status=STATUS,
    )
    result = world.run(plan)
    assert result.failed == {
        "update/gone": "cluster is no longer registered",
        "delete/gone2": "cluster is no longer registered",
        "scale/gone3": "cluster is no longer registered",
    }
    assert result.done == ["update/a"]
    assert not result.ok
    assert world.control_plane.reasons().count("MemberActionFailed") == 3


def test_a_conflict_on_the_status_write_sets_conflict() -> None:
    world = World("a")
    stale = world.fhpa
    world.control_plane.add(stale)  # someone else wrote: the stored resourceVersion moved on
    result = execute(
        Plan(hpa_actions=[update("a", 2)], status=STATUS), stale, dict(world.members), world.control_plane
    )
    assert result.conflict and not result.ok
    assert result.updated is None
    assert result.done == ["update/a"]  # member actions already happened; the next pass re-plans


def test_a_not_found_on_the_status_write_sets_conflict() -> None:
    world = World("a")
    world.control_plane.fail_next("update_federated_hpa_status", NotFoundError("gone"))
    result = world.run(Plan(status=STATUS, events=[EventRecord(reason="Assigned", message="m")]))
    assert result.conflict and result.updated is None
    assert world.control_plane.reasons() == ["Assigned"]  # events still go out


def test_an_event_failure_never_fails_the_execution() -> None:
    world = World("a")
    world.members["a"].fail_next("apply_hpa", PortError("nope"))
    world.control_plane.fail_next("emit_event", PortError("events down"), PortError("still down"))
    plan = Plan(
        hpa_actions=[update("a", 2)], status=STATUS, events=[EventRecord(reason="Assigned", message="m")]
    )
    result = world.run(plan)
    assert not result.conflict and result.updated is not None
    assert result.failed == {"update/a": "nope"}
    assert world.calls[-2:] == ["event/Assigned", "event/MemberActionFailed"]


def test_one_failed_event_does_not_stop_the_next_events() -> None:
    world = World("a")
    world.control_plane.fail_next("emit_event", PortError("events down"))
    events = [
        EventRecord(reason="First", message="m"),
        EventRecord(type="Warning", reason="Second", message="m"),
    ]
    result = world.run(Plan(status=STATUS, events=events))
    assert result.ok
    assert [(e.type, e.reason) for e in world.control_plane.events] == [("Warning", "Second")]


def test_without_a_hook_nothing_breaks() -> None:
    world = World("a")
    world.members["a"].fail_next("apply_hpa", PortError("x"))
    result = execute(
        Plan(hpa_actions=[update("a", 2), update("a", 3)], status=STATUS),
        world.fhpa,
        dict(world.members),
        world.control_plane,
    )
    assert result.failed == {"update/a": "x"} and result.done == ["update/a"]


LEAKY = (
    'admission webhook "policy.example" denied the request: User "system:serviceaccount:fhpa:controller" '
    "may not patch; Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzYSJ9.c2lnbmF0dXJl token=hunter2x "
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END RSA PRIVATE KEY----- "
    + "x"
    * 800
)


def test_member_error_text_in_events_and_logs_is_trimmed_and_scrubbed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Security review L6: a member's error text reached MemberActionFailed Events (readable by everyone
    in the FederatedHPA's namespace) and the log at full length, identities and credentials included."""
    world = World("a")
    world.members["a"].fail_next("apply_hpa", ClusterUnreachableError("a", LEAKY))
    caplog.set_level("WARNING")
    result = world.run(Plan(hpa_actions=[update("a", 5)], status=STATUS))
    [event] = [e for e in world.control_plane.events if e.reason == "MemberActionFailed"]
    logged = " ".join(str(getattr(r, "error", "")) for r in caplog.records)
    for text in (event.message, result.failed["update/a"], logged):
        assert "denied the request" in text  # what went wrong is kept
        for secret in ("system:serviceaccount:fhpa", "eyJhbGci", "hunter2x", "MIIEvQIBADAN", "\n"):
            assert secret not in text, (secret, text)
    assert len(result.failed["update/a"]) <= PUBLIC_TEXT_LIMIT
    assert len(event.message) <= PUBLIC_TEXT_LIMIT + len("update/a: ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "the object has been modified; please apply your changes",
            "the object has been modified; please apply your changes",
        ),
        ("PATCH /apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web-frontend-0123456789", None),
        ('forbidden: User "alice@example.com" cannot get', 'forbidden: User "<redacted>" cannot get'),
        ("group system:serviceaccounts:kube-system denied", "group system:serviceaccount:<redacted> denied"),
        ("Basic dTpw rejected", "Basic <redacted> rejected"),
        ('{"password": "p4ss"}', '{"password": "<redacted>"}'),
        ("key QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw end", "key <redacted> end"),
    ],
)
def test_public_text(text: str, expected: str | None) -> None:
    assert public_text(text) == (text if expected is None else expected)


def test_a_member_409_is_reported_stale_and_requeued_not_failed() -> None:
    """A member write refused with 409 (changed since the pass observed it) is not applied and not
    retried: the result says which write went stale and asks for a re-plan; the others go on, the status
    is written, and no Warning is raised for what the next pass corrects by itself."""
    world = World("a", "b")
    world.members["b"].fail_next("apply_hpa", ConflictError("cluster b: the object has been modified"))
    plan = Plan(hpa_actions=[update("a", 9), update("b", 8)], status=STATUS)
    result = world.run(plan)
    assert world.member_calls() == ["apply/a", "apply/b"]
    assert result.done == ["update/a"]
    assert result.stale == {"update/b": "cluster b: the object has been modified"}
    assert result.failed == {} and result.conflict and not result.ok
    assert result.updated is not None
    assert not [e for e in world.control_plane.events if e.reason == "MemberActionFailed"]
    assert world.hooked == [("update", "a", True), ("update", "b", False)]


ROWS_STATUS = FederatedHPAStatus.model_validate(
    {
        "conditions": [{"type": "Ready", "status": "True", "reason": "Assigned", "message": "2 clusters"}],
        "clusters": [{"name": "a", "minReplicas": 1, "maxReplicas": 4}, {"name": "b", "minReplicas": 1}],
    }
)
REFUSAL = (
    'HorizontalPodAutoscaler.autoscaling "web" is invalid: spec.metrics[0].type: Unsupported value: '
    '"ContainerResource"'
)


def refused_pass(world: World) -> ExecutionResult:
    """A pass that creates the HPA in a and b, a refusing it with 422, and raises replicas in both."""
    plan = Plan(
        hpa_actions=[update("a", 4, op="create"), update("b", 4, op="create")],
        replica_writes=[
            ReplicaWrite(cluster="a", replicas=4, reason="r"),
            ReplicaWrite(cluster="b", replicas=4, reason="r"),
        ],
        status=ROWS_STATUS,
        events=[
            EventRecord(reason="MemberHPACreated", message="a: created", action="create/a"),
            EventRecord(reason="MemberHPACreated", message="b: created", action="create/b"),
            EventRecord(reason="ReplicasSet", message="a: 1 -> 4", action="scale/a"),
            EventRecord(reason="ReplicasSet", message="b: 1 -> 4", action="scale/b"),
            EventRecord(reason="Assigned", message="m"),
        ],
    )
    world.members["a"].fail_next("apply_hpa", PortError(REFUSAL))
    return world.run(plan)


def test_a_member_that_refuses_the_hpa_gets_no_replicas_and_no_success_event() -> None:
    """A refused HPA is not a success: no MemberHPACreated or ReplicasSet for it, no replicas written
    where no HPA bounds them, and the row and Ready say which member refused and in its words."""
    world = World("a", "b")
    result = refused_pass(world)
    assert world.member_calls() == ["apply/a", "apply/b", "scale/b=4"]
    assert result.skipped == ["scale/a"] and result.reasons == {"create/a": "MemberRejected"}
    assert [e.message for e in world.control_plane.events if e.type == "Normal"] == [
        "b: created",
        "b: 1 -> 4",
        "m",
    ]
    status = world.fhpa.status
    assert status is not None and status.clusters is not None and status.conditions is not None
    [ready] = [c for c in status.conditions if c.type == "Ready"]
    assert (ready.status, ready.reason) == ("False", "MemberRejected")
    assert ready.message is not None and ready.message.startswith("a refused the member HPA")
    assert "Unsupported value" in ready.message
    [row_a, row_b] = status.clusters
    assert [(c.type, c.status, c.reason, c.message) for c in row_a.conditions or []] == [
        ("MemberHPAWritten", "False", "MemberRejected", REFUSAL)
    ]
    assert not row_b.conditions


def test_a_refusal_repeated_on_the_next_pass_writes_no_new_status() -> None:
    world = World("a", "b")
    refused_pass(world)
    writes = world.calls.count("status")
    refused_pass(world)
    assert world.calls.count("status") == writes


def test_no_replicas_follow_a_stale_hpa_write() -> None:
    world = World("a")
    world.members["a"].fail_next("apply_hpa", ConflictError("changed"))
    plan = Plan(
        hpa_actions=[update("a", 4)],
        replica_writes=[ReplicaWrite(cluster="a", replicas=4, reason="r")],
        status=STATUS,
        events=[EventRecord(reason="ReplicasSet", message="a: 1 -> 4", action="scale/a")],
    )
    result = world.run(plan)
    assert world.member_calls() == ["apply/a"] and result.skipped == ["scale/a"]
    assert world.control_plane.reasons() == []
