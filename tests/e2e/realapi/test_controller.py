"""`fhpa controller run` as a subprocess against the real API server tier and two member FakeKubes.

The control plane the controller sees is one URL, a loopback front (tests/support/front.py): CRD paths
go to the real apiextensions-apiserver (FederatedHPA, CronFederatedHPA, the ScaleTarget test CRD with a
scale subresource), core/v1 and coordination.k8s.io go to a FakeKube (Events, member Secrets, the
leader Lease). The member clusters are FakeKubes reached through the kubeconfigs in the Secrets.

What is shown, each with the real planner, cron controller, registry and member adapter:
- assignment, replica writes, status with every cluster, Events; failover when a member vanishes;
  a CronFederatedHPA rule scaling the ScaleTarget through /scale;
- convergence through injected faults: 409 storms on status writes, a watch answered 410 Gone, 500s,
  a member timing out, a member vanishing mid-reconcile;
- a SIGKILL in the middle of a reconcile, then a restart: the same state as an uninterrupted run;
- two processes with leader election: the standby never writes, and takes over only after the
  killed leader is gone.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.manifests import test_controller_rbac as rbac
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment
from tests.support.front import Backend, Front
from tests.support.members import member_cluster, member_secret
from tests.support.processes import free_port
from tests.support.realapi import RealAPIServer

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
CRDS = sorted((REPO / "manifests" / "crds").glob("*.yaml"))
GROUP = "autoscaling.karmada.io"
SYSTEM = "federated-hpa-system"
HPA = "horizontalpodautoscalers.autoscaling"
FHPA_BIN = Path(sys.executable).with_name("fhpa")


def wait_for(
    check: Callable[[], Any], timeout: float = 30.0, what: str = "condition", every: float = 0.2
) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:  # the object may not exist yet
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class ControllerProcess:
    """One `fhpa controller run` subprocess with its own front, log file and metrics port."""

    def __init__(self, front: Front, workdir: Path, name: str, watch_namespace: str) -> None:
        self.front = front
        self.name = name
        self.kubeconfig = front.write_kubeconfig(workdir / f"{name}.kubeconfig")
        self.log_path = workdir / f"{name}.log"
        self.metrics_port = free_port()
        self.watch_namespace = watch_namespace
        self.proc: subprocess.Popen[bytes] | None = None
        self.killed_at: float | None = None

    def start(
        self, leader_elect: bool = True, watch_timeout: str | None = "5", extra: tuple[str, ...] = ()
    ) -> ControllerProcess:
        args = [
            str(FHPA_BIN), "controller", "run",
            "--kubeconfig", str(self.kubeconfig),
            "--namespace", SYSTEM,
            "--watch-namespace", self.watch_namespace,
            "--metrics-bind", f"127.0.0.1:{self.metrics_port}",
            # the Lease timings leave room for a loaded machine: at a 2 s renew deadline a CI run under
            # load lost the Lease in the middle of the failover test and the controller exited
            "--lease-duration", "8", "--renew-deadline", "6", "--retry-period", "0.5",
            "--failover-grace", "2", "--rejoin-hysteresis", "2", "--optimization-period", "3",
            "--resync-period", "2", "--probe-period", "0.5", "--quiet-probe-period", "1",
            "--shutdown-grace", "10",
            *(["--watch-timeout", watch_timeout] if watch_timeout else []),
            "--log-level", os.environ.get("FHPA_E2E_LOG_LEVEL", "info"), "--log-format", "json",
            "--leader-elect" if leader_elect else "--no-leader-elect",
            *extra,
        ]  # fmt: skip
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
        return self

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.killed_at = time.monotonic()

    def terminate(self, timeout: float = 20) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def readyz(self) -> str:
        """The /readyz body, whatever its status ("" while the server is not up)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/readyz", timeout=5) as r:
                return str(r.read().decode())
        except urllib.error.HTTPError as exc:
            return str(exc.read().decode())
        except OSError:
            return ""

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def writes(self, since: float = 0.0) -> list[Any]:
        """Mutating requests this process sent to the control plane (the Lease aside)."""
        return [
            r
            for r in self.front.requests("POST|PUT|PATCH|DELETE")
            if r.at >= since and "/leases" not in r.path
        ]


class World:
    """The real server (CRDs), the core FakeKube, two member FakeKubes and the fronts."""

    def __init__(self, realapi: RealAPIServer, namespace: str, workdir: Path) -> None:
        self.realapi = realapi
        self.ns = namespace
        self.workdir = workdir
        namespaces = tuple(dict.fromkeys(("default", "kube-system", SYSTEM, namespace)))
        self.core = FakeKube(namespaces=namespaces, watch_max_seconds=20.0)
        self.core.start()
        self.members = {"member1": member_cluster(namespace), "member2": member_cluster(namespace)}
        for name, fake in self.members.items():
            self.core.store.create("secrets", member_secret(name, fake, SYSTEM, labels={"tier": "e2e"}))
        self.api = realapi.api_client()
        self.fronts: list[Front] = []
        self.controllers: list[ControllerProcess] = []

    def front(self) -> Front:
        front = Front(
            real=Backend.https(
                self.realapi.url,
                self.realapi.ca_path,
                self.realapi.admin_cert_path,
                self.realapi.admin_key_path,
            ),
            fake=Backend.http(self.core.url),
        )
        front.start()
        self.fronts.append(front)
        return front

    def controller(
        self,
        name: str,
        leader_elect: bool = True,
        watch_timeout: str | None = "5",
        extra: tuple[str, ...] = (),
    ) -> ControllerProcess:
        proc = ControllerProcess(self.front(), self.workdir, name, self.ns)
        proc.start(leader_elect, watch_timeout, extra)
        self.controllers.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.controllers:
            if proc.alive():
                try:
                    proc.terminate(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
        for front in self.fronts:
            front.stop()
        for fake in (self.core, *self.members.values()):
            fake.stop()

    # -- the real server ------------------------------------------------------------------------------

    def custom(self) -> Any:
        from kubernetes.client import CustomObjectsApi

        return CustomObjectsApi(self.api)

    def create_fhpa(self, name: str = "web", policy: str = "StaticWeighted", max_replicas: int = 10) -> dict:
        """A FederatedHPA ``name`` whose target is the Deployment of the same name in every member."""
        body = {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "FederatedHPA",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": 2,
                "maxReplicas": max_replicas,
                "federatedHPAAssignment": {
                    "federatedHPAAssignmentType": policy,
                    "clusterAutoscalingPreference": [
                        {"targetCluster": {"clusterNames": ["member1"]}, "staticWeight": 1},
                        {"targetCluster": {"clusterNames": ["member2"]}, "staticWeight": 1},
                    ],
                },
            },
        }
        return dict(
            self.custom().create_namespaced_custom_object(GROUP, "v1alpha1", self.ns, "federatedhpas", body)
        )

    def fhpa(self, name: str = "web") -> dict:
        return dict(
            self.custom().get_namespaced_custom_object(GROUP, "v1alpha1", self.ns, "federatedhpas", name)
        )

    def hpa(self, cluster: str, name: str = "web") -> dict | None:
        return self.members[cluster].store.find(HPA, self.ns, name)

    def member_state(self, name: str = "web") -> dict[str, Any]:
        """What the members hold for one FederatedHPA: HPA bounds and workload replicas per cluster."""
        state: dict[str, Any] = {}
        for cluster, fake in sorted(self.members.items()):
            hpa = fake.store.find(HPA, self.ns, name)
            workload = fake.store.find("deployments.apps", self.ns, name)
            state[cluster] = {
                "hpa": None if hpa is None else (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]),
                "replicas": None if workload is None else workload["spec"]["replicas"],
            }
        return state

    def converged(self, name: str = "web", clusters: int = 2) -> dict | None:
        """The object when its status lists ``clusters`` clusters for the current generation."""
        obj = self.fhpa(name)
        status = obj.get("status") or {}
        if status.get("observedGeneration") != obj["metadata"]["generation"]:
            return None
        listed = [c for c in status.get("clusters") or [] if (c.get("maxReplicas") or 0) > 0]
        return obj if len(listed) == clusters else None

    def events_for(self, uid: str) -> list[dict]:
        events, _ = self.core.store.list_objects("events", self.ns)
        return [e for e in events if e["involvedObject"].get("uid") == uid]


def cluster_bounds(obj: dict) -> list[tuple[str, int | None, int | None]]:
    return sorted((c["name"], c.get("minReplicas"), c.get("maxReplicas")) for c in obj["status"]["clusters"])


@pytest.fixture
def world(realapi: RealAPIServer, realapi_namespace: str, tmp_path: Path) -> Iterator[World]:
    realapi.install_crds(CRDS)
    w = World(realapi, realapi_namespace, tmp_path)
    try:
        yield w
    finally:
        w.close()
        for proc in w.controllers:  # shown when a test fails
            sys.stderr.write(f"--- {proc.name} log (tail) ---\n{proc.log()[-4000:]}\n")


def test_assigns_scales_records_status_and_events_fails_over_and_runs_cron(world: World) -> None:
    proc = world.controller("c1")
    created = world.create_fhpa()
    uid = created["metadata"]["uid"]

    obj = wait_for(world.converged, 45, "status listing both clusters")
    state = world.member_state()
    assert all(s["hpa"] is not None for s in state.values()), state
    assert sum(s["hpa"][1] for s in state.values()) == 10
    assert all(s["hpa"][0] <= s["replicas"] <= s["hpa"][1] for s in state.values()), state
    hpa = world.hpa("member1")
    assert hpa is not None and hpa["metadata"]["labels"]["autoscaling.karmada.io/federatedhpa-uid"] == uid
    assert "autoscaling.karmada.io/federatedhpa-cleanup" in obj["metadata"]["finalizers"]
    assert {c["name"] for c in obj["status"]["clusters"]} == {"member1", "member2"}
    wait_for(lambda: world.events_for(uid), 10, "Events on the FederatedHPA")

    # failover: member2 stops answering; after the grace period member1 holds all of F.max
    world.members["member2"].vanish()
    wait_for(lambda: (world.hpa("member1") or {}).get("spec", {}).get("maxReplicas") == 10, 45, "failover")

    # cron: a rule every minute scales the ScaleTarget through its scale subresource
    world.custom().create_namespaced_custom_object(
        "testing.fhpa.io", "v1", world.ns, "scaletargets",
        {"apiVersion": "testing.fhpa.io/v1", "kind": "ScaleTarget", "metadata": {"name": "st"},
         "spec": {"replicas": 1}},
    )  # fmt: skip
    world.custom().create_namespaced_custom_object(
        GROUP, "v1alpha1", world.ns, "cronfederatedhpas",
        {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "CronFederatedHPA",
            "metadata": {"name": "nightly"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "testing.fhpa.io/v1", "kind": "ScaleTarget", "name": "st"},
                "rules": [{"name": "every-minute", "schedule": "* * * * *", "targetReplicas": 4}],
            },
        },
    )  # fmt: skip

    def cron_ran() -> bool:
        st = world.custom().get_namespaced_custom_object(
            "testing.fhpa.io", "v1", world.ns, "scaletargets", "st"
        )
        cron = world.custom().get_namespaced_custom_object(
            GROUP, "v1alpha1", world.ns, "cronfederatedhpas", "nightly"
        )
        histories = (cron.get("status") or {}).get("executionHistories") or []
        ok = [h for h in histories if h.get("successfulExecutions")]
        return st["spec"]["replicas"] == 4 and bool(ok)

    wait_for(cron_ran, 80, "the cron rule to scale the ScaleTarget", every=1.0)
    assert proc.alive()
    assert proc.terminate() == 0  # SIGTERM: clean shutdown
    lease = world.core.store.find("leases.coordination.k8s.io", SYSTEM, "federated-hpa-controller")
    assert lease is not None and lease["spec"]["holderIdentity"] == ""  # released on the way out
    assert "fake-token" not in proc.log()  # the members' bearer token never reaches the log

    # every call this run made on the control plane is granted by manifests/controller's RBAC; the
    # ScaleTarget's scale subresource stands for a workload kind's (the ClusterRole names apps kinds)
    docs = rbac.render()
    grants = rbac.granted(rbac.by_kind(docs, "ClusterRole")) | rbac.granted(rbac.by_kind(docs, "Role"))
    made = {t for r in proc.front.records if (t := rbac.triple(r.method, r.path, r.query)) is not None}
    made = {
        ("apps", "deployments/scale", v) if res == "scaletargets/scale" else (g, res, v) for g, res, v in made
    }
    assert made <= grants, f"calls RBAC does not grant: {sorted(made - grants)}"


def test_a_paused_federated_hpa_holds_its_bounds_through_a_member_outage(world: World) -> None:
    world.controller("c1")
    world.create_fhpa()
    wait_for(world.converged, 45, "status listing both clusters")
    before = world.member_state()

    def annotate(value: str | None) -> None:
        patch = {"metadata": {"annotations": {"autoscaling.karmada.io/paused": value}}}
        world.custom().patch_namespaced_custom_object(
            GROUP, "v1alpha1", world.ns, "federatedhpas", "web", patch
        )

    def paused(status: str) -> bool:
        conditions = (world.fhpa().get("status") or {}).get("conditions") or []
        return any(c["type"] == "Paused" and c["status"] == status for c in conditions)

    annotate("true")
    wait_for(lambda: paused("True"), 30, "Paused=True")
    world.members["member2"].vanish()
    time.sleep(8)  # the failover grace is 2 s: unpaused, member1 would hold all of F.max by now
    assert world.hpa("member1")["spec"]["maxReplicas"] == before["member1"]["hpa"][1]  # type: ignore[index]
    rows = {c["name"]: c for c in world.fhpa()["status"]["clusters"]}
    assert rows["member2"].get("state") != "FailedOver" and rows["member2"]["maxReplicas"] == 5
    annotate(None)  # resumed: member2 has been down past the grace, so it fails over at once
    wait_for(lambda: (world.hpa("member1") or {}).get("spec", {}).get("maxReplicas") == 10, 30, "failover")
    wait_for(lambda: paused("False"), 10, "Paused=False")  # status is written after the member writes


def test_converges_through_conflicts_gone_watches_server_errors_and_member_faults(world: World) -> None:
    proc = world.controller("c1")
    front = proc.front
    ns = world.ns
    # before the object exists: a 409 storm on status writes, 500s on reads, and the watch expiring
    storm = front.fault("PUT", rf"/namespaces/{ns}/federatedhpas/web/status$", status=409, times=6)
    errors = front.fault("GET", rf"/namespaces/{ns}/federatedhpas/web$", status=500, times=3)
    wait_for(
        lambda: (
            front.requests("GET", "/federatedhpas$")
            and any(r.is_watch for r in front.requests("GET", "/federatedhpas$"))
        ),
        20,
        "the watch",
    )
    gone = front.fault("GET", r"/federatedhpas$", gone=True)
    # a member answering 500 to HPA creation twice, and timing out once on a read
    world.members["member1"].faults.add("POST", "horizontalpodautoscalers", status=500, times=2)
    world.members["member2"].faults.add("GET", "horizontalpodautoscalers", stall=5, times=1)
    world.create_fhpa()
    wait_for(world.converged, 60, "convergence through the faults")
    assert storm.hits == 6 and errors.hits == 3
    wait_for(lambda: gone.hits == 1, 30, "the watch to be answered with 410")

    def relists_counted() -> float:
        """The counter's value: its labelled child exists at 0 from the start, so presence proves nothing."""
        url = f"http://127.0.0.1:{proc.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        found = re.search(r'^fhpa_watch_relists_total\{resource="federatedhpas"\} (\S+)$', text, re.M)
        return float(found.group(1)) if found else 0.0

    wait_for(lambda: relists_counted() >= 1, 30, "the relist after the 410 counted in /metrics")
    # after the 410 the watch lists again and keeps working: a spec change is reconciled
    relists = [r for r in front.requests("GET", r"/federatedhpas$") if not r.is_watch]
    assert len(relists) >= 2
    patched = world.custom().patch_namespaced_custom_object(
        GROUP, "v1alpha1", ns, "federatedhpas", "web", {"spec": {"maxReplicas": 12}}
    )
    assert patched["spec"]["maxReplicas"] == 12
    wait_for(
        lambda: sum((s["hpa"] or (0, 0))[1] for s in world.member_state().values()) == 12,
        45,
        "max 12 applied",
    )

    # a member vanishing in the middle of a reconcile: its reads stall, then it is gone
    world.members["member2"].vanish(stall=True)
    wait_for(lambda: (world.hpa("member1") or {}).get("spec", {}).get("maxReplicas") == 12, 60, "failover")
    assert proc.alive()


@pytest.mark.parametrize("kill_point", ["status-write", "member-write"])
def test_a_kill_mid_reconcile_then_restart_ends_as_an_uninterrupted_run_and_only_the_leader_acts(
    world: World, kill_point: str
) -> None:
    ns = world.ns
    first = world.controller("first")
    wait_for(
        lambda: (
            (world.core.store.find("leases.coordination.k8s.io", SYSTEM, "federated-hpa-controller") or {})
            .get("spec", {})
            .get("holderIdentity")
        ),
        20,
        "the first controller to lead",
    )
    standby = world.controller("standby")
    # reference: an uninterrupted reconcile of "ref" (its own Deployment "ref", same shape as "web")
    for fake in world.members.values():
        fake.store.create("deployments.apps", deployment("ref", ns))
    world.create_fhpa("ref")
    wait_for(lambda: world.converged("ref"), 45, "the reference object")
    reference = world.member_state("ref")

    # the object under test: one write of the leader's reconcile stalls, so the kill lands in the
    # middle of a reconcile: after the member writes and before status ("status-write"), or after
    # the first member's HPA and before the second's ("member-write")
    if kill_point == "status-write":
        stall: Any = first.front.fault(
            "PUT", rf"/namespaces/{ns}/federatedhpas/web/status$", stall=60, times=-1
        )
    else:
        stall = world.members["member2"].faults.add(
            "POST", rf"/namespaces/{ns}/horizontalpodautoscalers$", stall=20
        )
    world.create_fhpa("web")
    wait_for(lambda: stall.hits >= 1, 30, "the leader to reach the stalled write")
    wait_for(lambda: "caches synced" in standby.readyz(), 30, "the standby's member caches synced")
    assert standby.writes() == [], "the standby wrote while the leader held the Lease"
    first.kill()
    killed_at = first.killed_at or time.monotonic()

    wait_for(lambda: world.converged("web"), 60, "the standby to take over and finish")
    took_over = [r.at for r in standby.writes()]
    assert took_over and min(took_over) >= killed_at, "the standby acted before the leader was gone"
    # same member state as the uninterrupted run (same fleet, same spec)
    wait_for(lambda: world.member_state("web") == reference, 20, f"state {reference}")
    obj = world.fhpa("web")
    ref = world.fhpa("ref")
    assert cluster_bounds(obj) == cluster_bounds(ref)

    # a restarted first process stands by; the new leader keeps acting alone
    restarted = world.controller("restarted")
    time.sleep(3)
    assert restarted.writes() == [], "a second controller acted while the leader was alive"
    assert standby.alive() and restarted.alive()


def test_sigterm_with_the_default_watch_timeout_exits_inside_the_grace_and_releases_the_lease(
    world: World,
) -> None:
    """7(b): with the default --watch-timeout (300 s) and idle watches, SIGTERM blocked up to the watch
    timeout in closing a watch (4m45s seen by hand), neither renewing nor releasing the Lease, while the
    Deployment gives 40 s. It must exit well inside that and release the Lease."""
    proc = world.controller("idle", watch_timeout=None)

    def holder() -> str:
        lease = world.core.store.find("leases.coordination.k8s.io", SYSTEM, "federated-hpa-controller") or {}
        return str(lease.get("spec", {}).get("holderIdentity") or "")

    wait_for(holder, 30, "the controller to lead")

    def ready() -> bool:
        url = f"http://127.0.0.1:{proc.metrics_port}/readyz"
        try:
            return urllib.request.urlopen(url, timeout=5).status == 200
        except OSError:
            return False

    wait_for(ready, 30, "the caches to sync")
    time.sleep(3)  # the watches are open and idle
    started = time.monotonic()
    code = proc.terminate(timeout=120)
    took = time.monotonic() - started
    assert code == 0
    assert took < 15, f"SIGTERM took {took:.1f}s"
    assert holder() == "", "the Lease was not released"
