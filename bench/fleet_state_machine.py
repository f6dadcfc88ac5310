"""Benchmark: the fleet state machine of tests/simulator/test_fleet_state_machine.py, a much longer run.

The same hypothesis state machine (random fleets of 1-5 clusters, every policy, F.min above capacity and
F.max below what runs, scalingToZero on and off; load steps, cluster outages and flaps, controller
outages, spec changes; the four promises of DESIGN §4 measured after every rule), over many more
examples and longer event sequences than `make test` runs, under several random seeds.

It prints what it covered (fleets, simulated steps and hours, rules, policies, fleet sizes, wall time)
and every breach each seed found, each with the shrunk reproduction as hypothesis prints it (the fleet and
the event sequence, to paste into a test) and the fleet's steps around the breach. Exit code 1 when a
breach (or a controller crash) was found, 0 when none.

Run: `.venv/bin/python bench/fleet_state_machine.py [--examples N] [--rules N] [--seeds N] [--seed S]
[--no-shrink]`. Defaults: 400 examples of up to 60 rules under each of 3 seeds (0, 1, 2). A shrink can
take minutes per breach; --no-shrink reports the first breach of each seed as found.
Environment: FLEET_SM_EXAMPLES, FLEET_SM_RULES, FLEET_SM_SEEDS give the defaults.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import Phase, seed, settings
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from tests.simulator import test_fleet_state_machine as fsm
from tests.simulator.test_fleet_state_machine import COVERAGE, STEP_S, FleetMachine, machine_settings


def reporting(every: int) -> Callable[[FleetMachine], None]:
    """A teardown that prints the fleets run so far every ``every`` fleets: a long run that is stopped
    still says how far it got."""
    started = time.monotonic()

    def teardown(machine: FleetMachine) -> None:
        try:
            FleetMachine.teardown(machine)
        finally:
            if every and COVERAGE.fleets % every == 0:
                elapsed = time.monotonic() - started
                print(f"  {COVERAGE.fleets} fleets, {COVERAGE.steps} steps, {elapsed:.0f}s", flush=True)

    return teardown


def run_seed(number: int, examples: int, rules: int, shrink: bool, every: int = 0) -> list[BaseException]:
    """One hypothesis run under ``number``; the distinct failures it found (shrunk unless told not to)."""
    body = {"teardown": reporting(every)} if every else {}
    machine = seed(number)(type(f"FleetMachineSeed{number}", (FleetMachine,), body))
    config = machine_settings(examples, rules, derandomize=False)
    if not shrink:
        config = settings(config, phases=[Phase.explicit, Phase.generate])
    try:
        run_state_machine_as_test(machine, settings=config)
    except BaseExceptionGroup as group:
        return list(group.exceptions)
    except (AssertionError, Flaky, Exception) as exc:
        return [exc]
    return []


def show(exc: BaseException) -> str:
    notes = "\n".join(getattr(exc, "__notes__", []))
    return f"{type(exc).__name__}: {exc}\n{notes}"


def main(argv: list[str] | None = None) -> int:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=int(env("FLEET_SM_EXAMPLES", "400")))
    parser.add_argument("--rules", type=int, default=int(env("FLEET_SM_RULES", "60")))
    parser.add_argument("--seeds", type=int, default=int(env("FLEET_SM_SEEDS", "3")))
    parser.add_argument("--seed", type=int, default=None, help="run this seed only")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--progress", type=int, default=25, help="print the count every N fleets (0: never)")
    looking = parser.add_argument_group("looking past a known breach (default: draw everything, as the test)")
    looking.add_argument("--min-capacity", type=int, default=0, help="1: no cluster with capacity 0")
    looking.add_argument("--no-fmin-above-room", action="store_true", help="F.min within the capacity")
    looking.add_argument("--overfill", type=int, default=5, help="0: no replicas above capacity at t=0")
    looking.add_argument("--no-zero-weights", action="store_true", help="no StaticWeighted weight 0")
    looking.add_argument("--max-delay", type=int, default=120, help="cap autoscaleMultiClusterDelay (s)")
    looking.add_argument("--no-cluster-outages", action="store_true", help="no outages, flaps")
    looking.add_argument("--no-controller-outages", action="store_true")
    looking.add_argument("--no-spec-changes", action="store_true")
    looking.add_argument(
        "--checks",
        default=",".join(sorted(fsm.PROFILE.checks)),
        help=f"comma-separated kinds to assert (default: %(default)s; also {fsm.MAX_SUM_BELOW})",
    )
    args = parser.parse_args(argv)
    fsm.PROFILE = fsm.Profile(
        min_capacity=args.min_capacity,
        fmin_above_room=not args.no_fmin_above_room,
        overfill=args.overfill,
        zero_weights=not args.no_zero_weights,
        max_delay_s=args.max_delay,
        cluster_outages=not args.no_cluster_outages,
        controller_outages=not args.no_controller_outages,
        spec_changes=not args.no_spec_changes,
        checks=frozenset(k for k in args.checks.split(",") if k),
    )
    print(f"profile: {fsm.PROFILE}", flush=True)
    seeds = [args.seed] if args.seed is not None else list(range(args.seeds))
    started = time.monotonic()
    found: list[tuple[int, BaseException]] = []
    for number in seeds:
        t0 = time.monotonic()
        before = COVERAGE.copy()
        failures = run_seed(number, args.examples, args.rules, not args.no_shrink, args.progress)
        fleets, steps = COVERAGE.fleets - before.fleets, COVERAGE.steps - before.steps
        print(
            f"seed {number}: {fleets} fleets, {steps} steps, "
            f"{len(failures)} distinct failure(s), {time.monotonic() - t0:.0f}s",
            flush=True,
        )
        found += [(number, exc) for exc in failures]
    wall = time.monotonic() - started
    print(
        f"\ncovered: {COVERAGE.fleets} fleets, {COVERAGE.steps} simulated steps "
        f"({COVERAGE.steps * STEP_S / 3600:.1f} simulated hours) in {wall:.0f}s wall"
    )
    print("  fleets by policy: " + ", ".join(f"{k} {v}" for k, v in sorted(COVERAGE.policies.items())))
    print("  fleets by size:   " + ", ".join(f"{k} clusters {v}" for k, v in sorted(COVERAGE.sizes.items())))
    print("  rules run:        " + ", ".join(f"{k} {v}" for k, v in sorted(COVERAGE.rules.items())))
    if not found:
        checked = ", ".join(sorted(fsm.PROFILE.checks))
        print(f"no breach: every fleet passed the checks ({checked}) after every rule")
        return 0
    kinds = sorted({type(exc).__name__ for _, exc in found})
    print(
        f"\n{len(found)} breach(es) under {len({n for n, _ in found})} seed(s), of kinds {', '.join(kinds)}:"
    )
    for number, exc in found:  # each seed's own: two seeds may find different breaches of one kind
        print(f"\n==== {type(exc).__name__} (seed {number}) ====")
        print(show(exc))
    return 1


if __name__ == "__main__":
    sys.exit(main())
