"""Scenario files: the format, durations, and clear errors for everything wrong in them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from simulator.builtin import builtin_document
from simulator.scenario import DEFAULT_START, ScenarioError, load_scenario, parse_duration, parse_scenario


def doc() -> dict[str, Any]:
    return copy.deepcopy(builtin_document())


def problems_of(data: Any) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, "test.yaml")
    assert "test.yaml" in str(caught.value)
    return caught.value.problems


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("10m", 600), ("2h", 7200), ("1h30m", 5400), ("1.5h", 5400), (90, 90), (0, 0)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["10x", "", "m", "-5s", True, None, "5 minutes"])
def test_bad_durations_say_what_is_allowed(bad):
    with pytest.raises(ValueError, match="s, m or h"):
        parse_duration(bad)


def test_start_defaults_to_a_fixed_midnight_utc():
    data = doc()
    del data["start"]
    assert parse_scenario(data).file.start == DEFAULT_START


def test_unknown_keys_are_refused_with_their_path():
    data = doc()
    data["clusters"][0]["capacty"] = 3
    data["lod"] = {}
    found = problems_of(data)
    assert any(p.startswith("clusters[0].capacty: unknown key") for p in found)
    assert any(p.startswith("lod: unknown key") for p in found)


def test_bad_duration_in_a_nested_field_names_the_field():
    data = doc()
    data["clusters"][1]["outages"][0]["for"] = "ten minutes"
    found = problems_of(data)
    assert any(p.startswith("clusters[1].outages[0].for:") and "s, m or h" in p for p in found)


def test_a_federated_hpa_that_fails_validation_is_reported_under_its_key():
    data = doc()
    data["federatedHPA"]["spec"]["minReplicas"] = 200  # above maxReplicas 100
    found = problems_of(data)
    assert any(p.startswith("federatedHPA.spec.") for p in found), found


def test_missing_required_fields_and_wrong_kinds():
    data = doc()
    del data["load"]
    data["federatedHPA"]["kind"] = "CronFederatedHPA"
    found = problems_of(data)
    assert "load: required" in found
    assert any(p.startswith("federatedHPA") for p in found)


def test_cluster_names_must_be_unique():
    data = doc()
    data["clusters"][1]["name"] = "idc"
    assert any("'idc' is used more than once" in p for p in problems_of(data))


def test_trace_must_be_in_time_order():
    data = doc()
    data["load"]["trace"] = [{"at": "10m", "rps": 1}, {"at": "5m", "rps": 2}]
    assert any(p.startswith("load.trace:") and "increasing" in p for p in problems_of(data))


def test_cron_objects_must_target_this_scenario():
    data = doc()
    data["cronFederatedHPAs"] = [
        {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "CronFederatedHPA",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "autoscaling.karmada.io/v1alpha1",
                    "kind": "FederatedHPA",
                    "name": "x",
                },
                "rules": [{"name": "r", "schedule": "0 8 * * *", "targetMaxReplicas": 50}],
            },
        }
    ]
    assert any("no FederatedHPA 'x'" in p for p in problems_of(data))


def test_not_a_mapping():
    assert problems_of([1, 2])[0].startswith("the document must be a mapping")


def test_load_scenario_reports_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("clusters: [\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(broken)
