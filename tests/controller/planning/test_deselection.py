"""A cluster that leaves the selection while it runs replicas (DESIGN §4, promise 2): its replicas are
handed to the selected clusters, it is drained once they run there, a Warning says so, and its status
row stays until it runs none."""

from __future__ import annotations

from datetime import timedelta

from controller.planning.deselection import DESELECTED
from tests.support.planning_builders import T0, bounds, fhpa, obs, reasons, row, run, settle, update, writes

S = timedelta(seconds=1)


def with_clusters(f, names: list[str], generation: int):
    """``f`` with its clusterAffinity naming ``names``, as the user's edit ``generation`` left it."""
    edited = f.model_copy(deep=True)
    assert edited.spec.cluster_affinity is not None
    edited.spec.cluster_affinity.cluster_names = names
    edited.metadata.generation = generation
    return edited


def leaving_fleet():
    """a, b, c at 10 replicas each, F 3..60; then c's name leaves the clusterAffinity."""
    f = fhpa("StaticWeighted", 3, 60, clusters=["a", "b", "c"], weights={"a": 1, "b": 1, "c": 1})
    f, fleet, _ = settle(f, [obs("a", 10, 40), obs("b", 10, 40), obs("c", 10, 40)])
    return with_clusters(f, ["a", "b"], 2), fleet


def out_of_reach(fleet, name: str = "c"):
    """The fleet with ``name`` unreachable: no counts and no HPA seen."""
    return update(fleet, name, healthy=False, unobserved="timed out", hpa=None)


def test_its_replicas_are_handed_to_the_selected_clusters_with_a_warning() -> None:
    f, fleet = leaving_fleet()
    p = run(f, fleet, T0 + S)
    assert writes(p) == {"a": 15, "b": 15}  # c's 10, split by headroom; c keeps serving until they run
    assert "c" not in bounds(p)
    warning = [e for e in p.events if e.reason == "ClusterDeselected"]
    assert len(warning) == 1 and warning[0].type == "Warning" and "handed to a, b" in warning[0].message
    assert row(p, "c").state == DESELECTED and row(p, "c").drained_at == T0 + S
    assert {a.cluster: a.op for a in p.hpa_actions}.get("c") == "delete"


def test_it_is_drained_once_the_others_run_its_replicas_and_its_row_goes_after() -> None:
    f, fleet = leaving_fleet()
    f, fleet, _ = settle(f, fleet, T0 + S)
    starting = update(update(fleet, "a", ready_replicas=12), "b", ready_replicas=12)
    p = run(f, starting, T0 + 2 * S)
    assert writes(p) == {} and row(p, "c").current_replicas == 10  # not yet: the new pods start
    f, fleet, p = settle(f, fleet, T0 + 2 * S)  # every handed pod Ready
    assert writes(p) == {"c": 0} and "ClusterDeselected" not in reasons(p)
    assert row(p, "c").state == DESELECTED and row(p, "c").current_replicas == 0
    _, _, p = settle(f, fleet, T0 + 3 * S)
    assert "c" not in {r.name for r in p.status.clusters or []}  # done: it runs none


def test_it_is_drained_after_one_optimization_period_even_if_the_others_are_slow() -> None:
    f, fleet = leaving_fleet()
    f, fleet, _ = settle(f, fleet, T0 + S)
    slow = update(update(fleet, "a", ready_replicas=12), "b", ready_replicas=12)
    assert writes(run(f, slow, T0 + 60 * S)) == {}
    assert writes(run(f, slow, T0 + 61 * S)) == {"c": 0}


def test_a_paused_federated_hpa_drains_nothing_and_keeps_the_hpa() -> None:
    f, fleet = leaving_fleet()
    f.metadata.annotations = {"autoscaling.karmada.io/paused": "true"}
    p = run(f, fleet, T0 + S)
    assert writes(p) == {} and "ClusterDeselected" not in reasons(p)
    assert "c" not in {a.cluster for a in p.hpa_actions if a.op == "delete"}


def test_a_blip_while_it_is_drained_keeps_its_row_and_the_drain_finishes() -> None:
    # its member HPA is gone, so only the Deselected row says it still runs replicas to drain: a pass
    # that cannot reach it must not forget that, or nobody drains it when it answers again
    f, fleet = leaving_fleet()
    f, fleet, _ = settle(f, fleet, T0 + S)
    slow = update(update(fleet, "a", ready_replicas=12), "b", ready_replicas=12)
    f, _, p = settle(f, update(slow, "c", healthy=False, unobserved="timed out"), T0 + 30 * S)
    assert row(p, "c").state == DESELECTED
    assert writes(run(f, slow, T0 + 61 * S)) == {"c": 0}


def test_a_cluster_de_selected_while_unreachable_is_drained_when_it_answers() -> None:
    # found by the fleet state machine (seed 73): c was out of reach when its name left the
    # clusterAffinity; its row went with the pass, so when it answered, its member HPA was removed and
    # its replicas ran on with nothing to scale them
    f, fleet = leaving_fleet()
    f, _, p = settle(f, out_of_reach(fleet), T0 + S)
    assert row(p, "c").state == DESELECTED and row(p, "c").drained_at is None
    p = run(f, fleet, T0 + 2 * S)  # it answers: its replicas are handed over, then it is drained
    assert writes(p) == {"a": 15, "b": 15}
    assert row(p, "c").state == DESELECTED and row(p, "c").drained_at == T0 + 2 * S


def test_a_failed_over_cluster_de_selected_while_unreachable_is_drained_when_it_answers() -> None:
    f, fleet = leaving_fleet()
    selected = with_clusters(f, ["a", "b", "c"], 1)  # as it was before the edit
    for seconds in (10, 40, 70, 100):  # failed over past the 60 s grace: its counts are unknown now
        selected, _, p = settle(selected, out_of_reach(fleet), T0 + seconds * S)
    assert row(p, "c").current_replicas is None
    f = f.model_copy(update={"status": selected.status})
    f, _, p = settle(f, out_of_reach(fleet), T0 + 110 * S)
    assert row(p, "c").state == DESELECTED
    assert writes(run(f, fleet, T0 + 120 * S)) == {"a": 15, "b": 15}


def test_a_cluster_never_reached_while_selected_keeps_no_row_when_de_selected() -> None:
    # review: d ran replicas of its own outside the selection; selected and de-selected again while out
    # of reach, it was never the controller's, so nothing of it is drained when it answers
    f = fhpa("StaticWeighted", 3, 60, clusters=["a", "b"], weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 10, 40), obs("b", 10, 40), obs("d", 8, 40)])
    away = out_of_reach(fleet, "d")
    widened, _, _ = settle(with_clusters(f, ["a", "b", "d"], 2), away, T0 + S)
    narrowed, _, p = settle(with_clusters(widened, ["a", "b"], 3), away, T0 + 2 * S)
    assert "d" not in {r.name for r in p.status.clusters or []}
    assert writes(run(narrowed, fleet, T0 + 3 * S)) == {}


def test_a_kept_row_carries_no_share_of_the_bounds() -> None:
    f, fleet = leaving_fleet()
    _, _, p = settle(f, out_of_reach(fleet), T0 + S)
    assert (row(p, "c").min_replicas, row(p, "c").max_replicas) == (None, None)
    assert sum(r.max_replicas or 0 for r in p.status.clusters or []) == 60
