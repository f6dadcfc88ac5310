"""Capacity arithmetic: requests as the scheduler counts them, free allocatable, replicas that fit."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.planning.capacity import (
    NodeInfo,
    available_replicas,
    node_admits,
    node_info,
    pod_requests,
    replicas_that_fit,
    resource_list,
    tolerates,
    used_by_node,
)
from fhpa_api.quantity import QuantityError

D = Decimal


def spec(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"containers": [{"name": "a", "resources": {"requests": requests}}], **extra}


def running_pod(node: str, cpu: str = "500m", memory: str | None = None, phase: str = "Running") -> dict:
    return {"spec": {**spec(cpu, memory), "nodeName": node}, "status": {"phase": phase}}


def test_requests_add_over_containers_and_limits_stand_in_for_missing_requests() -> None:
    pod = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
            {
                "name": "b",
                "resources": {"limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"memory": "32Mi"}},
            },
        ]
    }
    assert pod_requests(pod) == {"cpu": D("1.25"), "memory": D(96 * 2**20), "pods": 1}


def test_init_containers_count_at_their_peak_and_sidecars_add() -> None:
    pod = {
        "initContainers": [
            {"name": "migrate", "resources": {"requests": {"cpu": "2"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
        ],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}],
        "overhead": {"cpu": "10m"},
    }
    # the plain init container alone (2) outweighs app + sidecar (0.6); overhead on top
    assert pod_requests(pod)["cpu"] == D("2.010")


def test_replicas_that_fit_takes_the_scarcest_resource() -> None:
    free = resource_list({"cpu": "3500m", "memory": "1Gi", "pods": "10"})
    assert replicas_that_fit(free, pod_requests(spec("500m", "256Mi"))) == 4  # memory: 1Gi / 256Mi
    assert replicas_that_fit(free, pod_requests(spec("500m"))) == 7  # cpu: 3.5 / 0.5
    assert replicas_that_fit(free, pod_requests(spec())) == 10  # only pod slots
    assert replicas_that_fit(free, pod_requests(spec("1"))) == 3
    gpu = {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    assert replicas_that_fit(free, pod_requests(gpu)) == 0  # the node offers no GPU


def test_node_admission_cordon_readiness_selector_and_taints() -> None:
    raw: dict[str, Any] = {
        "metadata": {"name": "n", "labels": {"pool": "a"}},
        "spec": {"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    node = node_info(raw)
    assert not node_admits(node, spec("1"))
    tolerant = spec("1", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "batch"}])
    assert node_admits(node, tolerant)
    assert not node_admits(node, {**tolerant, "nodeSelector": {"pool": "b"}})
    assert node_admits(node, {**tolerant, "nodeSelector": {"pool": "a"}})
    assert not node_admits(node_info({**raw, "spec": {"unschedulable": True}}), spec("1"))
    not_ready = {
        **raw,
        "spec": {},
        "status": {**raw["status"], "conditions": [{"type": "Ready", "status": "False"}]},
    }
    assert not node_admits(node_info(not_ready), spec("1"))
    prefer = {**raw, "spec": {"taints": [{"key": "x", "effect": "PreferNoSchedule"}]}}
    assert node_admits(node_info(prefer), spec("1"))


def test_toleration_matching() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoExecute"}
    assert tolerates([{"operator": "Exists"}], taint)
    assert tolerates([{"key": "k", "operator": "Exists", "effect": "NoExecute"}], taint)
    assert not tolerates([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert not tolerates([{"key": "k", "value": "w"}], taint)
    assert not tolerates([], taint)


def test_used_by_node_ignores_unbound_and_terminal_pods() -> None:
    pods = [
        running_pod("n1", "500m"),
        running_pod("n1", "250m"),
        running_pod("n2", "1", phase="Succeeded"),
        {"spec": spec("1"), "status": {"phase": "Pending"}},
    ]
    assert used_by_node(pods) == {"n1": {"cpu": D("0.75"), "pods": 2}}


def test_available_is_running_plus_what_fits_node_by_node() -> None:
    ready = [{"type": "Ready", "status": "True"}]
    nodes = [
        node_info(
            {
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "2", "pods": "110"}, "conditions": ready},
            }
        ),
        node_info(
            {
                "metadata": {"name": "n2"},
                "status": {"allocatable": {"cpu": "2", "pods": "110"}, "conditions": ready},
            }
        ),
        node_info(
            {
                "metadata": {"name": "n3"},
                "spec": {"unschedulable": True},
                "status": {"allocatable": {"cpu": "8", "pods": "110"}, "conditions": ready},
            }
        ),
    ]
    # n1 holds two of our pods (500m each): 1 cpu free, one more 600m pod. n2 has 0.5 cpu free: none.
    # n3 is cordoned. A fleet-wide sum (1.5 cpu free) would say two; node by node it is one.
    pods = [running_pod("n1", "500m"), running_pod("n1", "500m"), running_pod("n2", "1500m")]
    assert available_replicas(nodes, pods, spec("600m"), running=2) == 3


def test_bad_quantities_are_reported() -> None:
    with pytest.raises(QuantityError):
        resource_list({"cpu": "lots"})


quantities = st.decimals(min_value=0, max_value=10_000, places=3, allow_nan=False, allow_infinity=False)
requests = st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), quantities, min_size=1)


@settings(max_examples=200)
@given(free=st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), quantities), request=requests)
def test_fit_is_the_largest_count_that_fits(free: dict[str, Decimal], request: dict[str, Decimal]) -> None:
    n = replicas_that_fit(free, request)
    assert n >= 0
    positive = {k: v for k, v in request.items() if v > 0}
    for name, amount in positive.items():
        assert n * amount <= free.get(name, D(0))
    if positive:
        assert any((n + 1) * amount > free.get(name, D(0)) for name, amount in positive.items())


@settings(max_examples=200)
@given(
    free=st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities), extra=quantities, request=requests
)
def test_more_free_never_fits_fewer(
    free: dict[str, Decimal], extra: Decimal, request: dict[str, Decimal]
) -> None:
    more = {k: v + extra for k, v in free.items()}
    assert replicas_that_fit(more, request) >= replicas_that_fit(free, request)


@settings(max_examples=100)
@given(running=st.integers(0, 50), cpu=st.integers(1, 64), used=st.integers(0, 64))
def test_available_never_below_running(running: int, cpu: int, used: int) -> None:
    node = NodeInfo("n", {"cpu": D(cpu), "pods": D(110)})
    pods = [running_pod("n", str(used))]
    assert available_replicas([node], pods, spec("1"), running) >= running
