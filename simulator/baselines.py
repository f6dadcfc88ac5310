"""The baselines `fhpa simulate --compare` runs next to the scenario's own FederatedHPA.

Each keeps the scenario's load, outages, controller outages, cron rules and the FederatedHPA's bounds,
metrics and behavior, so the difference in the table is the policy's doing:
- ``static-split``: each cluster's own HPA with an equal share of min and max and no help afterwards
  (KubeFed v1 style): StaticWeighted with equal weights and ``scaleAssist: false``;
- ``duplicated``: every cluster's HPA gets the full min/max (Duplicated);
- ``single-hpa``: the fleet behaving as one HPA: one native HPA with F.min..F.max over one cluster
  (``pooled``) that holds the pooled capacity of the clusters that are up. This is the limit for any
  controller that only moves member HPAs' bounds: no split, no spill delay, no stranded headroom.

How ``single-hpa`` is built (``pooled_scenario``):
- the pool is the clusters the FederatedHPA can place on: selected by its clusterAffinity, with the
  workload (``workload: true``), not tainted NoExecute;
- its capacity at each step is the sum of the capacities of the pool's clusters that are not in an
  outage at that step. A member's outage removes its capacity; pods beyond the smaller room go back to
  Pending (starting ones first, then Ready ones) and start again, after the pod start-up, when room
  returns; while they pend the HPA counts them as unready, as a real HPA would. This is optimistic where
  it matters most: the pods that survive are all that fit in the room left (the fleet runs lose every
  pod of the member that went down, however much room the others had), which is what makes it the
  limit. It is pessimistic in one detail: a fleet's down member serves again at once when it returns,
  while the pool's pended pods start again;
- its pods start in the capacity-weighted mean of the members' ``podStartup`` (the expected start-up of
  a pod placed anywhere in the pool): neither the fastest member's, which would make the pool beat
  physics, nor the slowest's;
- it starts with the pool members' replicas at t=0, all Ready up to the pooled room;
- the FederatedHPA becomes Duplicated over that one cluster (no clusterAffinity, no preferences,
  no scalingToZero, no multi-cluster delay); load, metrics, behavior, F.min/F.max, controller outages,
  cron rules and planner flags stay as written.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from controller.planning.affinity import affinity_matches
from controller.ports import ClusterIdentity
from simulator.cluster import taints_from
from simulator.engine import Progress, RunResult, Simulation
from simulator.scenario import ClusterSpec, Scenario, baseline_changes, parse_scenario

STATIC_SPLIT = "static-split"
DUPLICATED = "duplicated"
SINGLE_HPA = "single-hpa"
POOLED = "pooled"
"""The name of the single-hpa baseline's one cluster."""
SINGLE_HPA_POLICY = "one native HPA"


def static_split(raw_fhpa: dict[str, Any], clusters: list[str]) -> dict[str, Any]:
    """StaticWeighted with weight 1 for every cluster (an equal split) and no assistance."""
    raw = copy.deepcopy(raw_fhpa)
    spec = raw.setdefault("spec", {})
    spec["federatedHPAAssignment"] = {
        "federatedHPAAssignmentType": "StaticWeighted",
        "clusterAutoscalingPreference": [
            {"targetCluster": {"clusterNames": [name]}, "staticWeight": 1} for name in clusters
        ],
    }
    spec["scaleAssist"] = False
    spec.pop("scalingToZero", None)
    spec.pop("autoscaleMultiClusterDelay", None)
    return raw


def duplicated(raw_fhpa: dict[str, Any]) -> dict[str, Any]:
    raw = copy.deepcopy(raw_fhpa)
    spec = raw.setdefault("spec", {})
    spec["federatedHPAAssignment"] = {"federatedHPAAssignmentType": "Duplicated"}
    spec.pop("scalingToZero", None)
    spec.pop("autoscaleMultiClusterDelay", None)
    return raw


def baseline_scenarios(scenario: Scenario) -> list[tuple[str, Scenario]]:
    """static-split and duplicated: the baselines that are plain scenarios (single-hpa is not; see
    :func:`baselines`)."""
    raw = scenario.file.federated_hpa
    names = [c.name for c in scenario.file.clusters]
    return [
        (STATIC_SPLIT, scenario.with_federated_hpa(static_split(raw, names), STATIC_SPLIT)),
        (DUPLICATED, scenario.with_federated_hpa(duplicated(raw), DUPLICATED)),
    ]


@dataclass(frozen=True)
class PooledCapacity:
    """The pooled cluster's fixed room at an instant: the room of the pool's fixed members that are up
    (their capacity changes and quotas applied); the elastic members pool into one node group."""

    start: datetime
    members: tuple[ClusterSpec, ...]

    def at(self, seconds: float) -> int:
        return sum(
            _fixed_room(c, seconds) for c in self.members if c.autoscaling is None and not c.down_at(seconds)
        )

    def __call__(self, now: datetime) -> int:
        return self.at((now - self.start).total_seconds())


@dataclass(frozen=True)
class Baseline:
    """One baseline run: a scenario, plus the room of clusters whose capacity changes over time."""

    label: str
    scenario: Scenario
    capacity_at: dict[str, Callable[[datetime], int]] = field(default_factory=dict)
    fixed_pod_cost: dict[str, float] = field(default_factory=dict)  # a pod-hour on that fixed room
    # what the report names as the run's policy where the scenario's own would mislead (single-hpa runs
    # Duplicated over one pooled cluster, which is one native HPA, not the Duplicated policy)
    policy: str | None = None

    def run(self, progress: Progress | None = None) -> RunResult:
        simulation = Simulation(self.scenario, progress)
        for name, capacity_at in self.capacity_at.items():
            cluster = simulation.clusters[name]
            cluster.capacity_at = capacity_at
            cluster.warm_start(simulation.clock.now())
        for name, cost in self.fixed_pod_cost.items():
            cluster = simulation.clusters[name]
            cluster.room = replace(cluster.room, cost_per_pod_hour=cost)
        return simulation.run()


def pool_members(scenario: Scenario) -> list[ClusterSpec]:
    """The clusters the FederatedHPA can place on: selected by its affinity, with the workload, not
    tainted NoExecute."""
    affinity = scenario.federated_hpa.spec.cluster_affinity
    members = []
    for c in scenario.file.clusters:
        taints = taints_from([t.model_dump(exclude_none=True) for t in c.taints])
        identity = ClusterIdentity(
            name=c.name, labels=c.labels, provider=c.provider, region=c.region, zone=c.zone, taints=taints
        )
        observed = identity.observed()
        if c.workload and not observed.no_execute and affinity_matches(affinity, observed):
            members.append(c)
    return members


def _fixed_room(member: ClusterSpec, seconds: float) -> int:
    room = member.capacity_at(seconds)
    return room if member.quota is None else min(room, member.quota.pods)


def _elastic_pods(member: ClusterSpec, nodes: int) -> int:
    """Pods ``nodes`` nodes of an elastic member hold, within its quota."""
    assert member.autoscaling is not None
    pods = nodes * member.autoscaling.pods_per_node
    return pods if member.quota is None else min(pods, member.quota.pods)


def pooled_node_group(members: list[ClusterSpec]) -> dict[str, Any] | None:
    """The elastic members' node groups as one: nodes of the greatest common size, their min and max
    summed, the fastest provisioning and idle times (one autoscaler choosing the quickest group is the
    limit), and a node's cost the mean of the groups' weighted by their size at max. None: no member is
    elastic."""
    elastic = [c for c in members if c.autoscaling is not None]
    if not elastic:
        return None
    groups = [c.autoscaling for c in elastic if c.autoscaling is not None]
    size = math.gcd(*(g.pods_per_node for g in groups))
    top = [_elastic_pods(c, g.max_nodes) for c, g in zip(elastic, groups, strict=True)]
    cost = sum(c.cost_per_pod_hour * t for c, t in zip(elastic, top, strict=True)) / max(1, sum(top))
    return {
        "autoscaling": {
            "podsPerNode": size,
            "minNodes": sum(_elastic_pods(c, g.min_nodes) for c, g in zip(elastic, groups, strict=True))
            // size,
            "maxNodes": sum(top) // size,
            "provisionSeconds": min(g.provision_seconds for g in groups),
            "idleSeconds": min(g.idle_seconds for g in groups),
        },
        "capacity": sum(c.capacity for c in elastic) // size * size,
        "costPerPodHour": cost if sum(top) else 1.0,
    }


def pooled_fixed_cost(members: list[ClusterSpec]) -> float:
    """What a pod-hour on the pool's fixed room costs: the fixed members' rates weighted by their room."""
    fixed = [c for c in members if c.autoscaling is None]
    room = sum(_fixed_room(c, 0.0) for c in fixed)
    if room == 0:
        return sum(c.cost_per_pod_hour for c in fixed) / len(fixed) if fixed else 1.0
    return sum(c.cost_per_pod_hour * _fixed_room(c, 0.0) for c in fixed) / room


def pooled_startup(members: list[ClusterSpec]) -> float:
    """The capacity-weighted mean pod start-up of the pool (the plain mean when no member has room)."""
    if not members:
        return 30.0
    room = sum(c.capacity for c in members)
    if room == 0:
        return sum(c.pod_startup for c in members) / len(members)
    return sum(c.pod_startup * c.capacity for c in members) / room


def single_hpa(raw_fhpa: dict[str, Any]) -> dict[str, Any]:
    """Duplicated over whatever clusters there are (the one pooled cluster): one HPA, F.min..F.max."""
    raw = duplicated(raw_fhpa)
    raw["spec"].pop("clusterAffinity", None)
    return raw


def pooled_scenario(scenario: Scenario) -> Baseline:
    """The single-hpa baseline: the scenario's fleet pooled into one cluster under one native HPA."""
    members = pool_members(scenario)
    data = scenario.file.model_dump(by_alias=True, exclude_none=True)
    cluster: dict[str, Any] = {
        "name": POOLED,
        "capacity": sum(c.capacity for c in members),
        "podStartup": pooled_startup(members),
        "replicas": sum(c.replicas for c in members),
    }
    group = pooled_node_group(members)
    if group is not None:  # the fixed members' room comes from PooledCapacity, the rest is nodes
        cluster |= group
    data["clusters"] = [cluster]
    data["changes"] = [c for c in baseline_changes(data.get("changes", [])) if "cluster" not in c]
    data["federatedHPA"] = single_hpa(scenario.file.federated_hpa)
    data["name"] = f"{scenario.name} [{SINGLE_HPA}]"
    pooled = parse_scenario(data, f"{scenario.source} [{SINGLE_HPA}]")
    room = PooledCapacity(scenario.file.start, tuple(members))
    return Baseline(
        SINGLE_HPA, pooled, {POOLED: room}, {POOLED: pooled_fixed_cost(members)}, policy=SINGLE_HPA_POLICY
    )


def baselines(scenario: Scenario) -> list[Baseline]:
    """The three baselines of ``--compare``, in table order."""
    plain = [Baseline(label, each) for label, each in baseline_scenarios(scenario)]
    return [*plain, pooled_scenario(scenario)]
