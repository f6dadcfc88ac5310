"""Node changes coalesced per member: a flood of them starts one low-lane pass a second, not one each."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from prometheus_client import CollectorRegistry

from controller.kube.member_cache import Change
from controller.runtime.coalesce import Coalescer
from controller.runtime.fleet import FleetManager
from controller.runtime.member_events import NODE, TargetIndex
from controller.runtime.metrics import Metrics


def node_change(i: int) -> Change:
    return Change(NODE, ("", "n1"), {"allocatable": {"cpu": str(i)}}, {"allocatable": {"cpu": str(i + 1)}})


def test_a_node_flood_from_one_member_starts_one_pass_now_and_one_at_the_interval_end() -> None:
    passes: list[tuple[float, bool]] = []
    done = threading.Event()

    def enqueue_all(kind: str, low: bool = False) -> None:
        passes.append((time.monotonic(), low))
        if len(passes) == 2:
            done.set()

    fleet: Any = SimpleNamespace(
        leading=True,
        registry=SimpleNamespace(),
        targets=TargetIndex(),
        metrics=Metrics(CollectorRegistry()),
        _enqueue_all=enqueue_all,
        _node_passes=Coalescer(0.3),
    )
    started = time.monotonic()
    for i in range(200):  # 200 node changes at once
        FleetManager._on_member_change(fleet, "east", node_change(i))
    assert len(passes) == 1 and passes[0][1] is True  # the first at once, in the low lane
    assert done.wait(10)
    time.sleep(0.5)
    assert len(passes) == 2  # the other 199 folded into one pass when the interval ended
    assert passes[1][0] - started >= 0.3 * 0.9


def test_members_are_coalesced_apart() -> None:
    ran: list[str] = []
    coalescer = Coalescer(60)
    for cluster in ("a", "b", "a", "b", "c"):
        coalescer.request(cluster, lambda c=cluster: ran.append(c))  # type: ignore[misc]
    coalescer.cancel()
    assert ran == ["a", "b", "c"]  # one member's flood never delays another's pass
