"""The scenario `fhpa simulate` runs when given none."""

from __future__ import annotations

from simulator.builtin import builtin_scenario


def test_the_builtin_scenario_is_valid_and_defaulted():
    scenario = builtin_scenario()
    assert scenario.file.duration == 7200
    assert scenario.file.clusters[1].outages[0].at == 4200
    assert scenario.federated_hpa.spec.assignment_type == "Prioritized"
    assert scenario.federated_hpa.spec.scale_assist is True  # defaulted by fhpa_api.defaulting


def test_the_builtin_scenario_bursts_past_the_preferred_cluster() -> None:
    scenario = builtin_scenario()
    idc, cloud = scenario.file.clusters
    pods_at_peak = max(point.rps for point in scenario.file.load.trace) / scenario.file.load.pod_capacity
    assert idc.capacity < pods_at_peak <= idc.capacity + cloud.capacity
