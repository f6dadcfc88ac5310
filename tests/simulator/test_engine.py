"""The run loop's own duties: the invariant checks can fire, outages freeze the right things."""

from __future__ import annotations

import copy

import pytest

from controller.errors import ClusterUnreachableError
from controller.planning.member_hpa import render_spec
from simulator.builtin import builtin_document
from simulator.engine import Simulation
from simulator.scenario import parse_scenario


def short_builtin(minutes: int = 10) -> Simulation:
    data = copy.deepcopy(builtin_document())
    data["duration"] = f"{minutes}m"
    return Simulation(parse_scenario(data))


def kinds(sim: Simulation) -> set[str]:
    return {v.kind for v in sim._violations}


def test_a_clean_run_has_no_violations():
    sim = short_builtin()
    result = sim.run()
    assert result.violations == []
    assert len(result.steps) == 40
    assert result.controller_passes >= 40


def test_tampered_member_hpas_are_reported():
    sim = short_builtin()
    for i in range(20):  # 5 minutes: well past every settle window
        sim._step(i * 15.0, 15.0)
    assert kinds(sim) == set()
    fhpa = sim.control_plane.get_federated_hpa(*sim.fhpa_key)
    assert fhpa is not None
    idc = sim.clusters["idc"]
    idc.apply_hpa(fhpa, render_spec(fhpa, 5, 3))  # min above max, and the maxes no longer sum to 100
    sim._check_invariants(20 * 15.0, 15.0)
    assert kinds(sim) == {"member-min-above-max", "max-sum-not-federated-max"}


def test_writes_that_give_replicas_to_a_down_cluster_are_reported():
    sim = short_builtin()
    sim._step(0.0, 15.0)
    cloud = sim.clusters["cloud"]
    cloud.set_down(True)
    fhpa = sim.control_plane.get_federated_hpa(*sim.fhpa_key)
    assert fhpa is not None
    with pytest.raises(ClusterUnreachableError):
        cloud.scale_workload("default", fhpa.spec.scale_target_ref, 50)
    sim._check_invariants(15.0, 15.0)
    assert "replicas-to-unhealthy-cluster" in kinds(sim)


def test_during_a_controller_outage_nothing_is_written_and_hpas_still_sync():
    data = copy.deepcopy(builtin_document())
    data["duration"] = "40m"
    data["controllerOutages"] = [{"at": "15m", "for": "20m"}]
    result = Simulation(parse_scenario(data)).run()
    outage = [s for s in result.steps if not s.controller_up]
    assert len(outage) == 80 and all(not s.actions for s in outage)
    idc = [s.clusters["idc"].replicas for s in outage]
    assert idc[-1] > idc[0]  # the burst starts at 20m: idc's HPA scales without the controller
