"""Benchmark aid: the lowest cost at which any planner could serve an elastic fleet, under DESIGN's rules.

`bench/elastic_compare.py` asks Prioritized to cost at least 20% less than duplicated on the hybrid
fleets. Whether a fleet allows that at all is a property of the fleet, not of a planner: this prints
a lower bound of the cost of serving it and sets it against that cap.

The bound relaxes everything a planner cannot choose in its favour:
- nodes come the moment they are wanted and go the moment they are empty; pods start at once; every
  pod of a cluster is packed onto as few nodes as it can be;
- each pod serves up to the top of the member HPAs' band (target x (1 + tolerance) of its capacity):
  past that, the user's own HPA asks for more pods, and a planner that held it back would run the
  fleet above the target the user set;
- pods go to the cheapest room first: the free slots of nodes a group keeps anyway, then fixed room
  by its price per pod, then new nodes by their price;
- demand may go unserved down to the bench's service bar (duplicated's served fraction less 0.5
  points, or static-split's where higher), dropped where it saves most (a fractional knapsack over
  every step's nodes and pods, which no real choice of what to drop can beat).

What it does not relax is DESIGN §3: without scalingToZero every selected cluster that receives a max
keeps a min of 1 (step 4, Mins), so a node group keeps a node all day, or ``minNodes`` where more. So
the bound holds for every planner that keeps the decided rules, not for one that breaks them.

Run: `.venv/bin/python bench/cost_floor.py [FLEET ...]` (names in bench/scenarios/elastic/; default:
the hybrid ones). Not a test.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from elastic_compare import FLEETS, HYBRID_SAVING
from policy_compare import SERVED_SLACK

from controller.planning.tolerance import tolerance_of
from simulator.baselines import DUPLICATED, STATIC_SPLIT, baselines
from simulator.report import summarize
from simulator.scenario import ClusterSpec, Scenario, load_scenario


@dataclass(frozen=True)
class Room:
    """One cluster's room as the bound sees it."""

    name: str
    fixed: int  # pods of fixed room (capacity, capped by the quota); 0 for a node group
    per_pod_hour: float  # a fixed pod's price
    pods_per_node: int  # 0: fixed room
    node_hour: float  # a node's price
    standing: int  # nodes kept whatever runs
    max_nodes: int
    quota: int | None


def rooms(scenario: Scenario) -> list[Room]:
    """Every cluster's room; a node group keeps ``minNodes``, and at least one node without scalingToZero."""
    keep_one = not scenario.federated_hpa.spec.effective_scaling_to_zero
    return [_room(c, keep_one) for c in scenario.file.clusters if c.workload]


def _room(c: ClusterSpec, keep_one: bool) -> Room:
    quota = c.quota.pods if c.quota is not None else None
    group = c.autoscaling
    if group is None:
        fixed = c.capacity if quota is None else min(c.capacity, quota)
        return Room(c.name, fixed, c.cost_per_pod_hour, 0, 0.0, 0, 0, quota)
    standing = max(group.min_nodes, 1 if keep_one else 0)
    node_hour = group.pods_per_node * c.cost_per_pod_hour
    return Room(c.name, 0, 0.0, group.pods_per_node, node_hour, standing, group.max_nodes, quota)


def _pods_per_node(r: Room) -> int:
    """A node's pods, as far as the quota lets them exist."""
    return r.pods_per_node if r.quota is None else min(r.pods_per_node, r.quota)


def cheapest(pods: int, fleet: list[Room]) -> tuple[float, list[tuple[float, float]]]:
    """The cost per hour of running ``pods`` as cheaply as the fleet allows, and what each unit of it
    could save if its pods went unserved: (pods, cost per hour) per new node and per fixed pod."""
    per_hour = sum(r.standing * r.node_hour for r in fleet)
    left = max(0, pods - sum(r.standing * _pods_per_node(r) for r in fleet if r.pods_per_node))
    units: list[tuple[float, float]] = []
    # fixed room by its price, then new nodes by theirs (a node's price per pod it holds)
    offers = sorted(
        [(r.per_pod_hour, "fixed", r) for r in fleet if not r.pods_per_node]
        + [(r.node_hour / _pods_per_node(r), "node", r) for r in fleet if r.pods_per_node],
        key=lambda o: o[0],
    )
    for _, kind, r in offers:
        if left <= 0:
            break
        if kind == "fixed":
            take = min(left, r.fixed)
            per_hour += take * r.per_pod_hour
            units += [(1.0, r.per_pod_hour)] * take
        else:
            per_node = _pods_per_node(r)
            nodes = min(math.ceil(left / per_node), r.max_nodes - r.standing)
            take = min(left, nodes * per_node)
            per_hour += nodes * r.node_hour
            if nodes:  # the last node may hold fewer pods: dropping those saves a whole node
                units += [(float(per_node), r.node_hour)] * (nodes - 1)
                units.append((float(take - (nodes - 1) * per_node), r.node_hour))
        left -= take
    return per_hour, units


def floor_of(scenario: Scenario) -> dict[str, float]:
    """The bound for one fleet, with duplicated's cost and the bar it is judged against."""
    runs = {b.label: b.run() for b in baselines(scenario) if b.label in (DUPLICATED, STATIC_SPLIT)}
    summaries = {label: summarize(r) for label, r in runs.items()}
    bar = max(s["served_fraction"] for s in summaries.values()) - SERVED_SLACK
    steps = runs[DUPLICATED].steps
    dt = runs[DUPLICATED].step_seconds
    target = _target_utilization(scenario) / 100 * (1 + float(tolerance_of(scenario.federated_hpa).up))
    per_pod = scenario.file.load.pod_capacity * target
    fleet = rooms(scenario)
    cost = 0.0
    savings: list[tuple[float, float]] = []  # (rps-seconds dropped, cost saved), per unit
    demanded = 0.0
    for s in steps:
        demanded += s.demand_rps * dt
        per_hour, units = cheapest(math.ceil(s.demand_rps / per_pod - 1e-9), fleet)
        cost += per_hour * dt / 3600
        savings += [(pods * per_pod * dt, price * dt / 3600) for pods, price in units if pods > 0]
    budget = (1 - bar) * demanded
    saved = 0.0
    for rps_s, price in sorted(savings, key=lambda u: u[1] / u[0], reverse=True):
        if budget <= 0:
            break
        part = min(1.0, budget / rps_s)
        saved += part * price
        budget -= part * rps_s
    dup_cost = summaries[DUPLICATED]["cost_total"]
    return {
        "full": cost,
        "at_bar": cost - saved,
        "duplicated": dup_cost,
        "cap": dup_cost * (1 - HYBRID_SAVING),
    }


def _target_utilization(scenario: Scenario) -> float:
    """The FederatedHPA's CPU utilization target (the bench fleets scale on one)."""
    for metric in scenario.federated_hpa.spec.metrics or []:
        if metric.resource is not None and metric.resource.target.average_utilization is not None:
            return float(metric.resource.target.average_utilization)
    raise SystemExit(f"{scenario.name}: the bound needs a CPU utilization target")


def main(argv: list[str]) -> int:
    paths = [FLEETS / f"{n}.yaml" for n in argv] or sorted(FLEETS.glob("hybrid*.yaml"))
    for path in paths:
        b = floor_of(load_scenario(path))
        verdict = "reachable" if b["at_bar"] <= b["cap"] else "out of reach"
        print(
            f"{path.stem}: lowest cost {b['full']:.2f} serving everything at the band's top, "
            f"{b['at_bar']:.2f} at the service bar; duplicated {b['duplicated']:.2f}, 20% below it "
            f"{b['cap']:.2f}: {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
