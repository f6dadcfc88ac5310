"""KubeMemberCluster through the official client over HTTP, against FakeKube, with injected faults."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from controller.errors import ClusterUnreachableError, ConflictError, NotFoundError, NotOwnedError, PortError
from controller.kube.member import KubeMemberCluster
from controller.member_layer import MemberLayer
from controller.planning.member_hpa import ANNOTATION_DIGEST, LABEL_OWNER_UID, render_spec, template_digest
from controller.ports import MemberWrite
from fhpa_api.models import (
    CrossVersionObjectReference,
    FederatedHPA,
)
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, pod
from tests.support.member_world import (
    HPAS,
    TARGET,
    FixedClock,
    RecordingControlPlane,
    make_fhpa,
    make_member,
    populate,
)


@pytest.fixture
def member(fake: FakeKube) -> KubeMemberCluster:
    return make_member(fake)


def writes(fake: FakeKube) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.requests if r.method in ("POST", "PUT", "PATCH", "DELETE")]


# --- observe ----------------------------------------------------------------------------------------


def test_observe_counts_pods_and_estimates_capacity(member: KubeMemberCluster) -> None:
    obs = member.observe(make_fhpa())
    assert (obs.name, obs.labels, obs.region, obs.healthy, obs.workload_found) == (
        "m1",
        {"env": "prod"},
        "eu",
        True,
        True,
    )
    assert (obs.current_replicas, obs.ready_replicas, obs.pending_replicas) == (3, 2, 1)
    # n1: 4 cpu - (2 x 100m + 1) = 2.8 free -> 28 more; n2 cordoned; plus the 2 running
    assert obs.available_replicas == 30
    assert obs.hpa is None


def test_missing_workload_is_reported_not_raised(fake: FakeKube, member: KubeMemberCluster) -> None:
    fake.store.delete("deployments", "default", "web")
    obs = member.observe(make_fhpa())
    assert obs.healthy and not obs.workload_found and obs.available_replicas is None


def test_capacity_unknown_when_nodes_are_forbidden(fake: FakeKube, member: KubeMemberCluster) -> None:
    fake.faults.add("GET", r"^/api/v1/nodes$", status=403)
    obs = member.observe(make_fhpa())
    assert obs.available_replicas is None and obs.ready_replicas == 2


def test_capacity_snapshot_is_cached_for_its_ttl(fake: FakeKube) -> None:
    member = make_member(fake, ttl=60)
    member.observe(make_fhpa())
    member.observe(make_fhpa())
    assert len(fake.requests_matching("GET", r"^/api/v1/nodes$")) == 1


def test_pods_bound_since_the_capacity_snapshot_are_not_counted_twice(fake: FakeKube) -> None:
    """The cluster-wide snapshot is up to its TTL old while the workload's pods are listed now: two web
    pods bound since the snapshot run and hold their room, so what the cluster can hold stays 30.
    Before, they were counted as running and their room as still free: 32 (a burst read a node of
    four pods as room for six on the kube tier)."""
    member = make_member(fake, ttl=60)
    assert member.observe(make_fhpa()).available_replicas == 30
    for name in ("web-d", "web-e"):
        fake.store.put("pods", pod(name, labels={"app": "web"}, node_name="n1"))
    obs = member.observe(make_fhpa())
    assert obs.available_replicas == 30 and len(fake.requests_matching("GET", r"^/api/v1/nodes$")) == 1


def test_any_kind_with_a_scale_subresource_is_found_through_discovery(fake: FakeKube) -> None:
    fake.add_scalable_kind("example.com", "v1", "widgets", "Widget")
    widget = deployment("w", replicas=2, labels={"app": "web"})
    widget["status"] = {"replicas": 2, "selector": "app=web"}
    fake.store.put("widgets", widget)
    member = make_member(fake)
    fhpa = make_fhpa()
    fhpa.spec.scale_target_ref = CrossVersionObjectReference(
        api_version="example.com/v1", kind="Widget", name="w"
    )
    obs = member.observe(fhpa)
    assert obs.workload_found and obs.current_replicas == 2 and obs.ready_replicas == 2
    member.scale_workload("default", fhpa.spec.scale_target_ref, 5)
    assert fake.store.get("widgets", "default", "w")["spec"]["replicas"] == 5
    unknown = CrossVersionObjectReference(api_version="example.com/v1", kind="Gadget", name="g")
    with pytest.raises(NotFoundError):
        member.scale_workload("default", unknown, 1)


# --- member HPA -------------------------------------------------------------------------------------


def test_create_then_observe_then_update_only_when_changed(fake: FakeKube, member: KubeMemberCluster) -> None:
    fhpa = make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 2, 6))
    stored = fake.store.get(HPAS, "default", "web")
    assert stored["metadata"]["labels"][LABEL_OWNER_UID] == "uid-1"
    assert stored["metadata"]["annotations"][ANNOTATION_DIGEST] == template_digest(fhpa)
    assert stored["metadata"]["managedFields"][0]["manager"] == "federated-hpa"
    obs = member.observe(fhpa).hpa
    assert obs is not None and obs.owned and (obs.min_replicas, obs.max_replicas) == (2, 6)
    assert obs.template_digest == template_digest(fhpa)

    before = len(writes(fake))
    member.apply_hpa(fhpa, render_spec(fhpa, 2, 6))
    assert len(writes(fake)) == before  # nothing to change: no write
    member.apply_hpa(fhpa, render_spec(fhpa, 2, 8))
    put = fake.requests_matching("PUT", HPAS)[-1]
    assert put.body["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert put.query["fieldManager"] == ["federated-hpa"]
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 8


def test_server_defaulting_of_the_stored_spec_does_not_cause_rewrites(
    fake: FakeKube, member: KubeMemberCluster
) -> None:
    fhpa = make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 4))
    stored = fake.store.get(HPAS, "default", "web")
    stored["spec"]["behavior"] = {"scaleUp": {"stabilizationWindowSeconds": 0}}  # as an API server fills in
    fake.store.update(HPAS, stored)
    before = len(writes(fake))
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 4))
    assert len(writes(fake)) == before
    member.apply_hpa(fhpa, render_spec(fhpa, 2, 4))  # a real change is still written
    assert fake.store.get(HPAS, "default", "web")["spec"]["minReplicas"] == 2


def test_hpa_status_is_observed(fake: FakeKube, member: KubeMemberCluster) -> None:
    fhpa = make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 4))
    conditions = [{"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas"}]
    fake.store.set_status(
        HPAS, "default", "web", {"currentReplicas": 4, "desiredReplicas": 4, "conditions": conditions}
    )
    obs = member.observe(fhpa).hpa
    assert obs is not None and obs.current_replicas == 4 and obs.wants_more_than_max
    assert obs.metric_ratio is None  # no currentMetrics reported


def test_hpa_current_metrics_give_the_ratio_to_target(fake: FakeKube, member: KubeMemberCluster) -> None:
    fhpa = make_fhpa()  # the default metric: CPU at 80% average utilization
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 4))
    current = [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 200}}}]
    fake.store.set_status(
        HPAS, "default", "web", {"currentReplicas": 4, "desiredReplicas": 4, "currentMetrics": current}
    )
    obs = member.observe(fhpa).hpa
    assert obs is not None and obs.metric_ratio == 2.5


def test_an_hpa_we_do_not_own_is_never_overwritten(fake: FakeKube, member: KubeMemberCluster) -> None:
    theirs = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"maxReplicas": 3, "scaleTargetRef": {}},
    }
    fake.store.put(HPAS, theirs)
    fhpa = make_fhpa()
    obs = member.observe(fhpa).hpa
    assert obs is not None and not obs.owned
    with pytest.raises(NotOwnedError):
        member.apply_hpa(fhpa, render_spec(fhpa, 1, 10))
    member.delete_hpa(fhpa)  # not ours: left alone, quietly
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 3
    assert writes(fake) == []


def test_another_hpa_on_the_same_workload_blocks_ours(fake: FakeKube, member: KubeMemberCluster) -> None:
    fhpa = make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    user_hpa = {
        "metadata": {"name": "user", "namespace": "default"},
        "spec": {"maxReplicas": 9, "scaleTargetRef": TARGET.to_json()},
    }
    fake.store.put(HPAS, user_hpa)
    obs = member.observe(fhpa).hpa
    assert obs is not None and obs.name == "user" and not obs.owned
    with pytest.raises(NotOwnedError, match="already targets"):
        member.apply_hpa(fhpa, render_spec(fhpa, 1, 7))
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 5


def test_a_stale_hpa_of_a_recreated_federated_hpa_is_adopted(
    fake: FakeKube, member: KubeMemberCluster
) -> None:
    old = make_fhpa(uid="old")
    member.apply_hpa(old, render_spec(old, 1, 5))
    new = make_fhpa(uid="new")
    assert member.observe(new).hpa.owned  # type: ignore[union-attr]
    member.apply_hpa(new, render_spec(new, 1, 6))
    assert fake.store.get(HPAS, "default", "web")["metadata"]["labels"][LABEL_OWNER_UID] == "new"


def test_delete_removes_ours_with_preconditions_and_absent_is_fine(
    fake: FakeKube, member: KubeMemberCluster
) -> None:
    fhpa = make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    member.delete_hpa(fhpa)
    assert fake.store.find(HPAS, "default", "web") is None
    assert fake.requests_matching("DELETE", HPAS)[-1].body["preconditions"]["uid"]
    member.delete_hpa(fhpa)


def test_v2beta2_is_used_on_clusters_without_v2() -> None:
    with FakeKube(hpa_versions=("v2beta2",)) as fake:
        populate(fake)
        member = make_member(fake)
        fhpa = make_fhpa()
        member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
        assert fake.requests_matching("POST", "/apis/autoscaling/v2beta2/")
        assert member.observe(fhpa).hpa.max_replicas == 5  # type: ignore[union-attr]


# --- scale ------------------------------------------------------------------------------------------


def test_scale_writes_through_the_scale_subresource_with_its_resource_version(
    fake: FakeKube, member: KubeMemberCluster
) -> None:
    member.scale_workload("default", TARGET, 5)
    assert fake.store.get("deployments", "default", "web")["spec"]["replicas"] == 5
    put = fake.requests_matching("PUT", "/deployments/web/scale")[-1]
    assert put.body["metadata"]["resourceVersion"]
    member.scale_workload("default", TARGET, 5)
    assert len(fake.requests_matching("PUT", "/scale")) == 1  # already there: no write


# --- faults -----------------------------------------------------------------------------------------


def test_a_409_storm_is_a_conflict_each_time_and_converges_after(
    fake: FakeKube, member: KubeMemberCluster
) -> None:
    fhpa = make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    fake.faults.add("PUT", HPAS, status=409, times=3)
    for _ in range(3):
        with pytest.raises(ConflictError):
            member.apply_hpa(fhpa, render_spec(fhpa, 1, 7))
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 5
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 7))  # the caller's next pass re-reads and succeeds
    assert fake.store.get(HPAS, "default", "web")["spec"]["maxReplicas"] == 7
    assert len(fake.requests_matching("PUT", HPAS)) == 4  # no blind retries inside the adapter


def test_a_concurrent_writer_makes_our_update_conflict(fake: FakeKube, member: KubeMemberCluster) -> None:
    fhpa = make_fhpa()
    member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    real_get = member.client.get

    def get_then_someone_writes(path: str, **query: Any) -> Any:
        out = real_get(path, **query)
        if path.endswith(HPAS):
            hpa = fake.store.get(HPAS, "default", "web")
            hpa["spec"]["minReplicas"] = 2
            hpa["metadata"].pop("resourceVersion")
            fake.store.update(HPAS, hpa)
        return out

    member.client.get = get_then_someone_writes  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        member.apply_hpa(fhpa, render_spec(fhpa, 1, 9))
    assert fake.store.get(HPAS, "default", "web")["spec"]["minReplicas"] == 2


def test_server_errors_and_timeouts_mean_unreachable(fake: FakeKube, member: KubeMemberCluster) -> None:
    fhpa = make_fhpa()
    fake.faults.add("GET", HPAS, status=500)
    with pytest.raises(ClusterUnreachableError, match="HTTP 500"):
        member.observe(fhpa)
    fake.faults.add("GET", "/pods", stall=3)
    t0 = time.monotonic()
    with pytest.raises(ClusterUnreachableError):
        member.observe(fhpa)
    assert time.monotonic() - t0 < 2.5  # the read timeout (1 s), not the stall
    fake.faults.add("POST", HPAS, drop=True)
    with pytest.raises(ClusterUnreachableError):
        member.apply_hpa(fhpa, render_spec(fhpa, 1, 5))
    fake.faults.add("GET", HPAS, status=422)
    with pytest.raises(PortError) as err:
        member.observe(fhpa)
    assert not isinstance(err.value, ClusterUnreachableError)


def test_probe(fake: FakeKube, member: KubeMemberCluster) -> None:
    assert member.probe()
    fake.faults.add("GET", "^/readyz$", status=404)
    assert member.probe()  # falls back to /healthz
    assert fake.requests_matching("GET", "^/healthz$")
    fake.ready = False
    assert not member.probe() and member.last_probe_error
    fake.ready = True
    fake.vanish(stall=True)
    t0 = time.monotonic()
    assert not member.probe()
    assert time.monotonic() - t0 < 2
    fake.reappear()
    assert member.probe()


def test_credentials_never_appear_in_errors(fake: FakeKube, member: KubeMemberCluster) -> None:
    fake.faults.add("GET", HPAS, status=401)
    with pytest.raises(ClusterUnreachableError) as err:
        member.observe(make_fhpa())
    assert "fake-token" not in str(err.value) and "credentials rejected" in str(err.value)


# --- a cluster vanishing mid-reconcile ----------------------------------------------------------------


@pytest.fixture
def two_clusters() -> Iterator[tuple[FakeKube, FakeKube]]:
    with FakeKube(stall_seconds=3) as a, FakeKube(stall_seconds=3) as b:
        populate(a)
        populate(b)
        yield a, b


def test_a_vanished_cluster_is_observed_unhealthy_and_the_others_still_observed(
    two_clusters: tuple[FakeKube, FakeKube],
) -> None:
    from controller.reconcile import observe_all

    a, b = two_clusters
    members = {"a": make_member(a, "a"), "b": make_member(b, "b")}
    a.vanish()
    observed = {o.name: o for o in observe_all(make_fhpa(), members)}
    assert not observed["a"].healthy and observed["a"].labels == {"env": "prod"}
    assert observed["b"].healthy and observed["b"].ready_replicas == 2


def test_a_cluster_vanishing_mid_reconcile_loses_nothing(two_clusters: tuple[FakeKube, FakeKube]) -> None:
    pytest.importorskip("controller.planning.planner")
    from controller.reconcile import reconcile_federated_hpa

    a, b = two_clusters
    members = {"a": make_member(a, "a"), "b": make_member(b, "b")}
    cp, clock = RecordingControlPlane(), FixedClock()
    fhpa = make_fhpa()

    # cluster a stops answering right when the HPAs are written: observe worked, its write does not
    a.faults.add("POST|PUT", HPAS, drop=True, times=-1)
    _, result = reconcile_federated_hpa(fhpa, members, cp, clock)  # type: ignore[arg-type]
    assert any(label.endswith("/a") for label in result.failed)
    assert b.store.find(HPAS, "default", "web") is not None
    assert a.store.find(HPAS, "default", "web") is None
    assert any(reason == "MemberActionFailed" for _, reason, _ in cp.events)

    # while it is gone entirely, the next pass sees it unhealthy and leaves b's HPA as it is
    a.faults.clear()
    a.vanish()
    fhpa = fhpa.model_copy(update={"status": cp.statuses[-1]})
    plan, _ = reconcile_federated_hpa(fhpa, members, cp, clock)  # type: ignore[arg-type]
    assert not any(act.op == "delete" and act.cluster == "b" for act in plan.hpa_actions)
    assert b.store.find(HPAS, "default", "web") is not None
    row = next(c for c in cp.statuses[-1].clusters or [] if c.name == "a")
    healthy = next(c for c in row.conditions or [] if c.type == "Healthy")
    assert healthy.status == "False" and row.unhealthy_since is not None  # reported, not dropped
    assert any(type_ == "Warning" and "a:" in message for type_, _, message in cp.events)

    # it comes back: the next passes create what was missing, and nothing is written twice
    a.reappear()
    for _ in range(3):
        fhpa = fhpa.model_copy(update={"status": cp.statuses[-1]})
        clock.t = clock.t.replace(minute=clock.t.minute + 5)
        reconcile_federated_hpa(fhpa, members, cp, clock)  # type: ignore[arg-type]
    assert a.store.find(HPAS, "default", "web") is not None
    assert len(b.requests_matching("POST", HPAS)) == 1


# --- a kill and restart at any point of a reconcile ---------------------------------------------------


class Crash(BaseException):
    """The controller process dies: nothing after this point of the reconcile happens."""


class CrashingMember(MemberLayer):
    """A member whose process dies before its ``budget.left``-th next write reaches the cluster."""

    def __init__(self, inner: KubeMemberCluster, budget: dict[str, int]) -> None:
        super().__init__(inner)
        self.budget = budget

    def before_write(self, action: MemberWrite) -> None:
        if self.budget["left"] == 0:
            raise Crash()
        self.budget["left"] -= 1


def member_state(fake: FakeKube) -> tuple[Any, ...]:
    hpa = fake.store.find(HPAS, "default", "web")
    spec = None if hpa is None else (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"])
    return spec, fake.store.get("deployments", "default", "web")["spec"]["replicas"]


def successful_writes(fake: FakeKube) -> int:
    return sum(1 for r in fake.requests if r.method in ("POST", "PUT", "DELETE") and (r.status or 999) < 300)


def converge(fhpa: FederatedHPA, members: dict[str, Any], cp: RecordingControlPlane) -> FederatedHPA:
    from controller.reconcile import reconcile_federated_hpa

    for _ in range(4):
        plan, _ = reconcile_federated_hpa(fhpa, members, cp, FixedClock())  # type: ignore[arg-type]
        fhpa = fhpa.model_copy(update={"status": plan.status})
        if not plan.has_member_writes:
            break
    return fhpa


@pytest.mark.parametrize("crash_after", [0, 1, 2, 3])
def test_a_kill_at_any_point_of_a_reconcile_ends_as_an_uninterrupted_run(crash_after: int) -> None:
    pytest.importorskip("controller.planning.planner")

    def fleet() -> tuple[FakeKube, FakeKube]:
        a, b = FakeKube(), FakeKube()
        for fk in (a, b):
            fk.start()
            populate(fk, replicas=5)  # above the max: each cluster gets an HPA and a scale-down write
        return a, b

    fhpa = make_fhpa(max_replicas=3)
    a, b = fleet()
    try:
        converge(fhpa, {"a": make_member(a, "a"), "b": make_member(b, "b")}, RecordingControlPlane())
        expected = (member_state(a), member_state(b))
        expected_writes = successful_writes(a) + successful_writes(b)
    finally:
        a.stop()
        b.stop()
    assert expected_writes == 4 and expected[0] == ((1, 3), 3)

    a, b = fleet()
    try:
        budget = {"left": crash_after}
        doomed = {
            "a": CrashingMember(make_member(a, "a"), budget),
            "b": CrashingMember(make_member(b, "b"), budget),
        }
        with pytest.raises(Crash):
            converge(fhpa, doomed, RecordingControlPlane())
        # restart: new clients and caches, no status written by the dead process
        converge(fhpa, {"a": make_member(a, "a"), "b": make_member(b, "b")}, RecordingControlPlane())
        assert (member_state(a), member_state(b)) == expected
        assert (
            successful_writes(a) + successful_writes(b) == expected_writes
        )  # nothing lost, nothing repeated
    finally:
        a.stop()
        b.stop()
