"""Scale benchmark of the controller: N FederatedHPAs over M member clusters, the real process over HTTP.

What runs, all on loopback:
- M fake member API servers, one process each (bench/fake_member_server.py, a FakeKube from
  tests/support/fakekube.py): N Deployments ``w-0`` .. ``w-{N-1}`` in ``default`` with a pod template
  requesting 100m CPU, P pods per member spread over the Deployments and over nodes with allocatable;
- the control plane: a FakeKube in this process serving the FederatedHPA and CronFederatedHPA CRDs
  as plain resources, one member Secret per member (as tests/support/members.py makes them), and N
  FederatedHPAs ``w-i`` (Prioritized, member0 first, autoscaleMultiClusterDelay 0, min 1, max twice
  what runs);
- the controller: ``python -m fhpa controller run --no-leader-elect`` with its production defaults
  (resync, probe period, workers) and a kubeconfig for the control plane.

What it measures (printed as JSON with ``--json``):
- ``steady_member_requests_per_s``: member API requests per second summed over the members, counted
  by the fake servers over ``--steady-seconds`` after the initial sync (every FederatedHPA has a status
  row for every member and no member write has been seen for a few seconds). Watches count once per
  request (a long-lived watch is one request), probes count too;
- ``reaction_p50_s`` / ``reaction_p99_s``: ``--reactions`` times, a few Ready pods of one FederatedHPA's
  workload in member0 turn Pending/Unschedulable (written straight into that member's store, as the
  scheduler would), and the time until the first member write for that FederatedHPA (its member HPA or
  its workload's scale, in any member) is received by a member server. A Prioritized spill with a zero
  delay makes a write certain;
- ``rss_mib``: the controller's peak RSS (VmHWM of /proc/<pid>/status) at the end of the run;
- ``plan_cpu_s``: CPU seconds of one full planning pass, in this process, of the pure planner
  (controller.planning.planner.plan) over ``--fhpas`` synthetic FederatedHPAs with
  ``--clusters`` observations each, in steady state (each FederatedHPA planned once and the plan
  applied first). ``--plan-only`` measures only this.

    .venv/bin/python bench/controller_scale.py --json
    .venv/bin/python bench/controller_scale.py --fhpas 200 --clusters 5 --pods 2000 --json
    .venv/bin/python bench/controller_scale.py --plan-only --fhpas 10000 --clusters 20 --json

Limits: the member servers are Python (FakeKube), so a list of 10,000 pods costs them far more than
it costs a real API server, and every process shares the machine's 2 cores; the figures compare
controllers on the same harness, not with production API servers. See docs/scale.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

GROUP = "autoscaling.karmada.io"
FHPA = f"federatedhpas.{GROUP}"
SYSTEM = "federated-hpa-system"
NAMESPACE = "default"
KEYS = (
    "steady_member_requests_per_s",
    "reaction_p50_s",
    "reaction_p99_s",
    "rss_mib",
    "plan_cpu_s",
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


# --- the FederatedHPAs ----------------------------------------------------------------------------


def fhpa_body(name: str, clusters: list[str], replicas_per_member: int) -> dict[str, Any]:
    """Prioritized, member0 first, no delay: pods pending in member0 spill at once to member1."""
    total = replicas_per_member * len(clusters)
    prefs = [
        {"targetCluster": {"clusterNames": [c]}, "priority": len(clusters) - i}
        for i, c in enumerate(clusters)
    ]
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": max(2 * total, 2 * len(clusters), 4),
            "autoscaleMultiClusterDelay": 0,
            "federatedHPAAssignment": {
                "federatedHPAAssignmentType": "Prioritized",
                "clusterAutoscalingPreference": prefs,
            },
        },
    }


# --- member processes -----------------------------------------------------------------------------


class Member:
    """One bench/fake_member_server.py process and its stdin/stdout control channel."""

    def __init__(
        self, name: str, deployments: int, pods: int, workdir: Path, control_plane: bool = False
    ) -> None:
        self.name = name
        self.stderr: IO[bytes] = (workdir / f"{name}.log").open("wb")
        mode = ["--control-plane"] if control_plane else []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(REPO / "bench" / "fake_member_server.py"),
                "--name",
                name,
                "--deployments",
                str(deployments),
                "--pods",
                str(pods),
                *mode,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=REPO,
            text=True,
        )
        self.url = ""
        self._lock = threading.Lock()

    def wait_ready(self, timeout: float) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the server prints its URL once seeded and listening
        if not line:
            raise RuntimeError(f"{self.name}: the fake member server exited (see its log)")
        self.url = json.loads(line)["url"]

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self._lock:
            self.proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: the fake member server exited")
        return dict(json.loads(line))

    def requests(self) -> int:
        return int(self.call("stats")["requests"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, RuntimeError):
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.stderr.close()

    def kubeconfig(self) -> dict[str, Any]:
        """A kubeconfig for this server (plain HTTP, no credential)."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.name, "cluster": {"server": self.url}}],
            "users": [{"name": self.name, "user": {}}],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": self.name}}],
            "current-context": self.name,
        }

    def secret(self) -> dict[str, Any]:
        """The member Secret the registry reads (no credential: the registry refuses one over HTTP)."""
        from controller.kube.registry import MEMBER_LABEL

        config = self.kubeconfig()
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": self.name, "namespace": SYSTEM, "labels": {MEMBER_LABEL: "true"}},
            "type": "Opaque",
            "data": {"kubeconfig": base64.b64encode(json.dumps(config).encode()).decode()},
        }


def total_requests(members: list[Member]) -> int:
    return sum(m.requests() for m in members)


def requests_by_kind(members: list[Member]) -> dict[str, int]:
    """Requests so far summed over the members, by what they were for (probe, watch, list, get, write)."""
    total: dict[str, int] = {}
    for m in members:
        for kind, n in (m.call("stats").get("by_kind") or {}).items():
            total[kind] = total.get(kind, 0) + int(n)
    return total


def total_writes(members: list[Member]) -> int:
    return sum(int(m.call("stats")["writes"]) for m in members)


# --- the controller process -----------------------------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds a live process has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def cpu_burners(count: int) -> Iterator[None]:
    """``count`` processes that each keep one core busy while the benchmark runs: the reaction time
    must hold on a node where the controller does not have a core to itself."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(10)


def reaction_counters(run: Run) -> dict[str, float]:
    """What the reactions are charged with, so far: the CPU seconds of the controller and of the
    member servers, member and control-plane requests by kind, and the controller's own counters
    (reconciles, member events that enqueued something)."""
    assert run.controller is not None
    counters: dict[str, float] = {
        "controller_cpu_s": cpu_seconds(run.controller.pid) or 0.0,
        "members_cpu_s": sum(cpu_seconds(m.proc.pid) or 0.0 for m in run.members),
    }
    for kind, n in requests_by_kind(run.members).items():
        counters[f"member_requests.{kind}"] = float(n)
    if run.control_plane is not None:
        for kind, n in requests_by_kind([run.control_plane]).items():
            counters[f"control_plane_requests.{kind}"] = float(n)
    for name, n in controller_metrics(run.metrics_url).items():
        counters[f"controller.{name}"] = n
    return counters


def controller_metrics(url: str) -> dict[str, float]:
    """The controller's reconcile and member-event counters, one per series (labels in brackets)."""
    wanted = ("fhpa_reconciles_total", "fhpa_member_events_total")
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    found: dict[str, float] = {}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in wanted:
            labels = line.partition("{")[2].partition("}")[0]
            detail = ",".join(v.split("=")[1].strip('"') for v in labels.split(",") if v)
            series = f"{name}[{detail}]" if detail else name
            found[series] = found.get(series, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def per_reaction(before: dict[str, float], after: dict[str, float], trials: int) -> dict[str, Any]:
    """What one reaction cost on average over the timed phase (its pods' restore included)."""
    if not trials:
        return {}
    spent = {k: (after[k] - before.get(k, 0.0)) / trials for k in after}
    return {
        "reaction_controller_cpu_s": round(spent.pop("controller_cpu_s"), 3),
        "reaction_members_cpu_s": round(spent.pop("members_cpu_s"), 3),
        "reaction_counts": {k: round(v, 1) for k, v in sorted(spent.items()) if v},
    }


def peak_rss_mib(pid: int, field: str = "VmHWM") -> float | None:
    """VmHWM (peak resident set) of a live process, in MiB; ``field="VmRSS"``: the resident set now."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


@dataclass
class Run:
    members: list[Member] = field(default_factory=list)
    controller: subprocess.Popen[bytes] | None = None
    control_plane: Any = None
    metrics_url: str = ""


@contextlib.contextmanager
def fleet(args: argparse.Namespace, workdir: Path) -> Iterator[tuple[Run, Path]]:
    """The member servers and the control plane, seeded (one member Secret per member, the
    FederatedHPAs ``w-0`` .. ``w-{N-1}``), with the control plane's kubeconfig; no controller."""
    run = Run()
    try:
        names = [f"member{i}" for i in range(args.clusters)]
        log(f"starting {len(names)} member servers ({args.fhpas} Deployments, {args.pods} pods each)")
        run.members = [Member(n, args.fhpas, args.pods, workdir) for n in names]
        for m in run.members:
            m.wait_ready(timeout=600)
        cp = Member("control-plane", 0, 0, workdir, control_plane=True)
        cp.wait_ready(timeout=120)
        run.control_plane = cp
        for m in run.members:
            cp.call("create", resource="secrets", object=m.secret())
        per_member = args.pods // max(args.fhpas, 1)
        for i in range(args.fhpas):
            cp.call("create", resource=FHPA, object=fhpa_body(f"w-{i}", names, max(per_member, 1)))
        kubeconfig = workdir / "control-plane.kubeconfig"
        kubeconfig.write_text(json.dumps(cp.kubeconfig()))
        yield run, kubeconfig
    finally:
        for m in run.members:
            m.stop()
        if run.control_plane is not None:
            run.control_plane.stop()


@contextlib.contextmanager
def world(args: argparse.Namespace, workdir: Path) -> Iterator[Run]:
    """``fleet`` and one controller without leader election."""
    with fleet(args, workdir) as (run, kubeconfig):
        try:
            controller_log = (workdir / "controller.log").open("wb")
            run.metrics_url = f"http://127.0.0.1:{free_port()}"
            cmd = [
                sys.executable, "-m", "fhpa", "controller", "run",
                "--kubeconfig", str(kubeconfig),
                "--namespace", SYSTEM,
                "--no-leader-elect",
                "--metrics-bind", run.metrics_url.removeprefix("http://"),
                "--log-level", args.log_level,
                *args.controller_arg,
            ]  # fmt: skip
            log("starting the controller: " + " ".join(cmd[1:]))
            run.controller = subprocess.Popen(
                cmd, stdout=controller_log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
            )
            yield run
        finally:
            if run.controller is not None and run.controller.poll() is None:
                run.controller.send_signal(signal.SIGTERM)
                try:
                    run.controller.wait(20)
                except subprocess.TimeoutExpired:
                    run.controller.kill()
                    run.controller.wait(10)


def synced(cp: Member, clusters: int) -> int:
    """How many FederatedHPAs have a status row for every member (counted by the control-plane process)."""
    return int(cp.call("synced", clusters=clusters)["synced"])


def wait_initial_sync(run: Run, args: argparse.Namespace, quiet_seconds: float) -> float:
    """Until every FederatedHPA has a row per member and no member write came for ``quiet_seconds``."""
    start = time.monotonic()
    deadline = start + args.sync_timeout
    last_writes, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        if run.controller is not None and run.controller.poll() is not None:
            raise RuntimeError("the controller exited during the initial sync (see controller.log)")
        done = synced(run.control_plane, args.clusters)
        writes = total_writes(run.members)
        if writes != last_writes:
            last_writes, last_change = writes, time.monotonic()
        if done >= args.fhpas and time.monotonic() - last_change >= quiet_seconds:
            return time.monotonic() - start
        time.sleep(2.0)
    raise RuntimeError(
        f"no initial sync within {args.sync_timeout}s: {synced(run.control_plane, args.clusters)}"
        f" of {args.fhpas} FederatedHPAs with a row for every member"
    )


def measure_reactions(run: Run, args: argparse.Namespace) -> tuple[list[float], int]:
    """Pods of one FederatedHPA pend in member0; the time to that FederatedHPA's first member write.

    The trials start at random instants spread over ``--reaction-window`` seconds (one per
    FederatedHPA, overlapping), so that a controller that reacts only on a periodic resync is sampled
    at every phase of its period rather than at the one right after the initial sync.
    """
    first = run.members[0]
    per_deployment = args.pods // max(args.fhpas, 1)
    count = max(1, min(args.pending, per_deployment))
    rng = random.Random(7)
    picks = rng.sample(range(args.fhpas), min(args.reactions, args.fhpas))
    begin = time.monotonic()
    due = sorted((begin + rng.uniform(0, args.reaction_window), f"w-{i}") for i in picks)
    open_trials: dict[str, tuple[float, list[Any]]] = {}  # name -> (t0, pods to restore)
    times: list[float] = []
    missed = 0
    since = begin
    while due or open_trials:
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, name = due.pop(0)
            pended = first.call("pend", deployment=name, count=count)
            open_trials[name] = (float(pended["t0"]), pended["pods"])
        writes = [w for m in run.members for w in m.call("writes_since", t=since)["writes"]]
        for name, (t0, pods) in list(open_trials.items()):
            seen = [t for t, _method, path in writes if t >= t0 and name in path.split("/")]
            if seen or time.monotonic() - t0 > args.reaction_timeout:
                del open_trials[name]
                first.call("restore", pods=pods)
                if seen:
                    times.append(min(seen) - t0)
                    log(f"reaction {name}: {min(seen) - t0:.2f}s")
                else:
                    missed += 1
                    log(f"reaction {name}: no member write within {args.reaction_timeout:.0f}s")
        if open_trials:
            since = min(t0 for t0, _ in open_trials.values())
        time.sleep(0.05)
    return times, missed


# --- the planner alone ----------------------------------------------------------------------------


def plan_cpu_seconds(fhpas: int, clusters: int) -> dict[str, float]:
    """CPU seconds of planning every FederatedHPA once, in steady state (after one settling pass).

    Synthetic fleet: a mix of the four policies; each cluster runs a few replicas, has room for more,
    and holds the member HPA the first pass planned (idle at what it runs).
    """
    from controller.planning.member_hpa import template_digest
    from controller.planning.observation import ClusterObservation, MemberHPAObservation
    from controller.planning.planner import PlannerConfig, plan
    from fhpa_api.models import Condition, FederatedHPA

    config = PlannerConfig()
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    rng = random.Random(11)
    names = [f"member{i}" for i in range(clusters)]
    policies = ("StaticWeighted", "Prioritized", "DynamicWeighted", "Aggregated")
    fleet = []
    for i in range(fhpas):
        policy = policies[i % len(policies)]
        prefs: list[dict[str, Any]] = []
        if policy == "StaticWeighted":
            prefs = [
                {"targetCluster": {"clusterNames": [c]}, "staticWeight": 1 + j % 3}
                for j, c in enumerate(names)
            ]
        elif policy == "Prioritized":
            prefs = [
                {"targetCluster": {"clusterNames": [c]}, "priority": clusters - j}
                for j, c in enumerate(names)
            ]
        f = FederatedHPA.model_validate(
            {
                "metadata": {"name": f"w-{i}", "namespace": NAMESPACE, "uid": f"u-{i}", "generation": 1},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"w-{i}"},
                    "minReplicas": clusters,
                    "maxReplicas": clusters * 10,
                    "federatedHPAAssignment": {
                        "federatedHPAAssignmentType": policy,
                        "clusterAutoscalingPreference": prefs,
                    },
                },
            }
        )
        observations = []
        for c in names:
            current = rng.randint(1, 5)
            observations.append(
                ClusterObservation(
                    name=c,
                    current_replicas=current,
                    ready_replicas=current,
                    available_replicas=rng.randint(5, 50),
                )
            )
        fleet.append((f, observations))
    # the first pass assigns; apply it so that the measured pass is the steady one
    settled = []
    for f, observations in fleet:
        p = plan(f, observations, now, config)
        actions = {a.cluster: a for a in p.hpa_actions}
        writes = {w.cluster: w.replicas for w in p.replica_writes}
        digest = template_digest(f)
        after = []
        for o in observations:
            current = writes.get(o.name, o.current_replicas)
            hpa = None
            action = actions.get(o.name)
            if action is not None and action.op != "delete":
                hpa = MemberHPAObservation(
                    name=f.metadata.name or "",
                    owned=True,
                    min_replicas=action.min_replicas or 0,
                    max_replicas=action.max_replicas or 0,
                    current_replicas=current,
                    desired_replicas=current,
                    template_digest=digest,
                    metric_ratio=1.0,
                    conditions=[
                        Condition(type="ScalingLimited", status="False", reason="DesiredWithinRange")
                    ],
                )
            after.append(
                o.model_copy(update={"current_replicas": current, "ready_replicas": current, "hpa": hpa})
            )
        settled.append((f.model_copy(update={"status": p.status}), after))
    later = now + timedelta(seconds=15)
    t0 = time.process_time()
    for f, observations in settled:
        plan(f, observations, later, config)
    steady = time.process_time() - t0
    return {"plan_cpu_s": round(steady, 3), "plan_ms_per_fhpa": round(1000 * steady / max(fhpas, 1), 3)}


# --- main -----------------------------------------------------------------------------------------


def fleet_arguments(p: argparse.ArgumentParser) -> None:
    """The world's size, and what every benchmark on it takes (``fleet``, ``wait_initial_sync``)."""
    p.add_argument("--fhpas", type=int, default=20, help="FederatedHPAs (and Deployments per member)")
    p.add_argument("--clusters", type=int, default=3, help="member clusters, one server process each")
    p.add_argument("--pods", type=int, default=200, help="pods per member, spread over its Deployments")
    p.add_argument("--quiet-seconds", type=float, default=5.0, help="no member write for this long: synced")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs) and print its path")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet_arguments(p)
    p.add_argument("--steady-seconds", type=float, default=60.0, help="steady window after the initial sync")
    p.add_argument("--sync-timeout", type=float, default=600.0)
    p.add_argument("--reactions", type=int, default=5, help="pending-pod reactions timed")
    p.add_argument("--pending", type=int, default=2, help="pods made Unschedulable per reaction")
    p.add_argument(
        "--reaction-window", type=float, default=60.0, help="reactions start at random times over this"
    )
    p.add_argument("--reaction-timeout", type=float, default=120.0)
    p.add_argument(
        "--cpu-burner", type=int, default=0, help="processes kept busy beside the controller (one core each)"
    )
    p.add_argument("--plan-only", action="store_true", help="measure only plan_cpu_s")
    p.add_argument(
        "--controller-arg",
        action="append",
        default=[],
        help="extra argument for `fhpa controller run` (repeat; e.g. --controller-arg=--workers=4)",
    )
    return p.parse_args(argv)


def run_benchmark(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "fhpas": args.fhpas,
        "clusters": args.clusters,
        "pods_per_member": args.pods,
    }
    if args.plan_only:
        result.update(plan_cpu_seconds(args.fhpas, args.clusters))
        return result
    workdir = Path(tempfile.mkdtemp(prefix="fhpa-scale-"))
    started = time.monotonic()
    with cpu_burners(args.cpu_burner), world(args, workdir) as run:
        assert run.controller is not None
        sync_s = wait_initial_sync(run, args, args.quiet_seconds)
        log(f"initial sync after {sync_s:.1f}s; steady window {args.steady_seconds:.0f}s")
        before, writes_before = total_requests(run.members), total_writes(run.members)
        kinds_before = requests_by_kind(run.members)
        t0, cpu0 = time.monotonic(), cpu_seconds(run.controller.pid)
        time.sleep(args.steady_seconds)
        after, writes_after = total_requests(run.members), total_writes(run.members)
        window, cpu1 = time.monotonic() - t0, cpu_seconds(run.controller.pid)
        sync_cpu = cpu0
        kinds_after = requests_by_kind(run.members)
        steady_kinds = {k: kinds_after.get(k, 0) - kinds_before.get(k, 0) for k in sorted(kinds_after)}
        react_before = reaction_counters(run)
        times, missed = measure_reactions(run, args)
        react_after = reaction_counters(run)
        rss = peak_rss_mib(run.controller.pid)
        total_cpu = cpu_seconds(run.controller.pid)
        alive = run.controller.poll() is None
    result.update(
        {
            "steady_member_requests_per_s": round((after - before) / window, 3),
            "steady_window_s": round(window, 1),
            "steady_member_requests_by_kind": {k: v for k, v in steady_kinds.items() if v},
            "steady_member_writes": writes_after - writes_before,
            "reaction_p50_s": None if not times else round(statistics.median(times), 3),
            "reaction_p99_s": None if not times else round(percentile(times, 99) or 0.0, 3),
            "reactions_timed": len(times),
            "reactions_missed": missed,
            **per_reaction(react_before, react_after, len(times) + missed),
            "rss_mib": rss,
            "cpu_burners": args.cpu_burner,
            "steady_cpu_cores": None if cpu0 is None or cpu1 is None else round((cpu1 - cpu0) / window, 3),
            "sync_cpu_s": None if sync_cpu is None else round(sync_cpu, 1),
            "controller_cpu_s": None if total_cpu is None else round(total_cpu, 1),
            "load_average": [round(x, 1) for x in os.getloadavg()],
            "initial_sync_s": round(sync_s, 1),
            "controller_alive": alive,
            "wall_s": round(time.monotonic() - started, 1),
        }
    )
    result.update(plan_cpu_seconds(args.fhpas, args.clusters))
    if args.keep:
        result["workdir"] = str(workdir)
    else:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run_benchmark(args)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        for key, value in result.items():
            print(f"{key:32} {value}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
