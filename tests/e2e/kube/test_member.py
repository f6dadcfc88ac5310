"""KubeMemberCluster (controller/kube/member.py) against real v1.20.2 members.

Until now the member adapter was only checked against tests/support/fakekube.py, which we wrote.
Here the other side is real: the v2beta2 fallback path (1.20 has no autoscaling/v2), the real HPA
controller's status (desiredReplicas, ScalingLimited, currentMetrics) read back through our
observation, scale writes answered by the real Deployment controller, the real scheduler's
Unschedulable pods counted as pending, real 409s for stale writes, and our capacity estimate
(controller/planning/capacity.py) held against what the real scheduler then placed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.errors import ConflictError, NotOwnedError
from controller.kube.clients import KubeClient, build_api_client
from controller.kube.member import KubeMemberCluster
from controller.planning.member_hpa import ANNOTATION_DIGEST, LABEL_OWNER_UID, hpa_name, render_spec
from controller.planning.plan import Observed
from controller.ports import ClusterIdentity
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA, FederatedHPASpec, ObjectMeta
from tests.support.kube_load import LoadModel
from tests.support.kubemember import KubeMember, wait_for

pytestmark = pytest.mark.kube

TARGET = CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web")


def make_fhpa(namespace: str, uid: str = "uid-kube-1", max_replicas: int = 10) -> FederatedHPA:
    return FederatedHPA(
        metadata=ObjectMeta(name="web", namespace=namespace, uid=uid, generation=1),
        spec=FederatedHPASpec.model_validate(
            {
                "scaleTargetRef": TARGET.to_json(),
                "minReplicas": 1,
                "maxReplicas": max_replicas,
                "federatedHPAAssignment": {"federatedHPAAssignmentType": "Duplicated"},
            }
        ),
    )


def adapter(member: KubeMember, methods: list[str] | None = None) -> KubeMemberCluster:
    """Our adapter on the member's inline kubeconfig, as the registry builds it from a Secret;
    ``methods`` collects the HTTP method of every request it makes."""

    def record(_cluster: str, method: str, _seconds: float, _outcome: str) -> None:
        if methods is not None:
            methods.append(method)

    client = KubeClient(member.name, build_api_client(member.kubeconfig()), observer=record)
    return KubeMemberCluster(ClusterIdentity(name=member.name), client, capacity_ttl_seconds=0.0)


@pytest.fixture
def m1(kube_members: dict[str, KubeMember]) -> Iterator[KubeMemberCluster]:
    cluster = adapter(kube_members["m1"])
    yield cluster
    cluster.close()


def hpa_path(namespace: str, name: str = "") -> str:
    base = f"/apis/autoscaling/v2beta2/namespaces/{namespace}/horizontalpodautoscalers"
    return f"{base}/{name}" if name else base


def test_member_hpa_is_created_through_v2beta2_and_not_rewritten_when_unchanged(
    kube_members: dict[str, KubeMember], kube_namespace: str
) -> None:
    member = kube_members["m1"]
    member.create_deployment(kube_namespace, "web", replicas=1, cpu="200m")
    fhpa = make_fhpa(kube_namespace)
    methods: list[str] = []
    m1 = adapter(member, methods)
    try:
        assert m1.hpa_version() == "v2beta2"
        m1.apply_hpa(fhpa, render_spec(fhpa, 2, 6))
        assert "POST" in methods
        stored = member.get(hpa_path(kube_namespace, hpa_name(fhpa)))
        assert stored["metadata"]["labels"][LABEL_OWNER_UID] == "uid-kube-1"
        assert ANNOTATION_DIGEST in stored["metadata"]["annotations"]
        assert (stored["spec"]["minReplicas"], stored["spec"]["maxReplicas"]) == (2, 6)
        assert any(f["manager"] == "federated-hpa" for f in stored["metadata"]["managedFields"])

        obs = m1.observe(fhpa).hpa
        assert obs is not None and obs.owned and (obs.min_replicas, obs.max_replicas) == (2, 6)
        # the real apiserver defaults and converts the stored spec; that alone must not cause a rewrite
        methods.clear()
        m1.apply_hpa(fhpa, render_spec(fhpa, 2, 6))
        assert methods and set(methods) == {"GET"}
        m1.apply_hpa(fhpa, render_spec(fhpa, 2, 8))
        assert "PUT" in methods
        assert member.get(hpa_path(kube_namespace, hpa_name(fhpa)))["spec"]["maxReplicas"] == 8
    finally:
        m1.close()


def test_a_stale_observed_version_is_a_real_409(
    kube_members: dict[str, KubeMember], kube_namespace: str, m1: KubeMemberCluster
) -> None:
    member = kube_members["m1"]
    member.create_deployment(kube_namespace, "web", replicas=1, cpu="200m")
    fhpa = make_fhpa(kube_namespace)
    m1.apply_hpa(fhpa, render_spec(fhpa, 1, 4))
    obs = m1.observe(fhpa)
    assert obs.hpa is not None and obs.hpa.resource_version
    seen = Observed(resource_version=obs.hpa.resource_version, uid=obs.hpa.uid)
    m1.apply_hpa(fhpa, render_spec(fhpa, 1, 5), observed=seen)  # changes it: the version moves on
    with pytest.raises(ConflictError):
        m1.apply_hpa(fhpa, render_spec(fhpa, 1, 6), observed=seen)
    with pytest.raises(ConflictError):
        m1.scale_workload(kube_namespace, TARGET, 3, observed=Observed(resource_version="1"))
    with pytest.raises(ConflictError):
        m1.delete_hpa(fhpa, observed=seen)
    assert member.get(hpa_path(kube_namespace, hpa_name(fhpa)))["spec"]["maxReplicas"] == 5


def test_delete_removes_ours_and_a_foreign_hpa_on_the_workload_is_never_written(
    kube_members: dict[str, KubeMember], kube_namespace: str, m1: KubeMemberCluster
) -> None:
    member = kube_members["m1"]
    member.create_deployment(kube_namespace, "web", replicas=1, cpu="200m")
    fhpa = make_fhpa(kube_namespace)
    m1.apply_hpa(fhpa, render_spec(fhpa, 1, 4))
    m1.delete_hpa(fhpa)
    assert member.request("GET", hpa_path(kube_namespace, hpa_name(fhpa)))[0] == 404
    m1.delete_hpa(fhpa)  # absent: nothing to do

    foreign = render_spec(fhpa, 1, 3)
    member.create(hpa_path(kube_namespace), {"metadata": {"name": "someone-elses"}, "spec": foreign})
    with pytest.raises(NotOwnedError):
        m1.apply_hpa(fhpa, render_spec(fhpa, 1, 4))
    observed = m1.observe(fhpa).hpa
    assert observed is not None and not observed.owned and observed.name == "someone-elses"


def test_real_hpa_status_reads_as_wanting_more_than_its_max(
    kube_members: dict[str, KubeMember], kube_namespace: str, kube_load: LoadModel, m1: KubeMemberCluster
) -> None:
    member = kube_members["m1"]
    member.create_deployment(kube_namespace, "web", replicas=1, cpu="200m")
    wait_for(lambda: member.pod_summary(kube_namespace, "web")["ready"] == 1, 60, "one ready pod")
    kube_load.set_demand(kube_namespace, "web", 800)  # 400% of a pod's request; the target is 80%
    fhpa = make_fhpa(kube_namespace)
    m1.apply_hpa(fhpa, render_spec(fhpa, 1, 2))

    def limited() -> object:
        hpa = m1.observe(fhpa).hpa
        return hpa if hpa is not None and hpa.wants_more_than_max else None

    hpa = wait_for(limited, 240, "the real HPA controller reports ScalingLimited at its max")
    assert hpa.desired_replicas == 2
    limit = hpa.condition("ScalingLimited")
    assert limit is not None and limit.reason == "TooManyReplicas"
    # currentMetrics as the real controller reports them: 800m over the ready pods against 200m at 80%
    assert hpa.metric_ratio is not None and hpa.metric_ratio >= 2.5


def test_a_scale_write_is_answered_by_the_real_deployment_controller_and_pending_pods_are_counted(
    kube_members: dict[str, KubeMember], kube_namespace: str, m1: KubeMemberCluster
) -> None:
    member = kube_members["m1"]  # one 2-CPU node
    member.create_deployment(kube_namespace, "web", replicas=1, cpu="500m")
    fhpa = make_fhpa(kube_namespace)
    wait_for(lambda: m1.observe(fhpa).ready_replicas == 1, 240, "one ready replica observed")
    before = m1.observe(fhpa)
    assert before.current_replicas == 1 and before.scale_resource_version
    m1.scale_workload(
        kube_namespace, TARGET, 6, observed=Observed(resource_version=before.scale_resource_version)
    )

    def settled() -> object:
        obs = m1.observe(fhpa)
        return obs if obs.ready_replicas == 4 and obs.pending_replicas == 2 else None

    obs = wait_for(settled, 240, "four ready and two Unschedulable observed")
    assert obs.current_replicas == 6
    assert obs.available_replicas == 4  # what fits is what runs: the node is full


@pytest.mark.parametrize(("cpu", "placed"), [("400m", 5), ("600m", 3)])
def test_capacity_estimate_matches_what_the_real_scheduler_places(
    kube_members: dict[str, KubeMember], kube_namespace: str, cpu: str, placed: int
) -> None:
    """m2 has nodes of 1 and 1.5 CPU: at 600m the total free CPU (2.5) would suggest 4 replicas, but
    only 1 + 2 fit node by node; the estimate must say what the scheduler does."""
    member = kube_members["m2"]
    cluster = adapter(member)
    try:
        member.create_deployment(kube_namespace, "web", replicas=1, cpu=cpu)
        fhpa = make_fhpa(kube_namespace)
        first = wait_for(
            lambda: (o := cluster.observe(fhpa)).ready_replicas == 1 and o, 240, "one ready replica observed"
        )
        estimate = first.available_replicas

        def scaled() -> bool:
            # the write is conditional on the Scale it reads; the deployment controller may write the
            # status in between (409), and the controller would plan again: so does the test
            try:
                cluster.scale_workload(kube_namespace, TARGET, 10)
            except ConflictError:
                return False
            return True

        wait_for(scaled, 60, "the scale write accepted")
        wait_for(
            lambda: (s := member.pod_summary(kube_namespace, "web"))["ready"] + s["unschedulable"] == 10,
            240,
            "every pod either ready or Unschedulable",
        )
        scheduled = sum(1 for p in member.pods(kube_namespace, "web") if p["spec"].get("nodeName"))
        assert estimate == scheduled == placed
        assert cluster.observe(fhpa).available_replicas == placed
    finally:
        cluster.close()
