"""Counts of clusters read as English, and the Ready condition says why no cluster holds a member HPA
(issue 15 item 5: "1 clusters", and a fleet where every cluster has a conflicting HPA)."""

from __future__ import annotations

from typing import Any

from controller.finalizer import FINALIZER, clean_up
from controller.planning.observation import MemberHPAObservation
from controller.planning.plan import Plan
from controller.planning.wording import count
from fhpa_api.models import Condition
from tests.controller.test_finalizer import NOW, Member, Plane
from tests.controller.test_finalizer import fhpa as deleting_fhpa
from tests.support.planning_builders import fhpa, obs, run


def foreign() -> MemberHPAObservation:
    return MemberHPAObservation(name="theirs", owned=False, min_replicas=1, max_replicas=5)


def ready(p: Plan) -> Condition:
    return next(c for c in p.status.conditions or [] if c.type == "Ready")


def test_count_is_singular_for_one() -> None:
    assert [count(n, "cluster") for n in (0, 1, 2)] == ["0 clusters", "1 cluster", "2 clusters"]
    assert count(1, "replica", "replicas") == "1 replica"


def test_one_holder_reads_one_cluster() -> None:
    one = ready(run(fhpa("StaticWeighted", 1, 5, weights={"a": 1}), [obs("a", 1)]))
    assert one.status == "True" and one.message == "1 cluster holds a member HPA"
    two = ready(run(fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1}), [obs("a", 1), obs("b", 1)]))
    assert two.message == "2 clusters hold member HPAs"


def test_every_cluster_with_a_conflicting_hpa_is_what_ready_says() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    r = ready(run(f, [obs("a", 2, hpa=foreign()), obs("b", 2, hpa=foreign())]))
    assert r.status == "False" and r.reason == "ConflictingHPA"
    assert r.message is not None
    assert r.message.startswith("every matching cluster (2) has an HPA not owned by this FederatedHPA")
    assert "(a, b)" in r.message and "Remove those HPAs" in r.message
    assert "clusterAffinity" not in r.message  # not an affinity or health problem
    single = ready(run(fhpa("StaticWeighted", 1, 5, weights={"a": 1}), [obs("a", 2, hpa=foreign())]))
    assert single.message is not None and single.message.startswith("the one matching cluster has an HPA")


def test_conflicting_and_unhealthy_clusters_name_the_conflicts() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    r = ready(run(f, [obs("a", 2, hpa=foreign()), obs("b", 0, healthy=False)]))
    assert r.reason == "NoCandidates"
    assert r.message == (
        "no healthy matching cluster without a conflicting HPA (conflicting: a); no member HPA exists"
    )


def test_no_matching_cluster_says_clusteraffinity() -> None:
    r = ready(run(fhpa("Duplicated", 1, 5, clusters=["x"]), [obs("a", 2)]))
    assert r.reason == "NoCandidates" and "matches clusterAffinity" in (r.message or "")


def test_cleanup_of_one_cluster_reads_one_cluster() -> None:
    plane: Any = Plane()
    members: dict[str, Any] = {"m1": Member("m1")}
    clean_up(deleting_fhpa([FINALIZER], deleting_for=1, clusters=("m1",)), members, plane, plane, NOW)
    assert plane.events[-1][1:] == ("CleanedUp", "member HPAs removed from 1 cluster (m1); 1 cluster checked")


def test_the_assigned_event_counts_one_candidate_cluster() -> None:
    p = run(fhpa("StaticWeighted", 1, 5, weights={"a": 1}), [obs("a", 1)])
    assigned = [e.message for e in p.events if e.reason == "Assigned"]
    assert assigned and assigned[0].startswith("StaticWeighted over 1 candidate cluster: ")
