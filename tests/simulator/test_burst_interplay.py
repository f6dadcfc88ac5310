"""The emulated member HPAs against burst assist, held to what real v1.20 members did with it.

On the kube tier (bench/burst_interplay.py, docs/simulator.md "Burst assist against real HPAs") the
controller read a member HPA's metrics of its last sync against ready counts that had grown since,
started more than the load asked for, and the member HPAs took the assisted replicas away once their
downscale window let them: none of their recommendations had asked for them. The emulation must do the
same, or the simulator shows an assist that real fleets undo.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from controller.planning import burst
from simulator.engine import simulate
from simulator.scenario import load_scenario

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from burst_interplay import assist_undone, with_assist  # noqa: E402

pytestmark = pytest.mark.slow


def hybrid_burst(assist: bool = True) -> tuple[int, int, int]:
    return assist_undone(
        simulate(with_assist(load_scenario(BENCH / "scenarios" / "hybrid-burst.yaml"), assist))
    )


def test_without_a_hold_the_emulated_hpas_undo_the_assist_and_the_controller_starts_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(burst, "_hold", lambda fleet, slot: None)  # the assist as it was before the hold
    assisted, undone, again = hybrid_burst()
    assert assisted > 0 and undone > 0 and again > 0


def test_held_by_minreplicas_the_assisted_replicas_stay_and_only_an_excess_goes_afterwards() -> None:
    assisted, _undone, again = hybrid_burst()
    assert assisted > 0
    assert again == 0  # what went after the hold was not needed: nothing started again
