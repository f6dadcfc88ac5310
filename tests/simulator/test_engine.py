"""The run loop's own duties: the invariant checks can fire, outages freeze the right things, the samples
record the facts the promises are measured from, and the promises' breaches are the run's violations."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

import controller.federated_hpa_controller as fhpa_controller
import simulator.engine as engine
from controller.errors import ClusterUnreachableError
from controller.finalizer import FINALIZER
from controller.planning.member_hpa import LABEL_OWNER_UID, render_spec
from controller.planning.namespaces import NamespacePolicy
from simulator.builtin import builtin_document
from simulator.engine import Simulation
from simulator.promises import PromiseReport, PromiseTerms, Violation
from simulator.report import summarize
from simulator.scenario import parse_scenario
from tests.support.writes import apply_hpa, scale


def short_builtin(minutes: int = 10) -> Simulation:
    data = copy.deepcopy(builtin_document())
    data["duration"] = f"{minutes}m"
    return Simulation(parse_scenario(data))


def kinds(sim: Simulation) -> set[str]:
    return {v.kind for v in sim.violations}


def test_a_clean_run_has_no_violations():
    sim = short_builtin()
    result = sim.run()
    assert result.violations == []
    assert len(result.steps) == 40
    assert result.controller_passes >= 40


def test_a_tampered_member_hpa_is_reported_once_while_it_stays_so():
    data = copy.deepcopy(builtin_document())
    data["duration"] = "10m"
    data["controllerOutages"] = [{"at": "5m", "for": "5m"}]  # nothing repairs the tampered HPA
    sim = Simulation(parse_scenario(data))
    for _ in range(20):
        sim.step()
    assert kinds(sim) == set()
    fhpa = sim.control_plane.get_federated_hpa(*sim.fhpa_key)
    assert fhpa is not None
    idc = sim.clusters["idc"]
    apply_hpa(idc, fhpa, render_spec(fhpa, 5, 3))  # min above max
    sim.step()
    sim.step()
    assert [v.kind for v in sim.violations] == ["member-min-above-max"]


def test_writes_that_give_replicas_to_a_down_cluster_are_reported():
    sim = short_builtin()
    sim.step()
    cloud = sim.clusters["cloud"]
    cloud.set_down(True)
    fhpa = sim.control_plane.get_federated_hpa(*sim.fhpa_key)
    assert fhpa is not None
    with pytest.raises(ClusterUnreachableError):
        scale(cloud, fhpa, 50)
    sim.step()
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


def test_the_samples_record_selection_workload_foreign_hpas_and_drains():
    data = copy.deepcopy(builtin_document())
    data["duration"] = "2m"
    data["clusters"].append({"name": "lab", "capacity": 10})  # not selected by the affinity below
    data["clusters"].append(
        {"name": "edge", "labels": {"location": "idc"}, "capacity": 10, "workload": False}
    )
    data["federatedHPA"]["spec"]["clusterAffinity"] = {"clusterNames": ["idc", "cloud", "edge"]}
    sim = Simulation(parse_scenario(data))
    target = sim.scenario.federated_hpa.spec.scale_target_ref
    sim.clusters["cloud"].add_foreign_hpa("theirs", {"scaleTargetRef": target.model_dump(), "maxReplicas": 5})
    first = sim.run().steps[0].clusters
    assert {n: c.selected for n, c in first.items()} == {
        "idc": True,
        "cloud": True,
        "lab": False,
        "edge": True,
    }
    assert {n: c.workload for n, c in first.items()} == {
        "idc": True,
        "cloud": True,
        "lab": True,
        "edge": False,
    }
    assert first["cloud"].foreign_hpa and first["cloud"].hpa_max is None  # ConflictingHPA: none of ours
    assert not first["idc"].foreign_hpa and first["idc"].hpa_max is not None


def test_a_controller_write_that_lowers_replicas_is_recorded_as_a_drain(monkeypatch):
    sim = short_builtin(2)
    sim.step()
    idc = sim.clusters["idc"]
    assert idc.replicas == 20
    original = fhpa_controller.reconcile_federated_hpa

    def lowering_once(fhpa, members, control_plane, clock, config, on_action, on_pass):  # type: ignore[no-untyped-def]
        scale(idc, fhpa, 12)  # a controller writing idc down
        on_action("scale", "idc", True)
        monkeypatch.setattr(fhpa_controller, "reconcile_federated_hpa", original)
        return original(fhpa, members, control_plane, clock, config, on_action=on_action, on_pass=on_pass)

    monkeypatch.setattr(fhpa_controller, "reconcile_federated_hpa", lowering_once)
    sim.step()
    sim.step()
    assert [s.clusters["idc"].drained for s in sim.steps] == [False, True, False]


def test_promise_breaches_are_the_runs_violations_and_their_figures_are_in_the_summary(monkeypatch):
    seen: list[PromiseTerms] = []

    def fake_measure(steps, terms):  # type: ignore[no-untyped-def]
        seen.append(terms)
        return PromiseReport(terms, [Violation(30.0, "floor", "f")], 45.0, 90.0, 15.0, 5)

    monkeypatch.setattr(engine, "measure", fake_measure)
    data = copy.deepcopy(builtin_document())
    data["duration"] = "2m"
    data["planner"] = {"failoverGraceSeconds": 90, "optimizationPeriodSeconds": 120}
    result = Simulation(parse_scenario(data)).run()
    assert seen == [PromiseTerms(15.0, 90.0, 120.0, "Prioritized", True)]
    assert [(v.t, v.kind) for v in result.violations] == [(30.0, "floor")]
    summary = summarize(result)
    assert summary["violation_count"] == 1
    assert summary["promises_checked"] == ["floor", "unmanaged-replicas", "ceiling", "churn"]
    assert [summary[k] for k in ("floor_breach_seconds", "unmanaged_replica_seconds")] == [45.0, 90.0]
    assert [summary[k] for k in ("over_max_seconds", "max_reversals")] == [15.0, 5]


def test_duplicated_maxes_above_federated_max_are_measured_but_not_a_violation():
    data = copy.deepcopy(builtin_document())
    data["duration"] = "5m"
    data["federatedHPA"]["spec"]["federatedHPAAssignment"] = {"federatedHPAAssignmentType": "Duplicated"}
    summary = summarize(Simulation(parse_scenario(data)).run())
    assert summary["promises_checked"] == ["floor", "unmanaged-replicas"]
    assert summary["over_max_seconds"] == 300  # two clusters with F.max each, the whole run
    assert summary["violations"] == []


def test_a_federated_hpa_in_a_refused_namespace_is_not_acted_on_in_simulation():
    data = copy.deepcopy(builtin_document())
    data["duration"] = "2m"
    sim = Simulation(parse_scenario(data), namespaces=NamespacePolicy(deny=("default",)))
    result = sim.run()
    assert result.controller_passes == 0 and all(not s.actions for s in result.steps)
    assert all(c.api_writes == 0 for c in sim.clusters.values())
    assert not any(h.labels.get(LABEL_OWNER_UID) for c in sim.clusters.values() for h in c.hpas.values())
    assert result.final is not None and not result.final.metadata.finalizers
    ready = next(c for c in result.final.status.conditions or [] if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", "NamespaceNotAllowed")
    assert [e.reason for e in result.events] == ["NamespaceNotAllowed"]  # once, not every pass


def test_a_federated_hpa_deleted_mid_run_has_its_member_hpas_removed_and_its_finalizer_released():
    sim = short_builtin(5)
    for _ in range(4):
        sim.step()
    fhpa = sim.control_plane.get_federated_hpa(*sim.fhpa_key)
    assert fhpa is not None and fhpa.metadata.finalizers == [FINALIZER]
    uid = fhpa.metadata.uid
    owned = [
        n
        for n, c in sim.clusters.items()
        if any(h.labels.get(LABEL_OWNER_UID) == uid for h in c.hpas.values())
    ]
    assert owned  # the controller made member HPAs
    sim.control_plane.delete_federated_hpa(*sim.fhpa_key)
    assert sim.control_plane.get_federated_hpa(*sim.fhpa_key) is not None  # held by the finalizer
    sim.step()
    assert sim.control_plane.get_federated_hpa(*sim.fhpa_key) is None  # finalizer released: gone
    assert not any(
        h.labels.get(LABEL_OWNER_UID) == uid for c in sim.clusters.values() for h in c.hpas.values()
    )
    assert sorted(a for a in sim.steps[-1].actions if a.startswith("delete/")) == sorted(
        f"delete/{n}" for n in sim.clusters
    )
    assert "CleanedUp" in [e.reason for e in sim.control_plane.events]


def test_step_runs_the_next_step_and_returns_its_sample():
    sim = short_builtin(2)
    first, second = sim.step(), sim.step()
    assert (first.t, second.t) == (0.0, 15.0)
    assert sim.steps == [first, second] and sim.elapsed == 30.0
    result = sim.run()  # the steps left to the duration, after the ones already run
    assert [s.t for s in result.steps] == [15.0 * i for i in range(8)]


def test_a_load_model_the_engine_is_given_decides_demand_and_shares():
    class HalfOnIdc:
        """A load balancer that sends half the demand to idc whatever its pods (not equal share)."""

        pod_capacity = 100.0

        def demand(self, seconds: float) -> float:
            return 4000.0

        def share(self, demand_rps, ready_by_cluster):  # type: ignore[no-untyped-def]
            from simulator.load import share_load

            idc = share_load(demand_rps / 2, {"idc": ready_by_cluster.get("idc", 0)}, 100.0)
            return replace(
                idc, demand_rps=demand_rps, served_by_cluster={**idc.served_by_cluster, "cloud": 0.0}
            )

    sim = short_builtin(1)
    sim.load = HalfOnIdc()
    sample = sim.step()
    assert sample.demand_rps == 4000.0
    assert sample.clusters["idc"].served_rps == 2000.0 and sample.clusters["cloud"].served_rps == 0.0


def test_the_samples_record_the_shorter_grace_of_a_held_sole_holder():
    """idc runs the one replica and cloud none: when idc stops answering, the controller gives it the blip
    tolerance (30 s), not the failover grace (60 s), and the samples must say so, or the promises read
    its failover as a blip that moved nothing."""
    data = copy.deepcopy(builtin_document())
    data["duration"] = "3m"
    idc, cloud = data["clusters"]
    idc.update(replicas=1, outages=[{"at": 60, "for": 90}])
    cloud.pop("outages")
    data["load"] = {"podCapacity": 100, "trace": [{"at": 0, "rps": 50}]}
    data["federatedHPA"]["spec"].update(minReplicas=1, maxReplicas=1)
    steps = Simulation(parse_scenario(data)).run().steps
    held = [s.clusters["idc"].failover_grace_s for s in steps if s.clusters["idc"].down]
    assert held[0] == 30
    assert [s.clusters["idc"].failover_grace_s for s in steps if s.t < 60] == [60] * 4


def test_a_short_grace_the_controller_records_wrongly_is_not_the_one_measured(monkeypatch):
    """Both clusters run a replica, so idc is no sole holder; a controller that calls every unreachable
    cluster one fails it over after 30 s and records that grace. The samples keep the 60 s the
    simulator's own view gives, so the early failover is measured as one."""
    import controller.planning.planner as planner

    monkeypatch.setattr(
        planner, "_sole_holders", lambda selected, rows: {o.name for o in selected if not o.healthy}
    )
    data = copy.deepcopy(builtin_document())
    data["duration"] = "3m"
    idc, cloud = data["clusters"]
    idc.update(replicas=1, outages=[{"at": 60, "for": 90}])
    cloud.pop("outages")
    cloud["replicas"] = 1
    data["load"] = {"podCapacity": 100, "trace": [{"at": 0, "rps": 150}]}
    data["federatedHPA"]["spec"].update(minReplicas=2, maxReplicas=2)
    steps = Simulation(parse_scenario(data)).run().steps
    assert next(s.clusters["idc"].failover_grace_s for s in steps if s.clusters["idc"].down) == 60
