"""The run loop: the fleet, the native HPAs and the real controller code on one virtual clock.

Every ``step`` (15 s, the native HPA sync period) the world moves: outages start or end, pods finish
starting or get scheduled, the load is shared over the ready pods, and every reachable cluster's HPA
syncs. Then, unless the controller is in an outage, the controller runs exactly as in production:
``controller.federated_hpa_controller.FederatedHPAReconciler`` (the namespace guard, the finalizer,
observe through the MemberCluster ports, plan, execute) once per step and again at its ``Result``'s
requeue-after when that comes sooner, and the cron reconciler
(``controller.cron_controller.CronFederatedHPAReconciler``, when that module is present) at each
requeue-after it answers.
The simulator never plans: it only plays the clusters and records what happened.

A controller outage stops both controllers while member HPAs keep scaling within their last bounds;
on resuming, the controller starts from what is stored (status, member HPAs), as a restarted process.

Violations: each step checks what only the live objects show (a member HPA with min above max, a write
that gave replicas to a cluster while it was down); at the end of the run ``simulator.promises.measure``
measures the FederatedHPA's four promises from the recorded steps alone (what the fleet did, not what
the planner meant to do).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from controller.errors import ConflictError, PortError
from controller.executor import ExecutionResult
from controller.federated_hpa_controller import FederatedHPAReconciler
from controller.planning.affinity import affinity_matches
from controller.planning.failover import HealthPolicy
from controller.planning.member_hpa import LABEL_OWNER_UID
from controller.planning.namespaces import NamespacePolicy
from controller.planning.plan import Plan
from controller.planning.planner import PlannerConfig
from controller.ports import ClusterIdentity
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA
from fhpa_api.validation import parse_object
from simulator.changes import patched_object, relabel
from simulator.clock import VirtualClock
from simulator.cluster import Room, SimulatedCluster, taints_from
from simulator.control_plane import RecordedEvent, SimulatedControlPlane
from simulator.load import LOAD_MODELS, LoadModel, Trace
from simulator.nodes import NodeGroupSpec
from simulator.promises import PromiseReport, PromiseTerms, Violation, measure
from simulator.samples import ClusterSample, StepSample
from simulator.scenario import ClusterSpec, Scenario
from simulator.sole_holder import GraceRecorder, Seen

MAX_PASSES_PER_STEP = 4
"""Requeues sooner than a step run within it; bounded so a planner that always requeues at 0 s ends."""

Progress = Callable[[float, float], None]
"""Called now and then with (simulated seconds done, total)."""


class SimulationError(RuntimeError):
    """The controller code raised during a run: a bug to report, with the instant it happened."""


@dataclass
class RunResult:
    scenario: Scenario
    steps: list[StepSample]
    violations: list[Violation]
    events: list[RecordedEvent]
    api_writes: dict[str, int]
    controller_passes: int
    controller_actions: int  # passes that wrote to member clusters
    final: FederatedHPA | None
    promises: PromiseReport  # the four promises measured over ``steps`` (their breaches are in violations)

    @property
    def step_seconds(self) -> float:
        return self.scenario.file.step


class Simulation:
    """One run of one scenario: ``step()`` one step at a time, or ``run()`` to the end (once)."""

    def __init__(
        self,
        scenario: Scenario,
        progress: Progress | None = None,
        namespaces: NamespacePolicy | None = None,
    ) -> None:
        self.scenario = scenario
        self.namespaces = namespaces or NamespacePolicy()  # the controller's --allow/--deny-namespaces
        spec = scenario.file
        self._progress = progress
        self.clock = VirtualClock(spec.start)
        fhpa = scenario.federated_hpa
        self.namespace = fhpa.metadata.namespace or "default"
        self.clusters: dict[str, SimulatedCluster] = {
            c.name: SimulatedCluster(
                ClusterIdentity(
                    name=c.name,
                    labels=c.labels,
                    provider=c.provider,
                    region=c.region,
                    zone=c.zone,
                    taints=taints_from([t.model_dump(exclude_none=True) for t in c.taints]),
                ),
                self.clock,
                capacity=c.capacity,
                pod_startup_s=c.pod_startup,
                workload=fhpa.spec.scale_target_ref if c.workload else None,
                namespace=self.namespace,
                replicas=c.replicas,
                room=room_of(c, self.clock),
            )
            for c in spec.clusters
        }
        self.control_plane = SimulatedControlPlane(self.clock, self.clusters)
        self.fhpa_key = (self.namespace, fhpa.metadata.name or "")
        self.control_plane.create(fhpa)
        for name, data in spec.config_maps.items():
            self.control_plane.config_maps[(self.namespace, name)] = dict(data)
        self.cron_keys = [
            (self.namespace, self.control_plane.create(c).metadata.name or "")
            for c in scenario.cron_federated_hpas
        ]
        self.config = PlannerConfig(**spec.planner.model_dump(exclude_none=True))
        # the failover grace each cluster has (grown by its flaps, short for a sole holder), per step
        self._graces = GraceRecorder(
            HealthPolicy(
                grace_seconds=self.config.failover_grace_seconds,
                hysteresis_seconds=self.config.rejoin_hysteresis_seconds,
                enabled=True,
            ),
            self.config.blip_tolerance_seconds,
        )
        trace = Trace.from_points([(p.at, p.rps) for p in spec.load.trace])
        self.load: LoadModel = LOAD_MODELS[spec.load.model](trace, spec.load.pod_capacity)
        self.external = {
            name: Trace.from_points([(p.at, p.value) for p in points])
            for name, points in spec.load.external.items()
        }
        self.backlog = dict.fromkeys(spec.load.backlog, 0.0)  # messages waiting beyond the trace's value
        self._fhpa_reconciler = FederatedHPAReconciler(
            self.control_plane,
            lambda: self.clusters,
            self.clock,
            self.config,
            namespaces=self.namespaces,
            on_action=self._on_action,
            on_pass=self._on_pass,
        )
        self._plan: Plan | None = None  # the last pass's plan
        self._cron_module: Any = _cron_module() if self.cron_keys else None
        self._cron: Any = None  # the cron reconciler of the running process (None: not started)
        self._cron_due: dict[tuple[str, str], datetime | None] = {}  # its requeue-after, as instants
        self._violations: list[Violation] = []
        self._steps: list[StepSample] = []
        self._passes = 0
        self._action_passes = 0
        self._controller_was_up = True
        self._step_actions: list[str] = []
        self._replicas_before: dict[str, int] = {}  # before the controller's next replica write
        self._drained: set[str] = set()  # clusters whose replicas the controller wrote down this step
        self._min_above_max: set[tuple[str, str]] = set()  # (cluster, HPA) reported and still so
        self._selection: tuple[int, dict[str, bool]] | None = None  # (generation, selected per cluster)
        self._changes = sorted(spec.changes, key=lambda c: c.at)  # the timed changes still to come

    # --- the loop ---------------------------------------------------------------------------------

    @property
    def steps(self) -> list[StepSample]:
        """The samples recorded so far, one per step (read them; the run appends to this list)."""
        return self._steps

    @property
    def violations(self) -> list[Violation]:
        """The engine's own checks of the live objects so far (the promises are measured at the end)."""
        return list(self._violations)

    @property
    def elapsed(self) -> float:
        """Seconds since t=0 of the next step to run."""
        return len(self._steps) * self.scenario.file.step

    def step(self) -> StepSample:
        """Run the next step (the fleet moves, the HPAs sync, the controller runs) and return its sample."""
        self._step(self.elapsed, self.scenario.file.step)
        return self._steps[-1]

    def run(self) -> RunResult:
        """Run the steps left to the scenario's duration and measure the run."""
        spec = self.scenario.file
        n_steps = int(spec.duration // spec.step)
        while len(self._steps) < n_steps:
            i = len(self._steps)
            self.step()
            if self._progress and i % 240 == 0:
                self._progress(i * spec.step, spec.duration)
        if self._progress:
            self._progress(spec.duration, spec.duration)
        return self.result()

    def result(self) -> RunResult:
        """The run so far, measured: the samples, the violations (engine checks and promise breaches)."""
        promises = measure(self._steps, self.promise_terms())
        return RunResult(
            scenario=self.scenario,
            steps=self._steps,
            violations=sorted(self._violations + promises.violations, key=lambda v: v.t),
            events=list(self.control_plane.events),
            api_writes={name: c.api_writes for name, c in self.clusters.items()},
            controller_passes=self._passes,
            controller_actions=self._action_passes,
            final=self.control_plane.get_federated_hpa(*self.fhpa_key),
            promises=promises,
        )

    def promise_terms(self) -> PromiseTerms:
        """What this run's promises are measured against: the planner's flags and the policy."""
        spec = self.scenario.federated_hpa.spec
        return PromiseTerms(
            step_s=self.scenario.file.step,
            failover_grace_s=self.config.failover_grace_seconds,
            optimization_period_s=self.config.optimization_period_seconds,
            policy=spec.assignment_type,
            scale_assist=spec.effective_scale_assist,
        )

    def _step(self, t: float, step: float) -> None:
        self.clock.advance_to(t)
        now = self.clock.now()
        self._apply_changes(t)
        self._update_outages(t)
        ready_before = {n: c.pods.ready for n, c in self.clusters.items()}
        for cluster in self.clusters.values():
            cluster.advance(now)
        controller_up = not any(w.covers(t) for w in self.scenario.file.controller_outages)
        self._step_actions = []
        self._drained = set()
        self._replicas_before = {n: c.replicas for n, c in self.clusters.items()}
        if self._readiness_pass(controller_up, ready_before):
            self._reconcile(t)
        demand = self.load.demand(t)
        share = self.load.share(demand, self._serving())
        external = {name: trace.at(t) + self.backlog.get(name, 0.0) for name, trace in self.external.items()}
        desired = {}
        for name, cluster in self.clusters.items():
            for result in cluster.sync_hpas(now, share.usage_per_pod_milli, external):
                desired[name] = result.replicas
        after = self.load.share(demand, self._serving())
        self._queue(demand, after.served_rps, step)
        self._replicas_before = {n: c.replicas for n, c in self.clusters.items()}
        if controller_up:
            if not self._controller_was_up:
                self._cron = None  # a restarted process: nothing kept in memory
            self._run_controllers(t, step)
        self._controller_was_up = controller_up
        self._check_invariants(t, step)
        self._record(t, demand, share.utilization_percent, after.served_by_cluster, controller_up)

    def _readiness_pass(self, controller_up: bool, ready_before: dict[str, int]) -> bool:
        """With ``readinessPass``: did pods become Ready (or stop being so) since the last step? A real
        controller watches the Deployment's status and passes at once, before the member HPAs' next
        sync, so it reads their metrics of the last sync against the new ready counts. Without this pass
        every controller pass here reads metrics and pods of one instant, which no real fleet shows; it
        is off by default because the figures of docs/simulator.md were made without it (what it
        changes there: "Burst assist against real HPAs")."""
        if not (self.scenario.file.readiness_pass and controller_up and self._controller_was_up):
            return False
        return any(c.pods.ready != ready_before[n] for n, c in self.clusters.items())

    def patch_federated_hpa(self, spec_patch: dict[str, Any]) -> FederatedHPA:
        """The user merge-patches the FederatedHPA's spec; the result is admitted as the API server would
        (``InvalidObjectError`` when it would refuse it) and stored as a new generation."""
        namespace, name = self.fhpa_key
        stored = self.control_plane.peek_federated_hpa(namespace, name)
        if stored is None:
            raise SimulationError(f"FederatedHPA {namespace}/{name} is gone: nothing to patch")
        raw = stored.model_dump(
            by_alias=True, exclude_none=True, mode="json", include={"api_version", "kind", "metadata", "spec"}
        )
        admitted = parse_object(patched_object(raw, spec_patch))
        assert isinstance(admitted, FederatedHPA)
        return self.control_plane.replace_federated_hpa_spec(namespace, name, admitted.spec)

    def annotate_federated_hpa(self, change: dict[str, str | None]) -> FederatedHPA:
        """The user annotates the FederatedHPA (``None`` removes an annotation), e.g. to pause it."""
        namespace, name = self.fhpa_key
        stored = self.control_plane.peek_federated_hpa(namespace, name)
        if stored is None:
            raise SimulationError(f"FederatedHPA {namespace}/{name} is gone: nothing to annotate")
        merged = relabel(stored.metadata.annotations or {}, change)
        return self.control_plane.annotate_federated_hpa(namespace, name, merged)

    def relabel_cluster(self, name: str, change: dict[str, str | None]) -> None:
        """The user relabels a cluster (``None`` removes a label); the affinity is matched anew."""
        cluster = self.clusters[name]
        cluster.relabel(relabel(cluster.identity.labels, change))
        self._selection = None

    def _apply_changes(self, t: float) -> None:
        """The scenario's timed changes due by ``t``, in time order (the file's order among equal times)."""
        while self._changes and self._changes[0].at <= t:
            change = self._changes.pop(0)
            if change.federated_hpa is not None:
                self.patch_federated_hpa(change.federated_hpa)
            elif change.annotations is not None:
                self.annotate_federated_hpa(change.annotations)
            elif change.cluster is not None:
                self.relabel_cluster(change.cluster, change.labels or {})

    def _update_outages(self, t: float) -> None:
        for spec in self.scenario.file.clusters:
            self.clusters[spec.name].set_down(spec.down_at(t))

    def _queue(self, demand: float, served: float, step: float) -> None:
        """A queue's backlog over one step: what the fleet did not serve piles up (one message per
        request), and the Ready pods' capacity beyond the demand works it off. It only raises the metric
        the member HPAs read: served stays what was served as it arrived."""
        if not self.backlog:
            return
        spare = max(0.0, sum(self._serving().values()) * self.load.pod_capacity - demand)
        change = (max(0.0, demand - served) - spare) * step
        for name, waiting in self.backlog.items():
            self.backlog[name] = max(0.0, waiting + change)

    def _serving(self) -> dict[str, int]:
        """Ready pods per cluster that takes traffic (a cluster in an outage takes none)."""
        return {n: c.pods.ready for n, c in self.clusters.items() if not c.down and c.workload is not None}

    # --- the controller ---------------------------------------------------------------------------

    def _run_controllers(self, t: float, step: float) -> None:
        """Controller passes and cron fires within [t, t + step), in time order."""
        at = t
        for _ in range(MAX_PASSES_PER_STEP):
            self.clock.advance_to(at)
            self._run_cron()
            requeue = self._reconcile(at)
            if requeue is None or at + requeue >= t + step:
                break
            at += requeue
        self._run_cron_until(t + step)

    def _reconcile(self, t: float) -> float | None:
        """One pass of the production FederatedHPA reconciler; when to pass again (None: next step).

        A conflict is looked at again at once, as the work queue's first retry does; a member write that
        failed waits for the plan's own requeue, since the simulator keeps no retry backoff.
        """
        self._plan = None
        try:
            result = self._fhpa_reconciler.reconcile(*self.fhpa_key)
        except ConflictError:
            return 0.0
        except PortError as exc:
            if self._plan is None:  # not a failed write the pass reported: the controller broke
                raise self._failed(t, exc) from exc
            return self._plan.requeue_after_seconds
        except Exception as exc:  # a bug in the controller: stop with where and when
            raise self._failed(t, exc) from exc
        return result.requeue_after_seconds

    def _failed(self, t: float, exc: Exception) -> SimulationError:
        return SimulationError(f"the controller failed at t={t:.0f}s ({self.clock.now()}): {exc!r}")

    def _on_action(self, kind: str, cluster: str, ok: bool) -> None:
        if ok:
            self._step_actions.append(f"{kind}/{cluster}")
        if ok and kind == "scale" and cluster in self.clusters:
            replicas = self.clusters[cluster].replicas
            if replicas < self._replicas_before.get(cluster, replicas):
                self._drained.add(cluster)
            self._replicas_before[cluster] = replicas

    def _on_pass(self, fhpa: FederatedHPA, the_plan: Plan, result: ExecutionResult) -> None:
        self._plan = the_plan
        self._passes += 1
        if the_plan.has_member_writes:
            self._action_passes += 1

    def _run_cron(self) -> None:
        """Reconcile every CronFederatedHPA whose requeue-after has come (a fresh process: all of them)."""
        if self._cron_module is None:
            return
        now = self.clock.now()
        if self._cron is None:
            runner = self._cron_module.CronController(
                self.control_plane, default_time_zone="UTC", namespaces=self.namespaces
            )
            self._cron = self._cron_module.CronFederatedHPAReconciler(runner, self.clock)
            self._cron_due = dict.fromkeys(self.cron_keys, now)
        for key, due in sorted(self._cron_due.items()):
            if due is not None and due <= now:
                after = self._cron.reconcile(key[0], key[1]).requeue_after_seconds
                self._cron_due[key] = None if after is None else now + timedelta(seconds=after)

    def _run_cron_until(self, end: float) -> None:
        """Fire cron rules that fall due before the next step at their own instant."""
        if self._cron_module is None:
            return
        end_at = self.clock.at(end)
        while True:
            due = [d for d in self._cron_due.values() if d is not None and self.clock.now() < d < end_at]
            if not due:
                return
            self.clock.advance_to((min(due) - self.clock.start).total_seconds())
            self._run_cron()

    # --- measuring --------------------------------------------------------------------------------

    def _check_invariants(self, t: float, step: float) -> None:
        """What only the live objects show; the promises are measured from the samples after the run."""
        still: set[tuple[str, str]] = set()
        for name, cluster in self.clusters.items():
            for hpa in cluster.hpas.values():
                if hpa.min_replicas > hpa.max_replicas:
                    still.add((name, hpa.name))
                    if (name, hpa.name) not in self._min_above_max:  # once per episode
                        self._violate(
                            t,
                            "member-min-above-max",
                            f"{name}/{hpa.name}: min {hpa.min_replicas} > max {hpa.max_replicas}",
                        )
            if cluster.raises_while_down:
                self._violate(
                    t,
                    "replicas-to-unhealthy-cluster",
                    f"{name}: {cluster.raises_while_down} write(s) raising replicas or max while it was down",
                )
                cluster.raises_while_down = 0
        self._min_above_max = still

    def _violate(self, t: float, kind: str, detail: str) -> None:
        self._violations.append(Violation(t, kind, detail))

    def _selected(self, fhpa: FederatedHPA | None) -> dict[str, bool]:
        """Per cluster: selected by the clusterAffinity and not tainted NoExecute (cached per generation)."""
        generation = (fhpa.metadata.generation or 0) if fhpa is not None else -1
        if self._selection is None or self._selection[0] != generation:
            affinity = fhpa.spec.cluster_affinity if fhpa is not None else None
            selected = {}
            for name, cluster in self.clusters.items():
                seen = cluster.identity.observed()
                selected[name] = affinity_matches(affinity, seen) and not seen.no_execute
            self._selection = (generation, selected)
        return self._selection[1]

    def _record(
        self, t: float, demand: float, utilization: float, served: dict[str, float], up: bool
    ) -> None:
        fhpa = self.control_plane.peek_federated_hpa(*self.fhpa_key)
        uid = (fhpa.metadata.uid or "") if fhpa is not None else None
        selected = self._selected(fhpa)
        pod_capacity = self.load.pod_capacity
        oracle_capacity = sum(
            c.ceiling for c in self.clusters.values() if not c.down and c.workload is not None
        )
        status = fhpa.status if fhpa is not None else None
        rows = {r.name: r for r in status.clusters or []} if status is not None else {}
        seen = {
            name: Seen(c.down, selected[name], c.workload is not None, c.replicas, c.pods.pending)
            for name, c in self.clusters.items()
        }
        graces = self._graces.graces(t, self.clock.now(), seen, rows)
        samples = {}
        for name, cluster in self.clusters.items():
            hpa = next((h for h in cluster.hpas.values() if h.labels.get(LABEL_OWNER_UID) == uid), None)
            foreign = cluster.workload is not None and any(
                h is not hpa and _targets(h.spec, cluster.workload) for h in cluster.hpas.values()
            )
            samples[name] = ClusterSample(
                replicas=cluster.replicas,
                ready=cluster.pods.ready,
                starting=cluster.pods.starting_count,
                pending=cluster.pods.pending,
                capacity=cluster.capacity,
                down=cluster.down,
                hpa_min=hpa.min_replicas if hpa else None,
                hpa_max=hpa.max_replicas if hpa else None,
                hpa_desired=hpa.status.desired_replicas if hpa else None,
                utilization=0.0 if cluster.down or not cluster.pods.ready else utilization,
                served_rps=served.get(name, 0.0),
                selected=selected[name],
                workload=cluster.workload is not None,
                foreign_hpa=foreign,
                drained=name in self._drained,
                nodes=cluster.nodes.nodes if cluster.nodes is not None else 0,
                quota_refused=cluster.refused,
                cost_per_hour=cluster.cost_per_hour,
                elastic_room=cluster.capacity_observation().elastic,
                provision_s=cluster.nodes.spec.provision_s if cluster.nodes is not None else 0.0,
                quota_pods=cluster.room.quota_pods,
                failover_grace_s=graces[name],
            )
        self._steps.append(
            StepSample(
                t=t,
                demand_rps=demand,
                served_rps=min(demand, sum(served.values())),
                oracle_rps=min(demand, oracle_capacity * pod_capacity),
                controller_up=up,
                fhpa_min=fhpa.spec.effective_min if fhpa else 0,
                fhpa_max=fhpa.spec.max_replicas if fhpa else 0,
                clusters=samples,
                actions=list(self._step_actions),
            )
        )


def room_of(spec: ClusterSpec, clock: VirtualClock) -> Room:
    """A scenario cluster's node group, quota, capacity changes and costs, for the simulated cluster."""
    group = spec.autoscaling
    return Room(
        node_group=None
        if group is None
        else NodeGroupSpec(
            group.pods_per_node, group.min_nodes, group.max_nodes, group.provision_seconds, group.idle_seconds
        ),
        quota_pods=spec.quota.pods if spec.quota is not None else None,
        capacity_changes=tuple((clock.at(c.at), c.capacity) for c in spec.capacity_changes),
        cost_per_pod_hour=spec.cost_per_pod_hour,
        node_cost_per_pod_hour=spec.cost_per_pod_hour,
    )


def _targets(spec: dict[str, Any], workload: CrossVersionObjectReference) -> bool:
    """Does an HPA spec target ``workload`` (by kind and name, as the HPA controller matches it)?"""
    ref = spec.get("scaleTargetRef") or {}
    return (ref.get("kind"), ref.get("name")) == (workload.kind, workload.name)


def _cron_module() -> Any:
    try:
        return importlib.import_module("controller.cron_controller")
    except ModuleNotFoundError as exc:
        if exc.name != "controller.cron_controller":
            raise
        raise SimulationError(
            "this scenario has CronFederatedHPAs but controller.cron_controller is not in this build"
        ) from None


def simulate(scenario: Scenario, progress: Progress | None = None) -> RunResult:
    """Run ``scenario`` to its end."""
    return Simulation(scenario, progress).run()
