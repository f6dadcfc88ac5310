"""The member adapter reads capacity signals from standard objects, against FakeKube: ResourceQuota, a
quota refusal on the Deployment, the cluster autoscaler's status ConfigMap and pod Events, Karpenter
NodePools, the bound declared on the Secret; both without the member cache and through it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.backoff import ExponentialBackoff
from controller.kube import autoscaler_status as status_format
from controller.kube.capacity_signals import declared
from controller.kube.member import KubeMemberCluster
from controller.planning.observation import ClusterObservation
from controller.ports import ClusterIdentity
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node, pod
from tests.support.fakekube_store import Resource
from tests.support.member_world import make_fhpa, make_member

SAMPLES = Path(__file__).parent / "autoscaler_status"
FHPA = make_fhpa()


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    """web: 4 replicas of 1 cpu; 2 run on n1 (4 cpu, 2 free); node n1 belongs to node group cloud-a."""
    fk = FakeKube(namespaces=("default", "kube-system"))
    fk.start()
    fk.store.put("nodes", node("n1", cpu="4", labels={"eks.amazonaws.com/nodegroup": "cloud-a"}))
    fk.store.put("deployments", deployment("web", replicas=4, cpu="1"))
    for name in ("web-a", "web-b"):
        fk.store.put("pods", pod(name, labels={"app": "web"}, node_name="n1", cpu="1"))
    yield fk
    fk.stop()


def observe(fake: FakeKube, cached: bool = False, **identity: Any) -> ClusterObservation:
    member = make_member(fake)
    if identity:
        member = KubeMemberCluster(
            ClusterIdentity(name="m1", **identity), member.client, capacity_ttl_seconds=0
        )
    if not cached:
        return member.observe(FHPA)
    watched = KubeMemberCluster(
        member.identity,
        member.client,
        watch=True,
        cache_options={
            "backoff": ExponentialBackoff(base=0.05, maximum=0.2, jitter=0.1),
            "min_watch_interval": 0.05,
        },
    )
    watched.start()
    try:
        assert watched.cache is not None and watched.cache.wait_synced(30)
        return watched.observe(FHPA)
    finally:
        watched.close()


def pend(fake: FakeKube, *names: str) -> None:
    for name in names:
        fake.store.put("pods", pod(name, labels={"app": "web"}, unschedulable=True, cpu="1"))


def event(fake: FakeKube, pod_name: str, reason: str, at: str, message: str = "") -> None:
    fake.store.create(
        "events",
        {
            "metadata": {"name": f"{pod_name}.{reason}".lower(), "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": "default"},
            "reason": reason,
            "message": message,
            "firstTimestamp": at,
            "lastTimestamp": at,
            "type": "Normal",
        },
    )


def quota(fake: FakeKube, hard: dict[str, str], used: dict[str, str]) -> None:
    fake.store.create(
        "resourcequotas",
        {
            "metadata": {"name": "q", "namespace": "default"},
            "spec": {"hard": hard},
            "status": {"hard": hard, "used": used},
        },
    )


def test_without_signals_room_is_the_free_allocatable() -> None:
    fk = FakeKube()
    fk.start()
    try:
        fk.store.put("nodes", node("n1", cpu="4"))
        fk.store.put("deployments", deployment("web", replicas=1, cpu="1"))
        fk.store.put("pods", pod("web-a", labels={"app": "web"}, node_name="n1", cpu="1"))
        seen = observe(fk)
        assert seen.available_replicas == 4
        assert seen.capacity is not None
        assert (seen.capacity.firm, seen.capacity.elastic, seen.capacity.source) == (4, 0, "allocatable")
    finally:
        fk.stop()


@pytest.mark.parametrize("cached", [False, True])
def test_a_namespace_quota_caps_the_room(fake: FakeKube, cached: bool) -> None:
    quota(fake, {"pods": "3", "requests.cpu": "20"}, {"pods": "2", "requests.cpu": "2"})
    seen = observe(fake, cached=cached)
    assert seen.available_replicas == 3
    assert seen.capacity is not None and seen.capacity.detail == "quota 3 pods, 2 used"


@pytest.mark.parametrize("cached", [False, True])
def test_a_quota_refusal_makes_the_cluster_full_and_counts_the_refused(fake: FakeKube, cached: bool) -> None:
    quota(fake, {"pods": "2"}, {"pods": "2"})
    web = fake.store.get("deployments", "default", "web")
    web["status"] = {
        "replicas": 2,
        "conditions": [
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": 'pods "web-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, '
                "limited: pods=2",
            }
        ],
    }
    fake.store.put("deployments", web)
    seen = observe(fake, cached=cached)
    assert (seen.refused_replicas, seen.pending_replicas, seen.available_replicas) == (2, 0, 2)
    assert seen.capacity is not None and seen.capacity.source == "quota"


@pytest.mark.parametrize("sample", ["status-text.txt", "status.yaml"])
def test_the_cluster_autoscaler_status_gives_elastic_room(fake: FakeKube, sample: str) -> None:
    fake.store.create(
        "configmaps",
        {
            "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
            "data": {"status": (SAMPLES / sample).read_text()},
        },
    )
    seen = observe(fake)
    # cloud-a: 30 - 3 nodes of n1's size (4 pods of 1 cpu); cloud-b: at its max
    assert seen.capacity is not None
    assert (seen.capacity.firm, seen.capacity.elastic, seen.capacity.source) == (
        4,
        27 * 4,
        "cluster-autoscaler",
    )
    assert seen.available_replicas == 4 + 108
    assert seen.capacity.detail == "2 nodes coming"


@pytest.mark.parametrize("present", [False, True])
def test_the_status_configmap_is_parsed_once_per_read_not_per_observation(
    fake: FakeKube, present: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if present:
        autoscaler_status(fake, target=2, registered=1)
    parsed: list[object] = []
    real = status_format.node_groups
    monkeypatch.setattr(status_format, "node_groups", lambda cm: parsed.append(cm) or real(cm))
    member = make_member(fake)
    first = [member.observe(FHPA).capacity for _ in range(3)]
    assert first[0] == first[1] == first[2]
    assert len(parsed) == (1 if present else 0)


@pytest.mark.parametrize("cached", [False, True])
def test_pod_events_sort_pending_pods_into_coming_and_stuck(fake: FakeKube, cached: bool) -> None:
    pend(fake, "web-c", "web-d")
    event(
        fake,
        "web-c",
        "TriggeredScaleUp",
        "2026-01-01T12:00:00Z",
        "pod triggered scale-up: [{cloud-a 1->3 (max: 30)}]",
    )
    event(
        fake,
        "web-d",
        "NotTriggerScaleUp",
        "2026-01-01T12:00:05Z",
        "pod didn't trigger scale-up: 1 max node group size reached",
    )
    seen = observe(fake, cached=cached)
    assert (seen.pending_replicas, seen.pending_coming_replicas, seen.pending_stuck_replicas) == (2, 1, 1)
    assert (
        seen.pending_coming_since is not None
        and seen.pending_coming_since.isoformat() == "2026-01-01T12:00:00+00:00"
    )


def test_karpenter_node_pools_where_served(fake: FakeKube) -> None:
    fake.store.add_resource(
        Resource("karpenter.sh", "v1", "nodepools", "NodePool", namespaced=False, status=True)
    )
    fake.store.create(
        "nodepools.karpenter.sh",
        {
            "metadata": {"name": "default"},
            "spec": {"limits": {"cpu": "100"}},
            "status": {"resources": {"cpu": "4"}},
        },
    )
    seen = observe(fake)
    assert seen.capacity is not None
    assert (seen.capacity.elastic, seen.capacity.source) == (96, "karpenter")


def test_a_declared_bound_when_nothing_readable_says_so(fake: FakeKube) -> None:
    seen = observe(fake, elastic_pods=50, provision_seconds=240)
    assert seen.capacity is not None
    assert (seen.capacity.firm, seen.capacity.elastic, seen.capacity.source) == (4, 50, "declared")
    assert seen.capacity.provision_seconds == 240
    assert seen.available_replicas == 54


def test_the_secret_annotations_declare_the_bound() -> None:
    annotations = {
        "autoscaling.karmada.io/elastic-pods": "200",
        "autoscaling.karmada.io/node-provision-seconds": "180",
    }
    assert declared(annotations) == (200, 180.0, None)
    pods, seconds, problem = declared({"autoscaling.karmada.io/elastic-pods": "lots"})
    assert (pods, seconds) == (None, None) and problem is not None


def test_signals_refused_by_rbac_leave_the_observation_as_it_was(fake: FakeKube) -> None:
    fake.faults.add("GET", r"^/api/v1/(namespaces/default/)?resourcequotas$", status=403, times=-1)
    fake.faults.add("GET", r"^/api/v1/namespaces/kube-system/configmaps/.*$", status=403, times=-1)
    quota(fake, {"pods": "2"}, {"pods": "2"})
    member = make_member(fake)
    seen = member.observe(FHPA)
    assert seen.available_replicas == 4
    member.observe(FHPA)  # a refused read is not asked again at once
    assert [r.path for r in fake.requests if r.path.endswith("resourcequotas")] == [
        "/api/v1/resourcequotas",
        "/api/v1/namespaces/default/resourcequotas",
    ]


def test_quotas_are_one_list_per_member_else_the_namespaces_own(fake: FakeKube) -> None:
    quota(fake, {"pods": "3"}, {"pods": "2"})
    member = make_member(fake)
    assert member.observe(FHPA).available_replicas == 3
    assert member.signals.quotas("kube-system") == []  # another namespace: from the same list
    assert [r.path for r in fake.requests if r.path.endswith("resourcequotas")] == ["/api/v1/resourcequotas"]
    fake.faults.add("GET", r"^/api/v1/resourcequotas$", status=403, times=-1)
    before = len(fake.requests)
    scoped = make_member(fake)  # RBAC grants only the namespace: its own list
    assert scoped.observe(FHPA).available_replicas == 3
    paths = [r.path for r in fake.requests[before:] if r.path.endswith("resourcequotas")]
    assert paths == ["/api/v1/resourcequotas", "/api/v1/namespaces/default/resourcequotas"]


def autoscaler_status(fake: FakeKube, target: int, registered: int) -> None:
    counts = {"registered": {"total": registered}}
    health = {"cloudProviderTarget": target, "minSize": 0, "maxSize": 2, "nodeCounts": counts}
    status = yaml.safe_dump({"nodeGroups": [{"name": "cloud-a", "health": health}]})
    fake.store.create(
        "configmaps",
        {
            "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
            "data": {"status": status},
        },
    )


def test_the_detail_says_nodes_coming_with_the_event(fake: FakeKube) -> None:
    autoscaler_status(fake, target=2, registered=1)
    pend(fake, "web-c")
    event(fake, "web-c", "TriggeredScaleUp", "2026-01-01T12:00:00Z")
    seen = observe(fake)
    assert seen.capacity is not None and seen.capacity.detail == "1 node coming, TriggeredScaleUp"


def test_the_detail_says_the_group_is_at_its_max_with_the_event(fake: FakeKube) -> None:
    autoscaler_status(fake, target=2, registered=2)
    pend(fake, "web-c")
    event(fake, "web-c", "NotTriggerScaleUp", "2026-01-01T12:00:00Z", "1 max node group size reached")
    seen = observe(fake)
    assert seen.capacity is not None
    assert (seen.capacity.source, seen.capacity.detail) == (
        "cluster-autoscaler",
        "node group at max 2 (NotTriggerScaleUp)",
    )
    assert seen.pending_stuck_replicas == 1
