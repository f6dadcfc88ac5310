"""Which FederatedHPAs a member change concerns (controller/runtime/member_events.py): pure functions."""

from __future__ import annotations

import copy
from typing import Any

from controller.kube.member_cache import HPA, NODE, POD, WORKLOAD, Change, trim_hpa, trim_pod
from controller.planning.member_hpa import LABEL_OWNER_NAME, LABEL_OWNER_NAMESPACE
from controller.runtime.member_events import (
    ALL,
    RecentChanges,
    TargetIndex,
    Touched,
    concerned,
    hpa_matters,
    pod_matters,
    target_of,
    touched,
    workload_matters,
)
from tests.support.fakekube_builders import pod

DEPLOY = ("apps", "Deployment")


def fhpa_obj(name: str, target: str, namespace: str = "shop", api_version: str | None = "apps/v1") -> dict:
    ref: dict[str, Any] = {"kind": "Deployment", "name": target}
    if api_version:
        ref["apiVersion"] = api_version
    return {"metadata": {"namespace": namespace, "name": name}, "spec": {"scaleTargetRef": ref}}


def index_with(*objs: dict) -> TargetIndex:
    index = TargetIndex()
    for obj in objs:
        index.update((obj["metadata"]["namespace"], obj["metadata"]["name"]), target_of(obj))
    return index


def selecting(found: dict[str, list[tuple[tuple[str, str], str]]]) -> Any:
    """workloads_selecting from a map of the pod's app label to workloads."""
    return lambda namespace, labels: found.get(labels.get("app", ""), [])


def test_target_of_defaults_the_group_of_the_apps_kinds() -> None:
    assert target_of(fhpa_obj("f", "web")) == ("shop", "apps", "Deployment", "web")
    assert target_of(fhpa_obj("f", "web", api_version=None)) == ("shop", "apps", "Deployment", "web")
    assert target_of({"metadata": {"name": "x"}, "spec": {}}) is None


def test_the_index_follows_updates_and_deletions() -> None:
    index = index_with(fhpa_obj("a", "web"), fhpa_obj("b", "web"))
    assert index.targeting(("shop", "apps", "Deployment", "web")) == {("shop", "a"), ("shop", "b")}
    index.update(("shop", "b"), ("shop", "apps", "Deployment", "api"))
    assert index.targeting(("shop", "apps", "Deployment", "web")) == {("shop", "a")}
    index.remove(("shop", "a"))
    assert index.targeting(("shop", "apps", "Deployment", "web")) == set()
    assert index.targets_in("shop") == {("shop", "apps", "Deployment", "api")}


def test_a_pod_turning_unschedulable_or_ready_matters_a_status_detail_does_not() -> None:
    running = trim_pod(pod("w-1", labels={"app": "web"}, node_name="n1"))
    pending = trim_pod(pod("w-1", labels={"app": "web"}, unschedulable=True))
    assert pod_matters(running, pending) and pod_matters(None, running) and pod_matters(running, None)
    not_ready = copy.deepcopy(running)
    not_ready["status"]["conditions"] = [
        {**c, "status": "False"} if c["type"] == "Ready" else c for c in not_ready["status"]["conditions"]
    ]
    assert pod_matters(running, not_ready)
    same = copy.deepcopy(running)
    assert not pod_matters(running, same)


def hpa_obj(**status: Any) -> dict:
    return trim_hpa(
        {
            "metadata": {"name": "web", "namespace": "shop", "labels": {LABEL_OWNER_NAME: "f"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ],
            },
            "status": {"currentReplicas": 2, "desiredReplicas": 2, **status},
        }
    )


def cpu(percent: int) -> list[dict]:
    return [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": percent}}}]


def test_an_hpa_matters_when_bounds_replicas_conditions_or_a_tenth_of_the_ratio_change() -> None:
    base = hpa_obj(currentMetrics=cpu(50))
    assert not hpa_matters(base, hpa_obj(currentMetrics=cpu(51)))  # 1.00 -> 1.02: same tenth
    assert hpa_matters(base, hpa_obj(currentMetrics=cpu(60)))  # 1.0 -> 1.2: the planner may see pressure
    assert hpa_matters(base, hpa_obj(currentMetrics=cpu(50), desiredReplicas=3))
    limited = hpa_obj(
        currentMetrics=cpu(50),
        conditions=[{"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas"}],
    )
    assert hpa_matters(base, limited)
    bounds = copy.deepcopy(base)
    bounds["spec"]["maxReplicas"] = 11
    assert hpa_matters(base, bounds)


def test_a_workload_matters_when_its_spec_changes_not_its_resource_version() -> None:
    old = {"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 2}}
    assert not workload_matters(old, {"metadata": {"resourceVersion": "2"}, "spec": {"replicas": 2}})
    assert workload_matters(old, {"metadata": {"resourceVersion": "3"}, "spec": {"replicas": 3}})
    assert workload_matters(None, old) and workload_matters(old, None) and not workload_matters(None, None)


def test_a_workload_matters_when_a_quota_starts_refusing_its_pods() -> None:
    spec = {"replicas": 6}
    refused = {"replicas": 4, "conditions": [{"type": "ReplicaFailure", "status": "True"}]}
    assert workload_matters({"spec": spec}, {"spec": spec, "status": refused})
    assert workload_matters({"spec": spec, "status": refused}, {"spec": spec})


def test_a_pod_change_concerns_the_federated_hpas_of_the_workloads_that_select_it() -> None:
    index = index_with(fhpa_obj("f", "web"), fhpa_obj("g", "api"))
    running = trim_pod(pod("w-1", namespace="shop", labels={"app": "web"}, node_name="n1"))
    pending = trim_pod(pod("w-1", namespace="shop", labels={"app": "web"}, unschedulable=True))
    found = selecting({"web": [(DEPLOY, "web")], "api": [(DEPLOY, "api")]})
    assert concerned(Change(POD, ("shop", "w-1"), running, pending), index, found) == {("shop", "f")}
    assert concerned(Change(POD, ("shop", "w-1"), running, copy.deepcopy(running)), index, found) == set()
    # a pod relabelled from one workload to another concerns both
    moved = trim_pod(pod("w-1", namespace="shop", labels={"app": "api"}, node_name="n1"))
    assert concerned(Change(POD, ("shop", "w-1"), running, moved), index, found) == {
        ("shop", "f"),
        ("shop", "g"),
    }
    # a pod no targeted workload selects concerns nobody
    stray = trim_pod(pod("x", namespace="shop", labels={"app": "batch"}, unschedulable=True))
    assert concerned(Change(POD, ("shop", "x"), None, stray), index, found) == set()


def test_hpa_workload_and_node_changes() -> None:
    index = index_with(fhpa_obj("f", "web"))
    none = selecting({})
    ours = hpa_obj()
    ours["metadata"]["labels"][LABEL_OWNER_NAMESPACE] = "shop"
    moved = copy.deepcopy(ours)
    moved["status"]["desiredReplicas"] = 5
    assert concerned(Change(HPA, ("shop", "web"), ours, moved), index, none) == {("shop", "f")}
    foreign = copy.deepcopy(moved)
    foreign["metadata"] = {"name": "theirs", "namespace": "shop"}  # no owner label: found by its target
    assert concerned(Change(HPA, ("shop", "theirs"), None, foreign), index, none) == {("shop", "f")}
    old = {"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 2}}
    new = {"metadata": {"resourceVersion": "2"}, "spec": {"replicas": 4}}
    assert concerned(Change(WORKLOAD, ("shop", "web"), old, new, DEPLOY), index, none) == {("shop", "f")}
    assert (
        concerned(Change(WORKLOAD, ("shop", "web"), old, new, ("apps", "StatefulSet")), index, none) == set()
    )
    node_a = {"metadata": {"name": "n1"}, "spec": {"unschedulable": False}}
    cordoned = {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}
    assert concerned(Change(NODE, ("", "n1"), node_a, cordoned), index, none) == set(ALL)


def test_a_first_list_is_one_notice_for_every_federated_hpa() -> None:
    index = index_with(fhpa_obj("f", "web"))
    done = Change(POD, ("", ""), None, None, synced=True)
    assert concerned(done, index, selecting({})) == set(ALL)


def test_recent_changes_remember_what_a_change_touched_within_the_window() -> None:
    now = [0.0]
    recent = RecentChanges(300, cap=3, clock=lambda: now[0])
    pending = trim_pod(pod("w-1", namespace="shop", labels={"app": "web"}, unschedulable=True))
    found = selecting({"web": [(DEPLOY, "web")]})
    recent.record(touched(Change(POD, ("shop", "w-1"), None, pending), found))
    web = ("shop", "apps", "Deployment", "web")
    assert recent.holds(("shop", "f"), web)  # by its workload: the FederatedHPA was not known
    assert not recent.holds(("shop", "g"), ("shop", "apps", "Deployment", "api"))
    recent.record(Touched(every=True))  # a node or a first list names nobody first
    assert not recent.holds(("shop", "g"), None)
    now[0] = 301.0
    assert not recent.holds(("shop", "f"), web)  # out of the window
    for i in range(5):
        recent.record(Touched(refs=frozenset({("shop", f"h{i}")})))
    assert [recent.holds(("shop", f"h{i}"), None) for i in range(5)] == [False, False, True, True, True]
