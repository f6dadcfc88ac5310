"""Timed changes in a scenario: the FederatedHPA's spec merge-patched and clusters relabelled mid-run,
with every mistake named by its field before the run starts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from simulator.builtin import builtin_document
from simulator.changes import merge_patch, relabel
from simulator.engine import Simulation
from simulator.scenario import ScenarioError, parse_scenario


def doc(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(builtin_document())
    data["duration"] = "10m"
    data.update(changes)
    return data


def problems_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, "test.yaml")
    return caught.value.problems


def test_a_merge_patch_merges_mappings_replaces_the_rest_and_null_removes():
    target = {"a": {"b": 1, "c": 2}, "l": [1, 2], "gone": 1}
    assert merge_patch(target, {"a": {"b": 5}, "l": [3], "gone": None, "new": {"x": None}}) == {
        "a": {"b": 5, "c": 2},
        "l": [3],
        "new": {},
    }
    assert target["a"] == {"b": 1, "c": 2}  # not changed in place
    assert relabel({"location": "idc", "tier": "1"}, {"tier": None, "zone": "a"}) == {
        "location": "idc",
        "zone": "a",
    }


def test_a_policy_switch_at_its_time_is_stored_as_a_new_generation_and_acted_on():
    data = doc(
        changes=[
            {
                "at": "5m",
                "federatedHPA": {
                    "federatedHPAAssignment": {
                        "federatedHPAAssignmentType": "Duplicated",
                        "clusterAutoscalingPreference": None,
                    }
                },
            }
        ]
    )
    sim = Simulation(parse_scenario(data))
    for _ in range(20):
        sim.step()
    stored = sim.control_plane.peek_federated_hpa(*sim.fhpa_key)
    assert stored is not None and stored.spec.assignment_type == "Prioritized"
    generation = stored.metadata.generation
    sim.step()  # t=5m: the change, then the controller acts on it in the same step
    stored = sim.control_plane.peek_federated_hpa(*sim.fhpa_key)
    assert stored is not None and stored.spec.assignment_type == "Duplicated"
    assert stored.metadata.generation == (generation or 0) + 1
    last = sim.steps[-1].clusters
    assert last["idc"].hpa_max == last["cloud"].hpa_max == 100  # Duplicated: F.max each


def test_a_relabelled_cluster_leaves_the_affinity_at_its_time():
    data = doc(changes=[{"at": "2m", "cluster": "cloud", "labels": {"location": None, "retired": "yes"}}])
    data["federatedHPA"]["spec"]["clusterAffinity"] = {
        "labelSelector": {"matchExpressions": [{"key": "location", "operator": "Exists"}]}
    }
    result = Simulation(parse_scenario(data)).run()
    assert [s.clusters["cloud"].selected for s in result.steps[7:9]] == [True, False]
    assert result.steps[-1].clusters["cloud"].hpa_max is None  # its member HPA was removed


def test_an_annotation_change_pauses_the_federated_hpa_without_a_new_generation():
    paused = {"autoscaling.karmada.io/paused": "true"}
    data = doc(changes=[{"at": "5m", "annotations": paused}, {"at": "8m", "annotations": {"x": "y"}}])
    sim = Simulation(parse_scenario(data))
    for _ in range(20):
        sim.step()
    stored = sim.control_plane.peek_federated_hpa(*sim.fhpa_key)
    assert stored is not None
    generation = stored.metadata.generation
    sim.step()
    stored = sim.control_plane.peek_federated_hpa(*sim.fhpa_key)
    assert stored is not None and stored.metadata.annotations == paused
    assert stored.metadata.generation == generation
    assert any(c.type == "Paused" and c.status == "True" for c in stored.status.conditions or [])
    result = sim.run()
    final = result.final
    assert final is not None and final.metadata.annotations == {**paused, "x": "y"}  # merged, not replaced


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"at": "1m"}, "changes[0]: give one of federatedHPA"),
        ({"at": "1m", "cluster": "idc", "federatedHPA": {}}, "changes[0]: give one of federatedHPA"),
        ({"at": "1m", "annotations": {"a": "b"}, "federatedHPA": {}}, "changes[0]: give one of"),
        ({"at": "1m", "annotations": {"a": 1}}, "changes[0].annotations.a:"),
        ({"at": "1m", "cluster": "nope", "labels": {}}, "changes[0].cluster: no cluster 'nope'"),
        ({"at": "1m", "cluster": "idc"}, "changes[0].labels: required with cluster"),
        ({"at": "1m", "federatedHPA": {}, "labels": {"a": "b"}}, "changes[0].labels: only with cluster"),
        ({"at": "1h", "cluster": "idc", "labels": {}}, "changes[0].at: after the end of the run"),
        ({"at": "1m", "federatedHPA": {"minReplicas": 500}}, "changes[0].federatedHPA.maxReplicas:"),
        ({"at": "soon", "cluster": "idc", "labels": {}}, "changes[0].at:"),
        ({"at": "1m", "cluster": "idc", "labels": {}, "typo": 1}, "changes[0].typo: unknown key"),
    ],
)
def test_a_bad_change_is_named_by_its_field(change: dict[str, Any], problem: str):
    assert any(p.startswith(problem) for p in problems_of(doc(changes=[change]))), problems_of(
        doc(changes=[change])
    )


def test_patches_are_checked_in_time_order_over_the_ones_before():
    changes = [
        {"at": "4m", "federatedHPA": {"minReplicas": 150}},  # fine only after the raise at 2m
        {"at": "2m", "federatedHPA": {"maxReplicas": 200}},
    ]
    parse_scenario(doc(changes=changes))
    changes[1]["at"] = "6m"
    assert any(p.startswith("changes[0].federatedHPA.") for p in problems_of(doc(changes=changes)))


def test_an_unknown_load_model_is_named():
    data = doc()
    data["load"]["model"] = "geo"
    assert any(p.startswith("load.model: unknown model 'geo'") for p in problems_of(data))
