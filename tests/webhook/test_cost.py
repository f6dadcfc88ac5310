"""What one review may cost the webhook: the container cap before parsing, the CRD list limits before
models, and the per-worker memory budget."""

from __future__ import annotations

import json
import threading
import tracemalloc
from typing import Any

import pytest

from fhpa_api import limits
from fhpa_api.defaulting import default_patch
from fhpa_api.list_limits import oversized_list
from fhpa_api.validation import validate
from tests.support.reviews import fhpa, review
from webhook.app import create_app
from webhook.cost import MAX_CONTAINERS, MemoryBudget, OverBudget, TooManyContainers, check_containers

MiB = 1024 * 1024


def _peak_of(post: Any) -> tuple[Any, float]:
    tracemalloc.start()
    try:
        answer = post()
        return answer, tracemalloc.get_traced_memory()[1] / MiB
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_a_worst_case_body_is_refused_before_it_is_parsed(path: str) -> None:
    body = json.dumps(review(fhpa(metrics=[{}] * 780_000))).encode()
    assert len(body) < 3 * MiB
    client = create_app().test_client()
    resp, peak = _peak_of(lambda: client.post(path, data=body, content_type="application/json"))
    assert resp.status_code == 400
    assert "JSON objects and lists" in resp.get_json()["error"]
    assert peak < 16  # MiB: the body and the test client's copies of it; parsing it cost over 100


def test_a_list_over_its_crd_limit_is_refused_before_models_are_built() -> None:
    obj = fhpa(metrics=[{}] * 40_000)  # under the container cap, far over maxItems
    result, peak = _peak_of(lambda: validate(obj))
    assert [(e.path, e.message) for e in result.errors] == [
        ("spec.metrics", f"has 40000 items; at most {limits.METRICS_MAX_ITEMS} are allowed")
    ]
    assert peak < 2  # MiB; building a model per metric took over 50
    assert default_patch(obj) == []


def test_lists_at_their_limits_pass_and_nested_lists_are_checked() -> None:
    names = [f"m{i}" for i in range(limits.CLUSTER_NAMES_MAX_ITEMS)]
    at_limit = fhpa(clusterAffinity={"clusterNames": names})
    assert oversized_list(at_limit) is None
    too_many = ["a"] * (limits.SELECTOR_VALUES_MAX_ITEMS + 1)
    nested = fhpa(
        clusterAffinity={
            "labelSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": too_many}]}
        }
    )
    path, length, limit = oversized_list(nested) or ("", 0, 0)
    assert path == "spec.clusterAffinity.labelSelector.matchExpressions[0].values"
    assert (length, limit) == (limits.SELECTOR_VALUES_MAX_ITEMS + 1, limits.SELECTOR_VALUES_MAX_ITEMS)


def _widest_spec() -> dict[str, Any]:
    """A FederatedHPA spec with every list of containers at its CRD limit."""
    selector = {
        "matchExpressions": [
            {"key": "k", "operator": "In", "values": ["v"]}
            for _ in range(limits.SELECTOR_EXPRESSIONS_MAX_ITEMS)
        ]
    }
    metric = {"type": "External", "external": {"metric": {"name": "m", "selector": selector}, "target": {}}}
    target = {"labelSelector": selector, "fieldSelector": selector, "clusterNames": ["a"], "exclude": ["b"]}
    return {
        "metrics": [metric] * limits.METRICS_MAX_ITEMS,
        "behavior": {d: {"policies": [{}] * limits.POLICIES_MAX_ITEMS} for d in ("scaleUp", "scaleDown")},
        "clusterAffinity": {"labelSelector": selector, "fieldSelector": selector},
        "federatedHPAAssignment": {
            "clusterAutoscalingPreference": [{"targetCluster": target}] * limits.PREFERENCES_MAX_ITEMS
        },
    }


def test_the_widest_update_the_crds_allow_is_under_the_container_cap() -> None:
    obj = fhpa(**_widest_spec())
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(obj)}
    obj["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": obj["spec"]}}]
    body = json.dumps(review(obj, "UPDATE", old=obj)).encode()
    check_containers(body)  # does not raise
    with pytest.raises(TooManyContainers):
        check_containers(b"[" * (MAX_CONTAINERS + 1))


def test_the_budget_holds_one_large_body_at_a_time_and_lets_small_ones_by() -> None:
    budget = MemoryBudget(budget=4 * MiB, wait=0.05)
    with budget.reserve(3 * MiB):
        with budget.reserve(8 * 1024):  # a normal review beside the large one
            pass
        with pytest.raises(OverBudget), budget.reserve(3 * MiB):
            pass
    assert budget.free == 4 * MiB


def test_a_waiting_request_gets_its_share_when_the_holder_finishes() -> None:
    budget = MemoryBudget(budget=4 * MiB, wait=30)
    holding, got = threading.Event(), threading.Event()

    def second() -> None:
        holding.wait()
        with budget.reserve(3 * MiB):
            got.set()

    thread = threading.Thread(target=second)
    thread.start()
    with budget.reserve(3 * MiB):
        holding.set()
        assert not got.wait(0.05)
    thread.join(timeout=30)
    assert got.is_set()


def test_the_app_answers_503_when_the_budget_stays_spent() -> None:
    budget = MemoryBudget(budget=4 * MiB, wait=0.01)
    client = create_app(budget=budget).test_client()
    body = json.dumps(review(fhpa())).encode()
    with budget.reserve(4 * MiB):
        resp = client.post("/validate", data=body, content_type="application/json")
    assert resp.status_code == 503
    assert client.post("/validate", data=body, content_type="application/json").status_code == 200
