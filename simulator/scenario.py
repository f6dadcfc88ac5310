"""Scenario files: a fleet, a load trace, outages and the FederatedHPA to run, as YAML.

Everything is checked before a run starts, and every problem is reported at once with its path in the
file (``clusters[1].podStartup: ...``): unknown keys, bad durations, and a FederatedHPA or
CronFederatedHPA that the admission webhook would refuse (checked by ``fhpa_api.validation``, the same
rules the webhook runs), so a scenario can only run objects a real fleet would accept.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from fhpa_api.models import CronFederatedHPA, FederatedHPA
from fhpa_api.validation import InvalidObjectError, parse_object
from simulator.changes import merge_patch, patched_object
from simulator.load import LOAD_MODELS

DEFAULT_START = datetime(2026, 11, 23, tzinfo=UTC)
"""t=0 when a scenario gives no ``start``: a fixed midnight UTC, so runs never depend on today."""

_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*$")


class ScenarioError(ValueError):
    """A scenario that cannot run; ``problems`` lists each as ``path: what is wrong``."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        listing = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: invalid scenario ({len(problems)} problem(s)):\n{listing}")


def parse_duration(value: Any) -> float:
    """Seconds from ``90``, ``"30s"``, ``"10m"``, ``"2h"`` or combinations like ``"1h30m"``."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration (use a number with s, m or h, e.g. 30s, 10m, 2h)")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a duration must be >= 0, got {value}")
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and any(match.groups()):
            hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
            return hours * 3600 + minutes * 60 + seconds
    raise ValueError(f"{value!r} is not a duration (use a number with s, m or h, e.g. 30s, 10m, 2h)")


Duration = Annotated[float, BeforeValidator(parse_duration)]
Admitted = TypeVar("Admitted", FederatedHPA, CronFederatedHPA)


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class Window(_Model):
    """An outage: from ``at`` (after t=0) for ``for`` seconds."""

    at: Duration
    for_: Duration = Field(alias="for")

    @property
    def end(self) -> float:
        return self.at + self.for_

    def covers(self, seconds: float) -> bool:
        return self.at <= seconds < self.end


class TaintSpec(_Model):
    key: str
    value: str | None = None
    effect: str

    @field_validator("effect")
    @classmethod
    def _effect(cls, value: str) -> str:
        if value not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError("effect must be NoSchedule, PreferNoSchedule or NoExecute")
        return value


class AutoscalingSpec(_Model):
    """A cluster-autoscaler node group: the cluster's room is whole nodes of ``podsPerNode`` pods."""

    pods_per_node: int = Field(gt=0)
    min_nodes: int = Field(default=0, ge=0)
    max_nodes: int = Field(ge=0)
    provision_seconds: Duration = 180.0
    idle_seconds: Duration = 600.0


class QuotaSpec(_Model):
    """The namespace's ResourceQuota: pods beyond ``pods`` are never created (FailedCreate)."""

    pods: int = Field(ge=0)


class CapacityChange(_Model):
    """Nodes lost or added by hand: from ``at`` the cluster's room is ``capacity`` pods."""

    at: Duration
    capacity: int = Field(ge=0)


class ClusterSpec(_Model):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    labels: dict[str, str] = Field(default_factory=dict)
    provider: str | None = None
    region: str | None = None
    zone: str | None = None
    taints: list[TaintSpec] = Field(default_factory=list)
    capacity: int = Field(ge=0, description="pods of the workload the cluster can run")
    pod_startup: Duration = 30.0
    replicas: int = Field(default=0, ge=0, description="replicas already running (Ready) at t=0")
    workload: bool = True  # False: the workload was not propagated here (TargetMissing)
    outages: list[Window] = Field(default_factory=list)
    autoscaling: AutoscalingSpec | None = None  # elastic: ``capacity`` is the starting nodes' room
    quota: QuotaSpec | None = None
    capacity_changes: list[CapacityChange] = Field(default_factory=list)
    cost_per_pod_hour: float = Field(default=1.0, ge=0)

    def down_at(self, seconds: float) -> bool:
        return any(w.covers(seconds) for w in self.outages)

    def capacity_at(self, seconds: float) -> int:
        """The room set by hand at ``seconds``: the last capacity change by then, else ``capacity``."""
        changed = [c for c in sorted(self.capacity_changes, key=lambda c: c.at) if c.at <= seconds]
        return changed[-1].capacity if changed else self.capacity


class TracePoint(_Model):
    at: Duration
    rps: float = Field(ge=0)


class MetricPoint(_Model):
    at: Duration
    value: float = Field(ge=0)


def _strictly_increasing(times: list[float], what: str) -> None:
    if times != sorted(times) or len(set(times)) != len(times):
        raise ValueError(f"{what} must be in strictly increasing `at` order")


class LoadSpec(_Model):
    model: str = "equalShare"  # a name in simulator.load.LOAD_MODELS: how demand lands on pods
    pod_capacity: float = Field(gt=0, description="rps one pod serves at 100% CPU")
    trace: list[TracePoint] = Field(min_length=1)
    # External metrics by name (a queue's length...): the whole fleet's value, which every member HPA
    # with an External (or Object) metric of that name reads; linear in between, flat before and after
    external: dict[str, list[MetricPoint]] = Field(default_factory=dict)
    # External metrics that are queues fed by the trace: what the fleet does not serve piles up in them
    # (one message per request) and Ready pods' spare capacity works it off (simulator.engine)
    backlog: list[str] = Field(default_factory=list)

    @field_validator("trace")
    @classmethod
    def _increasing(cls, trace: list[TracePoint]) -> list[TracePoint]:
        _strictly_increasing([p.at for p in trace], "trace points")
        return trace

    @field_validator("external")
    @classmethod
    def _metric_traces(cls, external: dict[str, list[MetricPoint]]) -> dict[str, list[MetricPoint]]:
        for name, points in external.items():
            if not name:
                raise ValueError("an external metric needs a name")
            if not points:
                raise ValueError(f"external metric {name!r}: needs at least one point")
            _strictly_increasing([p.at for p in points], f"external metric {name!r}: points")
        return external

    @model_validator(mode="after")
    def _backlog_of_known_metrics(self) -> LoadSpec:
        unknown = sorted(set(self.backlog) - set(self.external))
        if unknown:
            raise ValueError(f"backlog: {', '.join(unknown)} not among the external metrics")
        return self


class Change(_Model):
    """A timed what-if: at ``at``, one of: the FederatedHPA's spec gets a merge patch, its annotations
    change (``kubectl annotate``: the way to pause and resume it), or a cluster's labels change (``null``
    removes a label or an annotation). Annotations are a key of their own rather than part of the spec
    patch because they live in metadata and change no generation, as on a real API server."""

    at: Duration
    federated_hpa: dict[str, Any] | None = Field(default=None, alias="federatedHPA")
    annotations: dict[str, str | None] | None = None
    cluster: str | None = None
    labels: dict[str, str | None] | None = None


class PlannerSpec(_Model):
    """Controller flags (PlannerConfig); unset ones keep the controller's defaults."""

    failover_grace_seconds: float | None = Field(default=None, ge=0)
    optimization_period_seconds: float | None = Field(default=None, gt=0)
    rejoin_hysteresis_seconds: float | None = Field(default=None, ge=0)
    blip_tolerance_seconds: float | None = Field(default=None, ge=0)
    burst_assist: bool | None = None


class ScenarioFile(_Model):
    """The YAML document as written; the objects in it are checked separately by the API rules."""

    name: str | None = None
    description: str | None = None
    start: datetime = DEFAULT_START
    duration: Duration
    step: Duration = 15.0
    clusters: list[ClusterSpec] = Field(min_length=1)
    load: LoadSpec
    controller_outages: list[Window] = Field(default_factory=list)
    # the controller also passes when pods turn Ready, before the member HPAs sync (engine._readiness_pass)
    readiness_pass: bool = False
    planner: PlannerSpec = Field(default_factory=PlannerSpec)
    federated_hpa: dict[str, Any] = Field(alias="federatedHPA")
    cron_federated_hpas: list[dict[str, Any]] = Field(default_factory=list, alias="cronFederatedHPAs")
    # ConfigMaps in the FederatedHPA's namespace by name, their data as written (a rule's calendar of
    # excluded days: excludeCalendarRef)
    config_maps: dict[str, dict[str, str]] = Field(default_factory=dict, alias="configMaps")
    changes: list[Change] = Field(default_factory=list)

    @field_validator("start")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("start needs a time zone, e.g. 2026-11-23T00:00:00Z")
        return value.astimezone(UTC)


class Scenario(BaseModel):
    """A checked scenario: the file plus the admitted (defaulted) API objects."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    source: str
    file: ScenarioFile
    federated_hpa: FederatedHPA
    cron_federated_hpas: list[CronFederatedHPA]

    @property
    def name(self) -> str:
        return self.file.name or Path(self.source).stem

    def with_federated_hpa(self, raw: dict[str, Any], label: str) -> Scenario:
        """The same fleet and load with another FederatedHPA (the --compare baselines). Timed patches of
        the FederatedHPA keep what a baseline keeps (bounds, metrics, behavior), never its placement."""
        data = self.file.model_dump(by_alias=True, exclude_none=True)
        data["federatedHPA"] = raw
        data["changes"] = baseline_changes(data.get("changes", []))
        data["name"] = f"{self.name} [{label}]"
        return parse_scenario(data, f"{self.source} [{label}]")


PLACEMENT_KEYS = (
    "federatedHPAAssignment",
    "clusterAffinity",
    "scalingToZero",
    "autoscaleMultiClusterDelay",
    "scaleAssist",
)
"""The spec keys that make a policy what it is: a baseline ignores timed patches of these."""


def baseline_changes(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Timed changes as a baseline runs them: FederatedHPA patches without placement keys (dropped when
    nothing else is left); cluster label changes as written."""
    kept = []
    for change in changes:
        patch = change.get("federatedHPA")
        if patch is None:
            kept.append(change)
            continue
        rest = {k: v for k, v in patch.items() if k not in PLACEMENT_KEYS}
        if rest:
            kept.append({**change, "federatedHPA": rest})
    return kept


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(str(path), [f"cannot read the file: {exc.strerror or exc}"]) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(str(path), [f"not valid YAML: {exc}"]) from exc
    return parse_scenario(data, str(path))


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Check a scenario document (already parsed from YAML) and build the :class:`Scenario`."""
    if not isinstance(data, dict):
        raise ScenarioError(source, [f"the document must be a mapping of keys, not {type(data).__name__}"])
    problems: list[str] = []
    file: ScenarioFile | None = None
    try:
        file = ScenarioFile.model_validate(data)
    except ValidationError as exc:
        problems += [_describe(e) for e in exc.errors()]
    if file is not None:
        problems += _cross_check(file)
    fhpa = _admit_kind(data.get("federatedHPA"), "federatedHPA", FederatedHPA, problems)
    raw_crons = data.get("cronFederatedHPAs")
    crons = [
        _admit_kind(raw, f"cronFederatedHPAs[{i}]", CronFederatedHPA, problems)
        for i, raw in enumerate(raw_crons if isinstance(raw_crons, list) else [])
    ]
    if problems or file is None or fhpa is None:
        raise ScenarioError(source, problems)
    checked = [c for c in crons if c is not None]
    problems += _check_cron_targets(fhpa, checked)
    if problems:
        raise ScenarioError(source, problems)
    return Scenario(source=source, file=file, federated_hpa=fhpa, cron_federated_hpas=checked)


def _admit_kind(raw: Any, path: str, kind: type[Admitted], problems: list[str]) -> Admitted | None:
    """Admit one object as the API server would; None (and problems) when it would refuse it."""
    if not isinstance(raw, dict):
        return None  # the file model already reported the missing or mistyped key
    admitted = _admit(raw, path, problems)
    if admitted is not None and not isinstance(admitted, kind):
        problems.append(f"{path}.kind: must be {kind.__name__}, not {admitted.kind}")
        return None
    return admitted if isinstance(admitted, kind) else None


def _admit(raw: dict[str, Any], path: str, problems: list[str]) -> FederatedHPA | CronFederatedHPA | None:
    try:
        return parse_object(raw)
    except InvalidObjectError as exc:
        problems.extend(f"{path}.{err.path}: {err.message}" for err in exc.result.errors)
        return None


def _cross_check(file: ScenarioFile) -> list[str]:
    problems = []
    names = [c.name for c in file.clusters]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"clusters: the name {name!r} is used more than once")
    if file.duration <= 0:
        problems.append("duration: must be longer than 0s")
    if not 1 <= file.step <= 300:
        problems.append("step: must be between 1s and 5m (the native HPA syncs every 15s)")
    for i, cluster in enumerate(file.clusters):
        for j, window in enumerate(cluster.outages):
            if window.for_ <= 0:
                problems.append(f"clusters[{i}].outages[{j}].for: must be longer than 0s")
        problems += _check_room(f"clusters[{i}]", cluster, file.duration)
    for j, window in enumerate(file.controller_outages):
        if window.for_ <= 0:
            problems.append(f"controllerOutages[{j}].for: must be longer than 0s")
    if file.load.model not in LOAD_MODELS:
        problems.append(f"load.model: unknown model {file.load.model!r} (one of: {', '.join(LOAD_MODELS)})")
    problems += _check_changes(file)
    return problems


def _check_room(path: str, cluster: ClusterSpec, duration: float) -> list[str]:
    """A node group's room is whole nodes within its bounds; capacity changes fall within the run."""
    problems = []
    seen: dict[float, int] = {}
    for j, change in enumerate(cluster.capacity_changes):
        if change.at >= duration:
            problems.append(f"{path}.capacityChanges[{j}].at: after the end of the run ({duration:g}s)")
        if change.at in seen:  # which of two rooms holds from that instant would be a guess
            problems.append(
                f"{path}.capacityChanges[{j}].at: {change.at:g}s is also capacityChanges[{seen[change.at]}]'s"
            )
        seen.setdefault(change.at, j)
    group = cluster.autoscaling
    if group is None:
        return problems
    if group.min_nodes > group.max_nodes:
        problems.append(f"{path}.autoscaling.minNodes: {group.min_nodes} is above maxNodes {group.max_nodes}")
    rooms = [("capacity", cluster.capacity)]
    rooms += [(f"capacityChanges[{j}].capacity", c.capacity) for j, c in enumerate(cluster.capacity_changes)]
    for where, room in rooms:
        if room % group.pods_per_node:
            problems.append(
                f"{path}.{where}: {room} is not a multiple of autoscaling.podsPerNode {group.pods_per_node} "
                "(with autoscaling the room is whole nodes)"
            )
        elif room // group.pods_per_node > group.max_nodes:
            problems.append(
                f"{path}.{where}: {room // group.pods_per_node} nodes is above autoscaling.maxNodes "
                f"{group.max_nodes}"
            )
    if cluster.capacity // group.pods_per_node < group.min_nodes:
        problems.append(
            f"{path}.capacity: {cluster.capacity} is fewer nodes than autoscaling.minNodes {group.min_nodes}"
        )
    return problems


def _check_changes(file: ScenarioFile) -> list[str]:
    """Each change does one thing, to something the scenario has, and every FederatedHPA patch (applied
    in time order over the ones before it) leaves an object the API server would admit."""
    problems = []
    names = {c.name for c in file.clusters}
    raw = file.federated_hpa
    for i, change in sorted(enumerate(file.changes), key=lambda item: item[1].at):
        path = f"changes[{i}]"
        if change.at >= file.duration:
            problems.append(f"{path}.at: after the end of the run ({file.duration:g}s)")
        given = [change.federated_hpa, change.annotations, change.cluster]
        if sum(x is not None for x in given) != 1:
            problems.append(
                f"{path}: give one of federatedHPA (a merge patch of its spec), annotations "
                "(of the FederatedHPA; null removes one), or cluster"
            )
            continue
        if change.annotations is not None:
            raw = {
                **raw,
                "metadata": merge_patch(raw.get("metadata") or {}, {"annotations": change.annotations}),
            }
            found_meta: list[str] = []
            _admit(raw, "", found_meta)
            problems += [f"{path}.annotations: {p}" for p in found_meta]
            continue
        if change.cluster is not None:
            if change.cluster not in names:
                problems.append(f"{path}.cluster: no cluster {change.cluster!r} in this scenario")
            if change.labels is None:
                problems.append(f"{path}.labels: required with cluster (the labels to set; null removes one)")
            continue
        if change.labels is not None:
            problems.append(f"{path}.labels: only with cluster")
        assert change.federated_hpa is not None
        raw = patched_object(raw, change.federated_hpa)
        found: list[str] = []
        _admit(raw, "", found)
        problems += [f"{path}.federatedHPA.{p.removeprefix('.').removeprefix('spec.')}" for p in found]
    return problems


def _check_cron_targets(fhpa: FederatedHPA, crons: list[CronFederatedHPA]) -> list[str]:
    """A cron rule acts on the scenario's FederatedHPA or on its workload; nothing else exists here."""
    problems = []
    workload = fhpa.spec.scale_target_ref
    for i, cron in enumerate(crons):
        ref = cron.spec.scale_target_ref
        if ref.kind == "FederatedHPA" and ref.name != fhpa.metadata.name:
            problems.append(
                f"cronFederatedHPAs[{i}].spec.scaleTargetRef.name: no FederatedHPA {ref.name!r} in this "
                f"scenario (it has {fhpa.metadata.name!r})"
            )
        elif ref.kind != "FederatedHPA" and (ref.kind, ref.name) != (workload.kind, workload.name):
            problems.append(
                f"cronFederatedHPAs[{i}].spec.scaleTargetRef: no workload {ref.kind}/{ref.name} in this "
                f"scenario (it has {workload.kind}/{workload.name})"
            )
    return problems


def _describe(error: Any) -> str:
    """A pydantic error as ``path: message``, with unknown keys named as such."""
    loc = error.get("loc", ())
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    path = path or "(document)"
    if error.get("type") == "extra_forbidden":
        return f"{path}: unknown key (check the spelling; see docs/simulator.md for the format)"
    if error.get("type") == "missing":
        return f"{path}: required"
    message = str(error.get("msg", "invalid"))
    return f"{path}: {message.removeprefix('Value error, ')}"
