"""bench/cost_floor.py: the lowest cost any planner that keeps DESIGN's rules could serve a fleet at.
Its arithmetic on a hand-made fleet, and the bound under what real runs cost on a short one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from cost_floor import FLEETS, Room, cheapest, floor_of, rooms  # noqa: E402

from simulator.engine import simulate  # noqa: E402
from simulator.report import summarize  # noqa: E402
from simulator.scenario import parse_scenario  # noqa: E402

ONPREM = Room(
    "onprem", fixed=40, per_pod_hour=0.01, pods_per_node=0, node_hour=0.0, standing=0, max_nodes=0, quota=40
)
CLOUD = Room(
    "cloud", fixed=0, per_pod_hour=0.0, pods_per_node=10, node_hour=0.5, standing=1, max_nodes=40, quota=None
)


def test_pods_fill_the_kept_node_then_fixed_room_then_new_nodes() -> None:
    # 5 pods: on the node the cloud keeps anyway; nothing to save by dropping them
    assert cheapest(5, [ONPREM, CLOUD]) == (0.5, [])
    # 30: 10 on the kept node, 20 on-prem at 0.01 each
    per_hour, units = cheapest(30, [ONPREM, CLOUD])
    assert per_hour == pytest.approx(0.5 + 0.2)
    assert units == [(1.0, 0.01)] * 20
    # 73: 10 kept, 40 on-prem, 23 on three new nodes, the last holding 3 (dropping 3 pods saves a node)
    per_hour, units = cheapest(73, [ONPREM, CLOUD])
    assert per_hour == pytest.approx(0.5 + 0.4 + 1.5)
    assert units[-3:] == [(10.0, 0.5), (10.0, 0.5), (3.0, 0.5)]


def test_a_group_keeps_a_node_only_without_scaling_to_zero() -> None:
    data = yaml.safe_load((FLEETS / "hybrid-quota-cloud.yaml").read_text())
    by_name = {r.name: r for r in rooms(parse_scenario(data, "hqc"))}
    assert (by_name["onprem"].fixed, by_name["cloud"].standing) == (40, 1)
    data["federatedHPA"]["spec"]["scalingToZero"] = True
    by_name = {r.name: r for r in rooms(parse_scenario(data, "hqc-zero"))}
    assert by_name["cloud"].standing == 0


def test_the_bound_is_below_what_every_run_costs() -> None:
    # two hours of the hybrid fleet around its campaign: the bound must sit under every real run
    data = yaml.safe_load((FLEETS / "hybrid-quota-cloud.yaml").read_text())
    data["duration"] = "2h"
    data["load"]["trace"] = [
        {"at": "0s", "rps": 2400},
        {"at": "15m", "rps": 12000},
        {"at": "75m", "rps": 12000},
        {"at": "105m", "rps": 2400},
    ]
    scenario = parse_scenario(data, "campaign")
    bound = floor_of(scenario)
    ours = summarize(simulate(scenario))["cost_total"]
    assert bound["at_bar"] <= bound["full"] <= ours
    assert bound["full"] <= bound["duplicated"]
