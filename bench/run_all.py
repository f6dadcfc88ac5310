"""Run every benchmark in bench/ one after the other and report which met its target.

Benchmarks are kept out of the timed test suite (CI's budget); run them with `make bench`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "sim_day.py",
    "cron_timers.py",
    "webhook_latency.py",
    "policy_compare.py",
    "external_metrics.py",
    "controller_scale.py",  # the small default size; the target size is a separate run (docs/scale.md)
)


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, str(HERE / name)], check=False).returncode != 0:
            failed.append(name)
    print("all benchmarks met their targets" if not failed else f"missed their targets: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
