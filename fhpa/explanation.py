"""Why each member cluster of a FederatedHPA has its bounds, in words: the pure half of `fhpa explain`.

Input: the FederatedHPA as stored (spec and status) and the Events recorded on it; output: an
``Explanation`` (``to_dict`` for ``-o json``, ``render`` for people). No API call is made here, and
nothing is read but those two, so the command needs no access to a member cluster or its Secret.

What status carries and what it does not (each sentence says which kind it is):
- per cluster: the assigned min/max, the member HPA's min when pinned, current/ready/pending replicas,
  state (Saturated, FailedOver), since when pods pend, unhealthy since, failovers within the hour, when
  its max last moved and which way, when it was drained, its room (firm and elastic, where from, why
  full or growing), what the last assignment's split read and gave it (room, weight or priority, rank,
  capped shares, excess: the split is printed from that record, never recomputed), and the conditions
  Assigned/Healthy/TargetFound whose messages the controller wrote for this purpose;
- from the spec: the policy, F.min/F.max, the preferences (weights, priorities) for clusters named in
  ``clusterNames``, used only for a status without the split's record. A preference that selects by
  labels or fields cannot be resolved from the spec (a cluster's labels live in its Secret), nor can
  the controller's flags (optimization period): the text says so and uses the flags' defaults, marked
  as such.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.outcome import MEMBER_HPA_CONDITION
from controller.planning.affinity import affinity_matches
from controller.planning.deselection import DESELECTED
from controller.planning.fleet import FAILED_OVER, SATURATED
from controller.planning.member_health import row_lines
from controller.planning.observation import ClusterObservation
from controller.planning.policies import policy_of
from controller.planning.policies.base import UNKNOWN
from controller.planning.wording import count
from fhpa.room_words import room_line
from fhpa.split_words import split_line
from fhpa_api.models import ClusterAutoscalingPreference, ClusterStatus, Condition, FederatedHPA
from fhpa_api.pause import PAUSED_ANNOTATION, is_paused

DEFAULT_FAILOVER_GRACE = timedelta(seconds=60)  # `fhpa controller run --failover-grace`
DEFAULT_OPTIMIZATION_PERIOD = timedelta(seconds=60)  # `--optimization-period`
EVENTS_PER_CLUSTER = 5
_CLUSTER_PREFIX = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?): ")


@dataclass
class EventLine:
    time: str | None
    type: str
    reason: str
    message: str
    count: int = 1


@dataclass
class ClusterExplanation:
    name: str
    min_replicas: int | None
    max_replicas: int | None
    hpa_min_replicas: int | None  # the member HPA's min when a pin raises it above the assigned min
    current_replicas: int | None
    ready_replicas: int | None
    pending_replicas: int | None
    state: str  # Assigned, Pinned, Saturated, Unreachable, FailedOver, Deselected, ScaledToZero, NoShare, ...
    why: list[str] = field(default_factory=list)
    next: list[str] = field(default_factory=list)
    events: list[EventLine] = field(default_factory=list)


@dataclass
class Explanation:
    namespace: str
    name: str
    policy: str
    min_replicas: int
    max_replicas: int
    summary: list[str]
    clusters: list[ClusterExplanation]
    next: list[str]
    events: list[EventLine]  # Events that name no single cluster
    not_in_status: list[str]

    def to_dict(self) -> dict[str, Any]:
        return _camel(asdict(self))


# --- entry point ------------------------------------------------------------------------------------


def explain(fhpa: FederatedHPA, events: Sequence[Mapping[str, Any]], now: datetime) -> Explanation:
    """The explanation of ``fhpa`` at ``now`` from its status and ``events`` (core/v1 Event dicts)."""
    spec = fhpa.spec
    status = fhpa.status
    rows = list(status.clusters or []) if status is not None else []
    lines = _event_lines(events, fhpa.metadata.uid)
    by_cluster = {row.name: [e for e in lines if _names(e) == row.name][:EVENTS_PER_CLUSTER] for row in rows}
    context = _Context(fhpa, rows, now)
    clusters = [_cluster(context, row, by_cluster[row.name]) for row in rows]
    gaps = context.gaps()
    return Explanation(
        namespace=fhpa.metadata.namespace or "default",
        name=fhpa.metadata.name or "",
        policy=spec.assignment_type,
        min_replicas=spec.effective_min,
        max_replicas=spec.max_replicas,
        summary=_summary(fhpa, now),
        clusters=clusters,
        next=_object_next(context),
        events=[e for e in lines if _names(e) not in by_cluster][: EVENTS_PER_CLUSTER * 2],
        not_in_status=gaps,
    )


# --- events -----------------------------------------------------------------------------------------


def _event_lines(events: Sequence[Mapping[str, Any]], uid: str | None) -> list[EventLine]:
    """The Events on this object (this incarnation, when the uid is known), newest first."""
    mine = [e for e in events if uid is None or (e.get("involvedObject") or {}).get("uid") in (None, uid)]
    lines = [
        EventLine(
            time=e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"),
            type=str(e.get("type") or "Normal"),
            reason=str(e.get("reason") or ""),
            message=str(e.get("message") or ""),
            count=int(e.get("count") or 1),
        )
        for e in mine
    ]
    return sorted(lines, key=lambda e: e.time or "", reverse=True)


def _names(event: EventLine) -> str | None:
    """The cluster an Event is about: planner Events name it first ("member1: ...")."""
    match = _CLUSTER_PREFIX.match(event.message)
    return match.group(1) if match else None


# --- the object -------------------------------------------------------------------------------------


def _summary(fhpa: FederatedHPA, now: datetime) -> list[str]:
    spec = fhpa.spec
    status = fhpa.status
    lines = [
        f"{spec.assignment_type}: F.min {spec.effective_min}, F.max {spec.max_replicas}"
        + ("" if spec.effective_scale_assist else "; scaleAssist is false (bounds are set once)")
        + ("; scalingToZero" if spec.effective_scaling_to_zero else "")
        + (
            f"; autoscaleMultiClusterDelay {spec.effective_delay_seconds}s"
            if spec.effective_delay_seconds
            else ""
        )
    ]
    if status is None:
        return [*lines, "no status yet: the controller has not reconciled this object"]
    generation = fhpa.metadata.generation
    if generation is not None and status.observed_generation != generation:
        lines.append(
            f"status is for generation {status.observed_generation}, the spec is at {generation}: "
            "the controller has not acted on the latest change yet"
        )
    for c in status.conditions or []:
        lines.append(f"{c.type}={c.status} ({c.reason}): {c.message}{_since(c, now)}")
    if status.current_replicas is not None:
        lines.append(
            f"replicas: {status.current_replicas} in the workloads, "
            f"{status.desired_replicas} wanted by the member HPAs"
        )
    return lines


def _since(c: Condition, now: datetime) -> str:
    return f", since {_ago(c.last_transition_time, now)}" if c.last_transition_time else ""


def _object_next(context: _Context) -> list[str]:
    spec = context.fhpa.spec
    status = context.fhpa.status
    if is_paused(context.fhpa.metadata.annotations):
        return [
            f"nothing across clusters while paused ({PAUSED_ANNOTATION}): bounds stay as they are until the "
            "annotation is removed; then any change made meanwhile is assigned and a cluster still down "
            "past its grace is failed over"
        ]
    if not spec.effective_scale_assist:
        return ["nothing across clusters: scaleAssist is false, each member HPA scales within its bounds"]
    if not policy_of(context.fhpa).divides_bounds:
        return [f"nothing across clusters: {spec.assignment_type} gives every cluster the federated bounds"]
    last = status.last_optimization_time if status is not None else None
    if last is None:
        return ["the first period optimization runs one period (default 60s) after the assignment"]
    due = last + DEFAULT_OPTIMIZATION_PERIOD
    return [
        f"period optimization: last at {_stamp(last)}; the next is due {_when(due, context.now)} "
        "(with the default --optimization-period 60s): each max becomes current plus its share of the "
        "slack, never below current"
    ]


# --- a cluster --------------------------------------------------------------------------------------


class _Context:
    """What every cluster's explanation reads: the spec's preferences resolved where status allows."""

    def __init__(self, fhpa: FederatedHPA, rows: list[ClusterStatus], now: datetime) -> None:
        self.fhpa = fhpa
        self.rows = rows
        self.now = now
        self._unresolved = False
        self.candidates = [
            r.name for r in rows if _reason(r, "Assigned") in ("Assigned", "NoShare", "Unhealthy")
        ]
        self.splits = {r.name: r.split for r in rows if r.split is not None}

    def preference(self, name: str) -> ClusterAutoscalingPreference | str | None:
        """The cluster's preference entry as status records it; else resolved by name, UNKNOWN when an
        earlier entry selects by labels or fields."""
        recorded = next((r.preference for r in self.rows if r.name == name), None)
        prefs = self.fhpa.spec.preferences
        status = self.fhpa.status
        current = status is not None and status.observed_generation == self.fhpa.metadata.generation
        if recorded is not None and current and recorded < len(prefs):
            return prefs[recorded] if recorded >= 0 else None
        for pref in prefs:
            target = pref.target_cluster
            if target.label_selector is not None or target.field_selector is not None:
                self._unresolved = True
                return UNKNOWN
            if affinity_matches(target, ClusterObservation(name=name)):
                return pref
        return None

    def weights(self) -> dict[str, int] | None:
        """StaticWeighted weights of the candidates, or None when one cannot be resolved."""
        result = {}
        for name in self.candidates:
            pref = self.preference(name)
            if pref == UNKNOWN:
                return None
            result[name] = (pref.static_weight or 0) if isinstance(pref, ClusterAutoscalingPreference) else 0
        return result

    def gaps(self) -> list[str]:
        gaps = [
            "the controller's --failover-grace and --optimization-period (their defaults, 60s, are assumed)",
        ]
        # a controller that records each assignment's split in status leaves no gap here
        if policy_of(self.fhpa).reads_capacity and any(
            r.name not in self.splits for r in self.rows if (r.max_replicas or 0) > 0
        ):
            gaps.append(
                f"the available capacity per cluster that the {self.fhpa.spec.assignment_type} split used"
            )
        if self._unresolved:
            gaps.append(
                "the weight or priority of a cluster picked by a labelSelector/fieldSelector preference"
            )
        return gaps


def _cluster(context: _Context, row: ClusterStatus, events: list[EventLine]) -> ClusterExplanation:
    hpa_min = None  # as the planner's Slot.hpa_min: the pin, within the assigned bounds
    if row.pinned_min_replicas is not None and row.min_replicas is not None and row.max_replicas is not None:
        hpa_min = min(max(row.pinned_min_replicas, row.min_replicas), row.max_replicas)
    result = ClusterExplanation(
        name=row.name,
        min_replicas=row.min_replicas,
        max_replicas=row.max_replicas,
        hpa_min_replicas=hpa_min,
        current_replicas=row.current_replicas,
        ready_replicas=row.ready_replicas,
        pending_replicas=row.pending_replicas,
        state=_state(context, row),
        events=events,
    )
    result.why = _why(context, row, result.state) + _rejoin(row, result.state, events)
    result.why += room_line(row.capacity, context.now)
    result.why += _member_said(row)
    result.next = _next(context, row, result.state)
    return result


def _member_said(row: ClusterStatus) -> list[str]:
    """What the member itself reported: a refused HPA write, a member HPA that is blind or stuck."""
    refused = _condition(row, MEMBER_HPA_CONDITION)
    lines = []
    if refused is not None and refused.status == "False":
        lines.append(f"the member did not take its HPA ({refused.reason}): {refused.message}")
    return lines + row_lines(row.conditions, row.name)


def _condition(row: ClusterStatus, type_: str) -> Condition | None:
    return next((c for c in row.conditions or [] if c.type == type_), None)


def _reason(row: ClusterStatus, type_: str) -> str | None:
    c = _condition(row, type_)
    return c.reason if c is not None else None


def _state(context: _Context, row: ClusterStatus) -> str:
    assigned = _reason(row, "Assigned")
    if row.state == FAILED_OVER or assigned == "FailedOver":
        return "FailedOver"
    if row.state == DESELECTED:
        return "Deselected"
    if assigned in ("NotSelected", "ConflictingHPA", "NoShare") or assigned is None:
        return assigned or "Unknown"
    if assigned == "Unhealthy":
        return "Unreachable"
    if row.state == SATURATED:
        return "Saturated"
    if row.pinned_min_replicas is not None and row.assist_held_until is not None:
        return "Held"
    if row.pinned_min_replicas is not None:
        return "Pinned"
    if (
        row.current_replicas == 0
        and (row.max_replicas or 0) > 0
        and context.fhpa.spec.effective_scaling_to_zero
    ):
        # the planner dates every replica write it makes: none means it never started this cluster
        return "ScaledToZero" if row.last_scale_time is not None else "NotStarted"
    return "Assigned"


def _why(context: _Context, row: ClusterStatus, state: str) -> list[str]:
    assigned = _condition(row, "Assigned")
    if state in ("NotSelected", "ConflictingHPA", "Unknown"):
        return [assigned.message or state] if assigned is not None and assigned.message else [state]
    if state == "Deselected":
        return _left_selection(row, context.now)
    lines = [*_arithmetic(context, row)]
    lines += _keep_what_runs(context, row)
    lines += _special(context, row, state)
    target = _condition(row, "TargetFound")
    if target is not None and target.status == "False":
        lines.append(target.message or "the scale target does not exist in this cluster")
    lines += _history(row, context.now)
    return lines


def _rejoin(row: ClusterStatus, state: str, events: list[EventLine]) -> list[str]:
    """A cluster back from a failover: when, and that a new failover waits longer (from its Events)."""
    if state in ("FailedOver", "Unreachable"):
        return []
    rejoined = next((e for e in events if e.reason == "Rejoined"), None)
    if rejoined is None:
        return []
    flaps = (
        f"; {row.failovers} failover{'s' if (row.failovers or 0) > 1 else ''} within the hour, so it is "
        "failed over again only after a longer grace"
        if (row.failovers or 0) > 0
        else ""
    )
    return [f"rejoined at {rejoined.time or 'an unknown time'} after a failover, keeping what it ran{flaps}"]


def _arithmetic(context: _Context, row: ClusterStatus) -> list[str]:
    """The policy's split as the assignment recorded it; for a status without that record, in numbers
    where the spec allows."""
    if row.name in context.splits:
        return [split_line(context.fhpa, row.name, context.splits)]
    return policy_of(context.fhpa).explain_split(context.fhpa, context, row.name, row.max_replicas)


def _split_max(context: _Context, row: ClusterStatus) -> int | None:
    """The max the split gave the cluster: as recorded, else from the spec where it alone decides."""
    if row.split is not None:
        return row.split.max_share
    return policy_of(context.fhpa).split_max_from_spec(context.fhpa, context, row.name)


def _keep_what_runs(context: _Context, row: ClusterStatus) -> list[str]:
    """Where the max stands against the split and against what the cluster runs."""
    if not policy_of(context.fhpa).divides_bounds:
        return []
    current, maximum = row.current_replicas, row.max_replicas
    if current is None or maximum is None or maximum <= 0:
        return []
    share = _split_max(context, row)
    if share is not None and maximum != share:
        if maximum == current and maximum > share:
            return [
                f"keep what runs: the split's max {share} is raised to the {current} replicas it runs, "
                "taken from clusters with room"
            ]
        if maximum > share:
            return [
                f"its max is {maximum - share} above the split's {share}: "
                "unused max moved here since (see its Events)"
            ]
        return [
            f"its max is {share - maximum} below the split's {share}: "
            "given to clusters that run more or need it (see the Events)"
        ]
    if maximum > current:
        return [f"{maximum - current} of its max is headroom above the {current} replicas it runs"]
    return [f"its max equals the {current} replicas it runs: its member HPA cannot scale it further up here"]


def _special(context: _Context, row: ClusterStatus, state: str) -> list[str]:
    now = context.now
    if state == "FailedOver":
        flaps = (
            f"; failover {row.failovers} within the hour, so its grace grows"
            if (row.failovers or 0) > 1
            else ""
        )
        when = f" at {_stamp(row.last_failover_time)}" if row.last_failover_time else ""
        return [
            f"failed over{when}: unhealthy since {_stamp(row.unhealthy_since)}, past the grace period; its "
            f"share went to the other clusters{flaps}"
        ]
    if state == "Unreachable" and is_paused(context.fhpa.metadata.annotations):
        return [
            f"unreachable since {_stamp(row.unhealthy_since)} ({_ago(row.unhealthy_since, now)}): its "
            "bounds are frozen while the FederatedHPA is paused, so it is not failed over and its share "
            "stays here"
        ]
    if state == "Unreachable":
        return [
            f"unreachable since {_stamp(row.unhealthy_since)} ({_ago(row.unhealthy_since, now)}): "
            "it keeps its bounds during the failover grace"
        ]
    if state == "Saturated":
        pending = f" since {_stamp(row.pending_since)}" if row.pending_since else ""
        return [
            f"saturated: pods could not be placed here{pending} (pending, or refused by a quota), so its "
            f"max is held at {row.max_replicas}: what runs here and what no other cluster had room for; "
            "the rest of its share moved to clusters with room"
        ]
    if state == "Held":
        return [
            f"held: its member HPA's min is {row.pinned_min_replicas} (assigned min {row.min_replicas}): "
            "burst assist started these replicas, and the HPA, whose scale-down window never asked for "
            "them, would take them away"
        ]
    if state == "Pinned":
        return [
            f"pinned: its member HPA's min is {row.pinned_min_replicas} (assigned min {row.min_replicas}) "
            "while lower-priority clusters scale down first, so the two never fight over its replicas"
        ]
    if state == "ScaledToZero":
        return [
            f"scaled to zero at {_stamp(row.last_scale_time)}: its member HPA sits idle over 0 replicas (a "
            "native HPA never scales from 0)"
        ]
    if state == "NotStarted":
        return [
            "not started: the running clusters hold minReplicas without it, so it was left at 0 under its "
            "member HPA (a native HPA never scales from 0)"
        ]
    if state == "NoShare":
        return ["the policy gives it no replicas: it has no member HPA"]
    return []


def _left_selection(row: ClusterStatus, now: datetime) -> list[str]:
    """A cluster that left the selection while it ran replicas: its HPA is gone with its share, and the
    replicas it still runs were handed to the selected clusters (DESIGN §4 promise 2)."""
    running = row.current_replicas or 0
    lines = [
        "left the selection (it no longer matches the clusterAffinity): its member HPA was removed with "
        "its share of the bounds, and the split now runs over the clusters still selected"
    ]
    if row.drained_at is None:
        ran = f"the {count(running, 'replica')} it ran" if running else "what it runs"
        lines.append(
            f"it left while out of reach: when it answers, its member HPA is removed and {ran} "
            "handed to the selected clusters"
        )
    elif running > 0:
        lines.append(
            f"it still runs {count(running, 'replica')} with nothing to scale them; they were handed to the "
            f"selected clusters at {_stamp(row.drained_at)} ({_ago(row.drained_at, now)})"
        )
    else:
        lines.append(f"drained: it runs no replica (handed over at {_stamp(row.drained_at)})")
    return lines


def _relative(t: datetime, now: datetime) -> str:
    """How far ``t`` is from now, either way."""
    return f"in {_span(t - now)}" if t > now else f"due {_span(now - t)} ago"


def _grown(row: ClusterStatus) -> str:
    """Why the grace is what it is, when flaps grew it."""
    return f", grown by {count(row.failovers or 0, 'failover')} within the hour" if row.failovers else ""


def _history(row: ClusterStatus, now: datetime) -> list[str]:
    lines = []
    if row.max_trend and row.max_trend_time:
        way = "up" if row.max_trend > 0 else "down"
        by = f", by {row.max_moved_by}" if row.max_moved_by else ""
        lines.append(
            f"its max last moved {way} at {_stamp(row.max_trend_time)} ({_ago(row.max_trend_time, now)}){by}"
        )
    if row.drained_at:
        lines.append(f"drained at {_stamp(row.drained_at)}: its max was lowered below what it ran")
    return lines


def _next(context: _Context, row: ClusterStatus, state: str) -> list[str]:
    spec = context.fhpa.spec
    now = context.now
    delay = timedelta(seconds=spec.effective_delay_seconds)
    if state == "Unreachable" and is_paused(context.fhpa.metadata.annotations):
        return ["fails over on the first pass after the resume if it is still unreachable past its grace"]
    if state == "Unreachable" and row.failover_at is not None:
        return [
            f"fails over at {_stamp(row.failover_at)} ({_relative(row.failover_at, now)}) if it stays "
            f"unreachable (its grace "
            f"{row.failover_grace_seconds}s{_grown(row)}); answering before then it just carries on"
        ]
    if state == "Unreachable" and row.unhealthy_since:  # a status written before the grace was recorded
        due = row.unhealthy_since + DEFAULT_FAILOVER_GRACE
        return [
            f"fails over {_when(due, now)} if it stays unreachable (default grace 60s, longer after recent "
            "flaps); answering before then it just carries on"
        ]
    if state == "FailedOver":
        return [
            "rejoins at once when its API server answers again, keeping what it runs (the others give way)"
        ]
    if state == "Held":
        return [f"the hold ends at {_stamp(row.assist_held_until)}, back to the assigned min"]
    if state == "Pinned" and row.take_back_held_until is not None:
        return [
            f"the take-back's pin holds until its end {_when(row.take_back_held_until, now)} (the "
            "lower-priority clusters' scale-down window, for them to shed what it took), then is released, "
            "back to the assigned min, once no lower-priority cluster sheds any more"
        ]
    if state == "Pinned":
        return [
            "the pin is released, back to the assigned min, once every lower-priority cluster is at its min"
        ]
    if state in ("ScaledToZero", "NotStarted"):
        return [
            "wakes"
            + policy_of(context.fhpa).zero_wake_note
            + " when a running cluster's HPA is at its max and wants more, when pods pend "
            f"elsewhere for {spec.effective_delay_seconds}s, or when the running clusters cannot hold F.min"
        ]
    if state == "Saturated":  # its max was held already: the pending line's promise is spent
        return [
            "what it cannot run starts in clusters with room (burst assist); max that no cluster has room "
            "for stays here until room appears; it takes shares again once its pods are placed"
        ]
    if state == "ConflictingHPA":
        return ["takes part once the HPA it does not own is removed"]
    if state == "Deselected":
        return _drain_next(row, now)
    if (row.pending_replicas or 0) > 0 and row.pending_since and spec.effective_scale_assist:
        due = row.pending_since + delay
        return [
            f"{row.pending_replicas} pods pend or are refused since {_stamp(row.pending_since)}; "
            "if they still do "
            f"{_when(due, now)} (autoscaleMultiClusterDelay {spec.effective_delay_seconds}s) "
            "its max is held at its ready replicas and the rest moves to other clusters"
        ]
    return []


def _drain_next(row: ClusterStatus, now: datetime) -> list[str]:
    """When a de-selected cluster is drained, and that its row goes once it runs none."""
    if row.drained_at is None:
        return ["drained to zero once the selected clusters run its replicas Ready, after it answers"]
    if not row.current_replicas:
        return ["its status row goes on the next pass; it takes part again only if it is selected again"]
    last = ""
    if row.drained_at is not None:
        due = _when(row.drained_at + DEFAULT_OPTIMIZATION_PERIOD, now)
        last = f", {due} at the latest (one period, with the default --optimization-period 60s)"
    return [
        "drained to zero once the selected clusters run the handed replicas Ready"
        + last
        + "; its status row stays until it runs none"
    ]


# --- words for times --------------------------------------------------------------------------------


def _stamp(t: datetime | None) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if t is not None else "an unknown time"


def _ago(t: datetime | None, now: datetime) -> str:
    if t is None:
        return "an unknown time ago"
    return f"{_span(now - t)} ago"


def _when(t: datetime, now: datetime) -> str:
    if t <= now:
        return f"now (due since {_span(now - t)})"
    return f"in {_span(t - now)}, at {_stamp(t)}"


def _span(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


# --- text -------------------------------------------------------------------------------------------


def render(explanation: Explanation) -> str:
    """The explanation for a terminal: the object, then each cluster with why, next and its Events."""
    e = explanation
    out = [f"FederatedHPA {e.namespace}/{e.name}", *(f"  {line}" for line in e.summary), ""]
    for c in e.clusters:
        out.append(f"{c.name}: {_bounds(c)}  [{c.state}]")
        out += [f"  why:  {line}" for line in c.why]
        out += [f"  next: {line}" for line in c.next]
        out += [f"  {_event_text(ev)}" for ev in c.events]
        out.append("")
    if e.next:
        out += ["Next:", *(f"  {line}" for line in e.next), ""]
    if e.events:
        out += ["Events:", *(f"  {_event_text(ev)}" for ev in e.events), ""]
    out.append("Not in status (assumed or unknown): " + "; ".join(e.not_in_status))
    return "\n".join(out)


def _bounds(c: ClusterExplanation) -> str:
    if c.max_replicas is None:
        return "no bounds" + _counts(c)
    low = f"min {c.min_replicas}" + (
        f" (HPA min {c.hpa_min_replicas})" if c.hpa_min_replicas is not None else ""
    )
    return f"{low} max {c.max_replicas}{_counts(c)}"


def _counts(c: ClusterExplanation) -> str:
    """The workload's replicas as status has them: its count (which holds pods a quota refused and pods
    still starting or pending, so it is not what runs), how many are ready where fewer, and those that
    wait for a node or that its quota refused."""
    if c.current_replicas is None:
        return ""
    ready = c.ready_replicas
    out = f", {c.current_replicas} replicas"
    if ready is not None and ready != c.current_replicas:
        out += f" ({ready} ready)"
    if c.pending_replicas:
        out += f", {c.pending_replicas} pending or refused"
    return out


def _event_text(ev: EventLine) -> str:
    count = f" (x{ev.count})" if ev.count > 1 else ""
    return f"{ev.time or '-'} {ev.type} {ev.reason}: {ev.message}{count}"


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel_key(k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)
