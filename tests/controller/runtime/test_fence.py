"""The write fence: every write a port declares is refused once this process may no longer write.

The fence learns the write verbs from the ports' ``@writes`` marks, so these tests hold the ports to
that: every method a port declares is either a known read or a marked write (a new method must be
classified to pass), and every marked write, on either port, is refused by the fenced wrapper.
"""

from __future__ import annotations

from typing import Any, Protocol

import pytest
from prometheus_client import CollectorRegistry

from controller.finalizer import FinalizerStore
from controller.planning.observation import ClusterObservation
from controller.planning.plan import HPAAction, ReplicaWrite
from controller.ports import (
    ClusterIdentity,
    ConditionalControlPlane,
    ControlPlane,
    MemberCluster,
    MemberWrite,
    NotLeaderError,
    write_verbs,
)
from controller.runtime.fence import CONTROL_PLANE_WRITES, Fence, FencedControlPlane, FencedMember
from controller.runtime.metrics import Metrics, TimedMember
from fhpa_api.models import FederatedHPA

PORTS: tuple[type, ...] = (MemberCluster, ControlPlane, ConditionalControlPlane, FinalizerStore)

READS = frozenset(
    {
        "identity",
        "probe",
        "observe",
        "get_federated_hpa",
        "list_federated_hpas",
        "get_cron_federated_hpa",
        "list_cron_federated_hpas",
        "get_scale",
        "get_config_map_data",
    }
)
"""Every port method that changes nothing. A method in neither this set nor marked ``@writes`` fails."""

FHPA = FederatedHPA.model_validate(
    {
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4},
    }
)

ACTIONS: list[MemberWrite] = [
    HPAAction(cluster="m1", op="create", spec={"maxReplicas": 4}),
    HPAAction(cluster="m1", op="update", spec={"maxReplicas": 4}),
    HPAAction(cluster="m1", op="delete"),
    ReplicaWrite(cluster="m1", replicas=2, reason="test"),
]


def declared(port: type) -> set[str]:
    """The public methods and properties a port protocol declares itself."""
    return {name for name in vars(port) if not name.startswith("_")}


def unclassified(port: type) -> set[str]:
    return declared(port) - READS - write_verbs(port)


@pytest.mark.parametrize("port", PORTS, ids=lambda p: p.__name__)
def test_every_port_method_is_a_read_or_a_marked_write(port: type) -> None:
    assert declared(port), "the port declares nothing: the check would be empty"
    assert unclassified(port) == set(), "mark the new write with @writes (or list it in READS if it reads)"
    assert not write_verbs(port) & READS


def test_an_unmarked_write_on_a_port_is_caught() -> None:
    class Grown(ControlPlane, Protocol):
        def delete_federated_hpa(self, namespace: str, name: str) -> None: ...

    assert unclassified(Grown) == {"delete_federated_hpa"}


def test_the_fence_refuses_exactly_what_the_ports_mark_as_writes() -> None:
    assert write_verbs(ControlPlane, ConditionalControlPlane, FinalizerStore) == CONTROL_PLANE_WRITES
    assert {"update_federated_hpa_status", "set_finalizers", "emit_event"} <= CONTROL_PLANE_WRITES


class Recorder:
    """Any method: records its name and returns None."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self.calls.append(name)


@pytest.mark.parametrize("verb", sorted(CONTROL_PLANE_WRITES))
def test_a_closed_fence_refuses_every_control_plane_write(verb: str) -> None:
    inner = Recorder()
    fence = Fence(lambda: False)
    with pytest.raises(NotLeaderError):
        getattr(FencedControlPlane(inner, fence), verb)()
    assert inner.calls == [] and fence.refused == 1


def test_a_closed_fence_lets_control_plane_reads_through() -> None:
    inner = Recorder()
    FencedControlPlane(inner, Fence(lambda: False)).list_federated_hpas()
    assert inner.calls == ["list_federated_hpas"]


class Member:
    """A member that records the writes that reach it."""

    def __init__(self) -> None:
        self.identity = ClusterIdentity(name="m1")
        self.written: list[MemberWrite] = []

    def probe(self) -> bool:
        return True

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        return self.identity.observed()

    def write(self, fhpa: FederatedHPA, action: MemberWrite) -> None:
        self.written.append(action)


@pytest.mark.parametrize("verb", sorted(write_verbs(MemberCluster)))
@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: getattr(a, "op", "scale"))
def test_a_closed_fence_refuses_every_member_write(verb: str, action: MemberWrite) -> None:
    inner = Member()
    with pytest.raises(NotLeaderError):
        getattr(FencedMember(inner, Fence(lambda: False)), verb)(FHPA, action)
    assert inner.written == []


def test_a_closed_fence_lets_member_reads_through() -> None:
    fenced = FencedMember(Member(), Fence(lambda: False))
    assert fenced.probe()
    assert fenced.observe(FHPA).name == "m1"


def test_layers_stack_and_each_sees_every_write() -> None:
    inner = Member()
    metrics = Metrics(CollectorRegistry())
    member = FencedMember(TimedMember(inner, metrics), Fence(lambda: True))
    for action in ACTIONS:
        member.write(FHPA, action)
    assert inner.written == ACTIONS
    timed = {
        sample.labels["operation"]: sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == "fhpa_member_api_latency_seconds_count"
    }
    assert timed == {"apply_hpa": 2.0, "delete_hpa": 1.0, "scale": 1.0}
