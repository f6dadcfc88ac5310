"""explain tells what status holds: over planner-made statuses (a cluster that flaps, so its grace
grows), every failover figure explain prints is the status field it names, never a default."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from controller.planning.deselection import DESELECTED
from controller.planning.fleet import Fleet, Slot
from controller.planning.observation import CapacityObservation
from controller.planning.status_report import _moved_by
from fhpa.explanation import explain, render
from fhpa_api.models import ClusterStatus, FederatedHPA, SplitStatus
from tests.support.planning_builders import T0, fhpa, obs, run, settle, update

DUE = re.compile(
    r"fails over at (?P<at>\S+) \([^)]*\) if it stays unreachable "
    r"\(its grace (?P<grace>\d+)s(?:, grown by (?P<grown>\d+) failovers? within the hour)?\)"
)

# each step: how many seconds pass, and whether cluster b answers afterwards
steps = st.lists(st.tuples(st.integers(5, 400), st.booleans()), min_size=1, max_size=14)


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(0, 600))
def test_the_failover_figures_explain_prints_are_the_status_fields(
    path: list[tuple[int, bool]], later: int
) -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    fleet = [obs("a", 2), obs("b", 2)]
    now = T0
    for seconds, answers in path:
        now += timedelta(seconds=seconds)
        fleet = update(fleet, "b", healthy=answers)
        p = run(f, fleet, now)
        f = f.model_copy(update={"status": p.status})
        row = next(r for r in p.status.clusters or [] if r.name == "b")
        asked = now + timedelta(seconds=later)
        b = next(c for c in explain(f, [], asked).clusters if c.name == "b")
        note(f"{now} answers={answers} state={b.state} next={b.next} row={row}")
        said = [m for m in (DUE.search(line) for line in b.next) if m]
        if row.failover_at is None:
            assert not said
            continue
        assert b.state == "Unreachable" and len(said) == 1
        said_at, grace, grown = said[0].group("at", "grace", "grown")
        assert said_at == row.failover_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert int(grace) == row.failover_grace_seconds
        assert (int(grown) if grown else 0) == (row.failovers or 0)


def test_explain_says_which_move_last_changed_a_max() -> None:
    """The row records the Event that last moved its max; explain names it rather than guessing."""
    f = fhpa("Prioritized", 2, 40, priorities={"a": 2, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 10, 10), obs("b", 20, 100)])
    f, fleet, _ = settle(f, fleet, T0 + timedelta(seconds=120))
    fleet = update(fleet, "b", hpa_desired=15)
    fleet = update(fleet, "a", available_replicas=18)  # room above for what the drain frees
    fleet = [
        o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": 0.5})}) if o.hpa else o
        for o in fleet
    ]
    now = T0 + timedelta(seconds=240)
    p = run(f, fleet, now)
    row = next(r for r in p.status.clusters or [] if r.name == "b")
    # the freed max goes up by the period optimization; the pin on a (this pass's first Event) moved no max
    assert (row.max_trend, row.max_moved_by) == (-1, "Optimized")
    b = next(c for c in explain(f.model_copy(update={"status": p.status}), [], now).clusters if c.name == "b")
    assert any(line.endswith("(0s ago), by Optimized") for line in b.why), b.why


def test_a_preference_picked_by_labels_is_read_from_status() -> None:
    """A labelSelector preference cannot be resolved from the spec (labels live in the Secret): the row
    records which entry matched, and explain gives the weights instead of a gap."""
    prefs = [
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "big"}}}, "staticWeight": 3},
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "small"}}}, "staticWeight": 1},
    ]
    f = fhpa(
        "StaticWeighted",
        2,
        8,
        federatedHPAAssignment={
            "federatedHPAAssignmentType": "StaticWeighted",
            "clusterAutoscalingPreference": prefs,
        },
    )
    p = run(f, [obs("a", 1, labels={"tier": "big"}), obs("b", 1, labels={"tier": "small"}), obs("c", 1)])
    assert {r.name: r.preference for r in p.status.clusters or []} == {"a": 0, "b": 1, "c": -1}
    e = explain(f.model_copy(update={"status": p.status}), [], T0)
    assert not [g for g in e.not_in_status if "labelSelector" in g]


def _without_last(f: FederatedHPA, names: tuple[str, ...]) -> FederatedHPA:
    """The FederatedHPA with the last cluster's name edited out of its clusterAffinity."""
    edited = f.model_copy(deep=True)
    assert edited.spec.cluster_affinity is not None
    edited.spec.cluster_affinity.cluster_names = list(names[:-1])
    edited.metadata.generation = (f.metadata.generation or 1) + 1
    return edited


def test_explain_describes_a_cluster_that_left_the_selection_while_out_of_reach() -> None:
    """c is out of reach, running 10, when it leaves the clusterAffinity: nothing is handed over yet,
    and explain says what happens when it answers."""
    names = ("a", "b", "c")
    f = fhpa("StaticWeighted", 3, 60, clusters=list(names), weights=dict.fromkeys(names, 1))
    f, fleet, _ = settle(f, [obs(n, 10, 40) for n in names])
    away = [o.model_copy(update={"healthy": False, "hpa": None}) if o.name == "c" else o for o in fleet]
    f, _, _ = settle(_without_last(f, names), away, T0 + timedelta(seconds=1))
    c = next(x for x in explain(f, [], T0 + timedelta(seconds=11)).clusters if x.name == "c")
    assert (c.state, c.max_replicas) == ("Deselected", None)
    assert c.why[1] == (
        "it left while out of reach: when it answers, its member HPA is removed and the 10 replicas it "
        "ran handed to the selected clusters"
    )
    assert c.next == ["drained to zero once the selected clusters run its replicas Ready, after it answers"]


def test_explain_describes_a_cluster_that_left_the_selection_until_it_is_drained() -> None:
    """c leaves the clusterAffinity running 10 replicas: explain says it left, what it still runs and
    when it is drained; once it runs none, that its row goes."""
    names = ("a", "b", "c")
    f = fhpa("StaticWeighted", 3, 60, clusters=list(names), weights=dict.fromkeys(names, 1))
    f, fleet, _ = settle(f, [obs(n, 10, 40) for n in names])
    f = _without_last(f, names)
    f, fleet, _ = settle(f, fleet, T0 + timedelta(seconds=1))
    c = next(x for x in explain(f, [], T0 + timedelta(seconds=11)).clusters if x.name == "c")
    assert (c.state, c.current_replicas, c.max_replicas) == ("Deselected", 10, None)
    assert c.why[0].startswith("left the selection")
    assert "it still runs 10 replicas with nothing to scale them" in c.why[1]
    assert c.next[0].startswith("drained to zero once the selected clusters run the handed replicas")
    assert "in 50s, at 2026-01-01T12:01:01Z at the latest" in c.next[0]
    f, fleet, _ = settle(f, fleet, T0 + timedelta(seconds=2))  # the handed replicas run: c goes to 0
    c = next(x for x in explain(f, [], T0 + timedelta(seconds=3)).clusters if x.name == "c")
    assert (c.state, c.current_replicas) == ("Deselected", 0)
    assert c.why[1].startswith("drained: it runs no replica") and "row goes on the next pass" in c.next[0]


# --- every number explain prints, over random fleets of every policy ----------------------------------

POLICIES = ("Duplicated", "StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized")
NAMES = ("a", "b", "c", "d")
SPLIT = re.compile(
    r"^(?P<policy>\w+): (?P<head>.*?): F\.max (?P<fmax>\d+) (?:divides|fills) to max (?P<max>\d+), "
    r"F\.min (?P<fmin>\d+) to min (?P<min>\d+)(?P<tail>.*)$"
)
HEADER = re.compile(
    r"^(?P<name>[a-d]): (?:no bounds|min (?P<min>\d+)(?: \(HPA min (?P<hpa_min>\d+)\))? max (?P<max>\d+))"
    r"(?:, (?P<current>\d+) replicas(?: \((?P<ready>\d+) ready\))?)?"
    r"(?:, (?P<pending>\d+) pending or refused)?"
    r"  \[(?P<state>\w+)\]$"
)
# numbers that are not figures: times (stamps, spans) and the words that hold a digit
NOT_FIGURES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\b\d+(?:h\d+)?[smh]\b|min >= 1|\bHPA\b")

# one cluster: (current replicas, room: None unknown, else (firm, elastic)), weight or priority
clusters = st.lists(
    st.tuples(
        st.integers(0, 12),
        st.one_of(st.none(), st.tuples(st.integers(0, 15), st.integers(0, 10))),
        st.integers(0, 4),
    ),
    min_size=1,
    max_size=4,
)


def _observation(name: str, current: int, room: tuple[int, int] | None) -> Any:
    if room is None:
        return obs(name, current)
    firm, elastic = room
    source = "declared" if elastic else "allocatable"
    capacity = CapacityObservation(firm=firm, elastic=elastic, source=source)
    return obs(name, current, firm + elastic, capacity=capacity)


def _figures(line: str) -> list[str]:
    return re.findall(r"\d+", NOT_FIGURES.sub(" ", line))


class Checked:
    """The numbers of one line that a check matched to a field, to find any left unchecked."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.seen: list[str] = []

    def equal(self, printed: str | None, field: int | None, what: str) -> None:
        if printed is None:
            return
        assert field is not None and int(printed) == field, f"{what}: printed {printed}, status {field}"
        self.seen.append(printed)

    def rest(self) -> list[str]:
        left = _figures(self.line)
        for n in self.seen:
            if n in left:
                left.remove(n)
        return left


def _check_split(
    check: Checked, f: FederatedHPA, row: ClusterStatus, records: dict[str, SplitStatus]
) -> None:
    m = SPLIT.match(check.line)
    assert m is not None
    split = row.split
    assert split is not None, f"a split line for {row.name} without a split record"
    check.equal(m["fmax"], f.spec.max_replicas, "F.max")
    check.equal(m["fmin"], f.spec.effective_min, "F.min")
    check.equal(m["max"], split.max_share, "split.maxShare")
    check.equal(m["min"], split.min_share, "split.minShare")
    if w := re.search(r"weight (\d+) of (\d+) \(([^;)]*)", m["head"]):
        check.equal(w[1], split.weight, "split.weight")
        check.equal(w[2], sum(r.weight or 0 for r in records.values()), "the sum of split.weight")
        for name, weight in re.findall(r"([a-d]) (\d+)", w[3]):
            check.equal(weight, records[name].weight, f"{name}'s split.weight")
    if p := re.search(r"priority (\d+)", m["head"]):
        check.equal(p[1], split.priority, "split.priority")
    if r := re.search(r"rank (\d+) of (\d+)", m["head"]):
        check.equal(r[1], split.rank, "split.rank")
        check.equal(r[2], len(records), "the count of split records")
    if c := re.search(r"capped at its room (\d+)", m["tail"]):
        check.equal(c[1], split.room, "split.room")
    elif "room unknown" in m["tail"]:
        assert split.room is None
    if e := re.search(r"the excess (\d+)", m["tail"]):
        check.equal(e[1], split.excess, "split.excess")
    else:
        assert not split.excess


def _check_why(check: Checked, f: FederatedHPA, row: ClusterStatus) -> None:
    line = check.line
    share = row.split.max_share if row.split is not None else None
    current, maximum = row.current_replicas, row.max_replicas
    if m := re.match(r"room: (\d+) firm \+ (\d+) elastic", line):
        assert row.capacity is not None
        check.equal(m[1], row.capacity.firm, "capacity.firm")
        check.equal(m[2], row.capacity.elastic or 0, "capacity.elastic")
    elif m := re.match(r"Duplicated: every cluster gets the federated bounds, min (\d+) max (\d+)", line):
        check.equal(m[1], f.spec.effective_min, "F.min")
        check.equal(m[2], f.spec.max_replicas, "F.max")
    elif m := re.match(r"keep what runs: the split's max (\d+) is raised to the (\d+) replicas", line):
        check.equal(m[1], share, "split.maxShare")
        check.equal(m[2], current, "currentReplicas")
    elif m := re.match(r"its max is (\d+) (above|below) the split's (\d+)", line):
        check.equal(m[3], share, "split.maxShare")
        gap = (maximum or 0) - (share or 0)
        check.equal(m[1], gap if m[2] == "above" else -gap, "maxReplicas - split.maxShare")
    elif m := re.match(r"(\d+) of its max is headroom above the (\d+) replicas", line):
        check.equal(m[1], (maximum or 0) - (current or 0), "maxReplicas - currentReplicas")
        check.equal(m[2], current, "currentReplicas")
    elif m := re.match(r"its max equals the (\d+) replicas it runs", line):
        check.equal(m[1], current, "currentReplicas")
        check.equal(m[1], maximum, "maxReplicas")
    elif m := re.search(r"its max is held at (\d+)", line):
        check.equal(m[1], maximum, "maxReplicas")
    elif m := re.search(r"its member HPA's min is (\d+) \(assigned min (\d+)\)", line):
        check.equal(m[1], row.pinned_min_replicas, "pinnedMinReplicas")
        check.equal(m[2], row.min_replicas, "minReplicas")
    elif m := re.match(r"it still runs (\d+) replicas? with nothing to scale them", line):
        check.equal(m[1], current, "currentReplicas")
    elif m := re.match(r"(\d+) pods pend or are refused since .*autoscaleMultiClusterDelay (\d+)s", line):
        check.equal(m[1], row.pending_replicas, "pendingReplicas")
        check.equal(m[2], f.spec.effective_delay_seconds, "autoscaleMultiClusterDelay")


def _check_header(check: Checked, row: ClusterStatus) -> None:
    m = HEADER.match(check.line)
    assert m is not None, check.line
    assert (m["state"] == "Deselected") == (row.state == DESELECTED), check.line
    if m["max"] is None:
        assert row.max_replicas is None, check.line
    check.equal(m["min"], row.min_replicas, "minReplicas")
    check.equal(m["max"], row.max_replicas, "maxReplicas")
    check.equal(m["current"], row.current_replicas, "currentReplicas")
    check.equal(m["ready"], row.ready_replicas, "readyReplicas")
    check.equal(m["pending"], row.pending_replicas, "pendingReplicas")
    if m["hpa_min"] is not None:
        assert row.pinned_min_replicas is not None and row.min_replicas is not None
        pin = min(max(row.pinned_min_replicas, row.min_replicas), row.max_replicas or 0)
        check.equal(m["hpa_min"], pin, "pinnedMinReplicas within the bounds")


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(POLICIES),
    clusters,
    st.integers(1, 6),
    st.integers(0, 24),
    st.integers(0, 3),
    st.integers(0, 2),
)
def test_every_number_explain_prints_is_the_status_field_it_names(
    policy: str,
    fleet: list[tuple[int, tuple[int, int] | None, int]],
    low: int,
    extra: int,
    passes: int,
    after_leaving: int,
) -> None:
    """``after_leaving``: 0 keeps every cluster selected; else the last one leaves the selection (a
    de-selected row while it is drained) and that many passes follow."""
    names = NAMES[: len(fleet)]
    prefs = {n: p + 1 for n, (_, _, p) in zip(names, fleet, strict=True)}
    f = fhpa(
        policy,
        low,
        low + extra,
        clusters=list(names),
        weights=prefs if policy == "StaticWeighted" else None,
        priorities=prefs if policy == "Prioritized" else None,
    )
    observations = [_observation(n, c, room) for n, (c, room, _) in zip(names, fleet, strict=True)]
    now = T0
    for _ in range(passes + 1):
        f, observations, _p = settle(f, observations, now)
        now += timedelta(seconds=70)
    if after_leaving and len(names) > 1:
        f = _without_last(f, names)
        for _ in range(after_leaving):
            f, observations, _p = settle(f, observations, now)
            now += timedelta(seconds=30)
    status = f.status
    assert status is not None
    rows = {r.name: r for r in status.clusters or []}
    records = {n: r.split for n, r in rows.items() if r.split is not None}
    text = render(explain(f, [], now))
    note(text)
    current: ClusterStatus | None = None
    for raw in text.splitlines():
        line = raw.strip()
        check = Checked(line)
        if (head := re.match(r"^([a-d]): ", raw)) is not None:
            current = rows[head[1]]
            _check_header(check, current)
        elif current is not None and raw.startswith(("  why:  ", "  next: ")):
            check = Checked(line[6:].strip())
            if SPLIT.match(check.line) and not check.line.startswith("Duplicated"):
                _check_split(check, f, current, records)
            else:
                _check_why(check, f, current)
        elif m := re.match(r"^(\w+): F\.min (\d+), F\.max (\d+)", line):
            check.equal(m[2], f.spec.effective_min, "F.min")
            check.equal(m[3], f.spec.max_replicas, "F.max")
        elif m := re.match(r"^replicas: (\d+) in the workloads, (\d+) wanted", line):
            check.equal(m[1], status.current_replicas, "status.currentReplicas")
            check.equal(m[2], status.desired_replicas, "status.desiredReplicas")
        elif not raw.startswith("  why:  ") and not raw.startswith("  next: "):
            continue  # conditions' and Events' own messages, quoted as the controller wrote them
        assert not check.rest(), f"unchecked figures {check.rest()} in {check.line!r}"


def test_an_event_that_moves_no_max_is_not_named_as_the_move() -> None:
    """Found by a user-level review: a pass that unpinned onprem ("onprem: ... minReplicas back to 2")
    and, by the spill, moved its max ("unschedulable pods in onprem: ...") recorded the max as moved by
    Unpinned, the Event naming the cluster first."""
    f = fhpa("Prioritized", 2, 40, priorities={"onprem": 2, "cloud": 1})
    slots = {n: Slot(cluster=obs(n, 5, 50), min_replicas=1, max_replicas=20) for n in ("onprem", "cloud")}
    fleet = Fleet(fhpa=f, now=T0, slots=slots)
    fleet.event("Unpinned", "onprem: lower-priority clusters are at their min, minReplicas back to 2")
    fleet.event("ScaledAcrossClusters", "unschedulable pods in onprem: 8 max moved to the other clusters")
    assert _moved_by(fleet, "onprem", None) == "ScaledAcrossClusters"
    fleet.event("DrainedFirst", "onprem: the demand fell; max 20 -> 12")
    assert _moved_by(fleet, "onprem", None) == "DrainedFirst"
