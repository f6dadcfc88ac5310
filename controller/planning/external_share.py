"""Per-member targets for metrics that every member reads whole: External and Object AverageValue.

A native HPA with an ``AverageValue`` target on an External or Object metric wants
ceil(value / averageValue) replicas from the metric alone, however many clusters share the work. Copied
into N member HPAs, every member wants the whole fleet's count and the fleet runs up to N times what one
HPA would (issue 16). So each member gets the target divided by its share of the metric,
averageValue_i = averageValue / share_i, and the members' wants add up to one HPA's (within rounding).
``Value`` targets (each member scales its own replicas by the same ratio) and Resource and Pods metrics
(measured per pod, in the member) are copied unchanged.

The share follows the policy, over the clusters that hold a member HPA and run the workload:
StaticWeighted by staticWeight, DynamicWeighted and Aggregated by available, Duplicated equally, each
capped at the cluster's part of what the holders can run (min(max, available)), the excess going to the
others; Prioritized by the replicas each cluster runs, so the preferred cluster keeps taking the queue
first (the controller's spills and drains move replicas, and the shares follow). A cluster at 0
replicas or without the workload takes no share: its HPA does not scale, so a share there would be a
part of the queue nobody serves. Nor does a cluster unreachable past the blip tolerance: its share is
lent to the others until it answers.

Shares are counted in thousandths of the fleet (``SHARE_UNITS``) and always sum to exactly 1000, so the
targets are exact integers of milli-units (never floats). They are written only when they matter, so
member HPAs do not churn: at once when the set of clusters sharing changes (an HPA created or deleted, a
cluster woken or sent to zero); otherwise on review (the period optimization, or a pass that writes
replicas or moves a max) and only when some share moved by more than the member HPAs' tolerance of
what was last written (and by more than ``SHARE_THRESHOLD_UNITS``). The last written share lives in
the FederatedHPA's status row (``metricShare``), so the decision is a pure function of the object, the
observations and the clock.

The annotation ``autoscaling.karmada.io/per-cluster-metrics: "true"`` opts out: the metrics are already
per cluster (a cluster-local queue) and are copied unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from controller.planning.divide import divide
from controller.planning.observation import ClusterObservation
from controller.planning.policies import policy_of
from controller.planning.tolerance import DEFAULT as DEFAULT_TOLERANCE
from controller.planning.tolerance import tolerance_of
from fhpa_api.models import FederatedHPA, MemberMetricTarget, Quantity
from fhpa_api.quantity import QuantityError, parse_quantity

ANNOTATION_PER_CLUSTER_METRICS = "autoscaling.karmada.io/per-cluster-metrics"
"""Set to "true" on a FederatedHPA: its External/Object metrics are per cluster; copy targets unchanged."""
SHARE_UNITS = 1000
"""A share is counted in thousandths of the fleet: written as a milli quantity, "250m" is a quarter."""
SHARE_FLOOR = 1
"""A cluster with no share is written the target of a 1/1000 share: it asks for next to nothing."""
SHARE_THRESHOLD_UNITS = 20
"""On review, the shares are rewritten only when one moved by more than the member HPAs' tolerance
(10% of its last written value unless behavior sets it: a smaller move would hardly change what a
member wants, :mod:`controller.planning.tolerance`) and by more
than 20 thousandths of the fleet (so a cluster holding a sliver does not rewrite every HPA each period
as the others grow). Stale shares still sum to the whole: a member may take a little more or less of
the queue than its policy says, the fleet never more or less than one HPA would."""
SHARED_SOURCES = {"External": "external", "Object": "object"}
"""The metric types whose value is the same whole number wherever it is read."""


@dataclass(frozen=True)
class Holder:
    """A cluster that holds a member HPA in this pass, as the share decision needs it."""

    cluster: ClusterObservation
    current: int  # the workload's replicas after this pass's writes (held: as last known)
    max_replicas: int
    lent: bool = False  # unreachable past the blip tolerance: its part of the queue goes to the others

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def room(self) -> int:
        """The replicas it can run: its max, and no more than it can hold when that is known."""
        available = self.cluster.available_replicas
        return self.max_replicas if available is None else max(0, min(self.max_replicas, available))


@dataclass(frozen=True)
class ShareDecision:
    """The shares the member HPAs carry after this pass (empty: targets copied unchanged)."""

    shares: dict[str, int]
    previous: dict[str, int]

    @property
    def changed(self) -> bool:
        return bool(self.shares) and self.shares != self.previous

    def message(self) -> str:
        parts = ", ".join(
            f"{name} {format_share(share)}" + _was(self.previous.get(name), share)
            for name, share in sorted(self.shares.items())
        )
        return f"External/Object AverageValue targets divided by each cluster's share of the metric: {parts}"


def _was(before: int | None, now: int) -> str:
    return "" if before is None or before == now else f" (was {format_share(before)})"


# --- which metrics, and the opt-out ------------------------------------------------------------------


def opted_out(fhpa: FederatedHPA) -> bool:
    annotations = fhpa.metadata.annotations or {}
    return annotations.get(ANNOTATION_PER_CLUSTER_METRICS, "").strip().lower() == "true"


def _shared_target(metric: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The target of an External or Object metric with an AverageValue target, else None."""
    source = metric.get(SHARED_SOURCES.get(str(metric.get("type") or ""), ""))
    target = source.get("target") if isinstance(source, Mapping) else None
    if not isinstance(target, Mapping) or target.get("type") != "AverageValue":
        return None
    return target if target.get("averageValue") is not None else None


def applies(fhpa: FederatedHPA) -> bool:
    """Does this FederatedHPA have a metric to share, and no opt-out?"""
    if opted_out(fhpa):
        return False
    return any(_shared_target(m.to_json()) is not None for m in fhpa.spec.metrics or [])


# --- the arithmetic ----------------------------------------------------------------------------------


def milli_value(value: Quantity) -> int:
    """A quantity in milli-units, rounded up as Kubernetes' MilliValue() does (what the HPA reads)."""
    return int((parse_quantity(value) * 1000).to_integral_value(rounding=ROUND_CEILING))


def format_milli(milli: int) -> str:
    """A canonical quantity: whole units without a suffix, else milli-units ("1500m")."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_share(share: int) -> str:
    return format_milli(share * 1000 // SHARE_UNITS)


def parse_share(value: Quantity | None) -> int | None:
    """A recorded share back in thousandths; None when absent or unreadable (then it is decided anew)."""
    if value is None:
        return None
    try:
        share = parse_quantity(value) * SHARE_UNITS
    except QuantityError:
        return None
    if share != share.to_integral_value() or not 0 <= share <= SHARE_UNITS:
        return None
    return int(share)


def member_value(average_value: Quantity, share: int) -> str:
    """averageValue / share, exactly, rounded half up to a milli-unit, at least 1m.

    ``share`` is in thousandths; a share of 0 counts as ``SHARE_FLOOR`` (the target stays finite and the
    member asks for next to nothing: its min holds it)."""
    whole = milli_value(average_value) * SHARE_UNITS
    parts = max(share, SHARE_FLOOR)
    return format_milli(max(1, (2 * whole + parts) // (2 * parts)))


def member_metrics(metrics: Sequence[Mapping[str, Any]], share: int | None) -> list[dict[str, Any]]:
    """The metrics as one member HPA gets them: shared targets divided by ``share`` (None: unchanged)."""
    out = []
    for metric in metrics:
        body = copy.deepcopy(dict(metric))
        target = _shared_target(body)
        if share is not None and target is not None:
            try:
                divided = member_value(target["averageValue"], share)
            except QuantityError:  # admission refuses it; a pass must still plan: copied as written
                divided = target["averageValue"]
            source = body[SHARED_SOURCES[body["type"]]]
            source["target"] = {**target, "averageValue": divided}
        out.append(body)
    return out


def member_targets(fhpa: FederatedHPA, share: int | None) -> list[MemberMetricTarget] | None:
    """The shared targets one member holds, for its FederatedHPA status row; None when nothing is shared."""
    if share is None:
        return None
    targets = []
    for metric in member_metrics([m.to_json() for m in fhpa.spec.metrics or []], share):
        target = _shared_target(metric)
        if target is not None:
            named = metric[SHARED_SOURCES[metric["type"]]].get("metric") or {}
            targets.append(
                MemberMetricTarget(
                    type=metric["type"],
                    name=str(named.get("name") or ""),
                    average_value=target["averageValue"],
                )
            )
    return targets or None


# --- the shares ----------------------------------------------------------------------------------------


def weight(fhpa: FederatedHPA, holder: Holder) -> int:
    """The policy's weight for a cluster's share; 0 when it runs nothing (or lacks the workload).

    What a cluster runs counts up to its max: a max lowered under it in this pass (a drain) brings its
    replicas down to it at the HPA's next sync, and a share for the replicas it had would leave its HPA
    pressing against the new max for load it no longer takes.

    A cluster held unreachable past the blip tolerance lends its share, as it lends its unused max
    (``optimization.lend_held_slack``): its consumers have likely stopped, and a queue-driven HPA never
    presses for more while its share of the queue stays where nobody serves it. It takes it back at
    once when it answers (a change in who shares rewrites every share)."""
    runs = min(holder.current, holder.max_replicas)
    if runs <= 0 or holder.lent or not holder.cluster.workload_found:
        return 0
    return policy_of(fhpa).share_weight(fhpa, holder.cluster, runs)


def split_shares(weights: Mapping[str, int], rooms: Mapping[str, int] | None) -> dict[str, int]:
    """Share ``SHARE_UNITS`` by ``weights``, each cluster capped at its part of the rooms.

    The caps are ``divide(SHARE_UNITS, rooms)``: a cluster is never asked for more of the queue than its
    part of what the holders can run, so while the fleet can run what the metric asks for, no member is
    asked for more than it can run. A share above its cap is cut to it and the excess shared again among
    the others by weight (water-filling). ``rooms`` None: no caps. Clusters of weight 0 get 0, unless
    every weight is 0 (nobody runs yet): then the shares follow the rooms. What no cap holds (the
    clusters that run are all at their caps) goes to them by cap: they press for more and the
    controller wakes the others. The shares always sum to exactly ``SHARE_UNITS``.
    """
    if not weights:
        return {}
    caps = divide(SHARE_UNITS, dict(rooms)) if rooms is not None else None
    active = {n: w for n, w in weights.items() if w > 0}
    if not active:
        active = dict(caps) if caps is not None else dict.fromkeys(weights, 1)
        active = {n: w for n, w in active.items() if w > 0} or dict.fromkeys(weights, 1)
    shares = dict.fromkeys(weights, 0)
    left, open_ = SHARE_UNITS, dict(active)
    while open_ and left > 0:
        trial = divide(left, open_)
        over = [n for n in sorted(open_) if caps is not None and trial[n] > caps[n]]
        if not over:
            for name, part in trial.items():
                shares[name] += part
            left = 0
            break
        for name in over:
            shares[name] = caps[name] if caps is not None else 0
            left -= shares[name]
            del open_[name]
    if left > 0:
        extra = divide(left, {n: caps[n] if caps is not None else 1 for n in active})
        for name, part in extra.items():
            shares[name] += part
    return shares


def fresh_shares(fhpa: FederatedHPA, holders: Sequence[Holder]) -> dict[str, int]:
    """The shares the policy gives the holders now, capped by their rooms where the policy says so
    (Prioritized follows what runs, uncapped: the controller's spill raises the next cluster)."""
    weights = {h.name: weight(fhpa, h) for h in holders}
    if not policy_of(fhpa).shares_capped_by_room:
        return split_shares(weights, None)
    return split_shares(weights, {h.name: h.room for h in holders})


def moved(before: int, after: int, tolerance: Decimal = DEFAULT_TOLERANCE) -> bool:
    """Did a share move past the threshold (relative to its last written value, and absolute)?

    The relative part is the member HPAs' tolerance (the narrower side): a smaller move would hardly
    change what a member wants."""
    change = abs(after - before)
    return change > tolerance * before and change > SHARE_THRESHOLD_UNITS


def decide(
    fhpa: FederatedHPA,
    holders: Sequence[Holder],
    recorded: Mapping[str, int | None],
    review: bool,
) -> ShareDecision:
    """The shares the member HPAs carry after this pass.

    ``recorded``: the shares last written, by cluster (status ``metricShare``). ``review``: this pass
    runs the period optimization, writes replicas or moves a max (then a share that moved past the threshold
    rewrites them all, so they keep summing to the whole). A change in who shares (a cluster added or
    removed, or starting or stopping to run) rewrites them at once. Otherwise the recorded shares
    stand. All the shares are rewritten together, never one alone: they sum to exactly the whole.
    """
    previous = {n: s for n, s in recorded.items() if s is not None}
    if not holders or not applies(fhpa):
        return ShareDecision({}, previous)
    fresh = fresh_shares(fhpa, holders)
    if set(previous) != set(fresh):
        return ShareDecision(fresh, previous)
    if any((fresh[n] == 0) != (previous[n] == 0) for n in fresh):
        return ShareDecision(fresh, previous)
    narrowest = tolerance_of(fhpa).narrowest
    if review and any(moved(previous[n], fresh[n], narrowest) for n in fresh):
        return ShareDecision(fresh, previous)
    return ShareDecision(dict(previous), previous)
