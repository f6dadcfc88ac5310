"""A FederatedHPA that needs a member the controller cannot observe is never Ready=True meanwhile, and
its status names the member and why."""

from __future__ import annotations

from datetime import timedelta

from controller.errors import ClusterUnreachableError
from controller.planning.observation import ClusterObservation
from controller.ports import ClusterIdentity
from controller.reconcile import observe_all
from fhpa_api.models import Condition, FederatedHPA
from tests.support.planning_builders import T0, fhpa, obs, row, settle, update

OVER = "member over its budget: over its cap of 500 objects (m2/pods: 501)"


def conditions(f: FederatedHPA) -> dict[str, Condition]:
    assert f.status is not None
    return {c.type: c for c in f.status.conditions or []}


def test_ready_is_unknown_while_a_member_holding_bounds_cannot_be_observed_and_the_reason_is_named() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"m1": 1, "m2": 1})
    f, fleet, _ = settle(f, [obs("m1", 3), obs("m2", 3)])
    f, fleet, _ = settle(f, fleet)
    assert conditions(f)["Ready"].status == "True"
    assert "MembersObserved" not in conditions(f)  # never blind: no condition at all
    blind = update(fleet, "m2", healthy=False, unobserved=OVER)
    f, _, p = settle(f, blind, T0 + timedelta(seconds=5))
    ready, observed = conditions(f)["Ready"], conditions(f)["MembersObserved"]
    assert (ready.status, ready.reason) == ("Unknown", "MemberUnobserved")
    assert "cannot observe m2" in (ready.message or "")
    assert (observed.status, observed.reason) == ("False", "MemberUnobserved")
    assert f"m2 ({OVER})" in (observed.message or "")
    assert "Stalled" not in conditions(f)  # the controller waits; nothing for the user to fix on the object
    healthy = next(c for c in row(p, "m2").conditions if c.type == "Healthy")
    assert OVER in (healthy.message or "")
    warnings = [e for e in p.events if e.type == "Warning" and e.reason == "Unhealthy"]
    assert len(warnings) == 1 and OVER in warnings[0].message
    # past the grace its share moves to m1: it no longer holds bounds, Ready follows m1, and status
    # still says m2 cannot be observed
    f, _, p = settle(f, blind, T0 + timedelta(seconds=600))
    assert conditions(f)["Ready"].status == "True"
    assert conditions(f)["MembersObserved"].status == "False"
    # observed again: the condition says so rather than vanishing
    f, _, _ = settle(f, fleet, T0 + timedelta(seconds=700))
    assert (conditions(f)["MembersObserved"].status, conditions(f)["MembersObserved"].reason) == (
        "True",
        "AllObserved",
    )


class _Relisting:
    identity = ClusterIdentity(name="m2")

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        raise ClusterUnreachableError("m2", "member cache relisting m2/pods")


def test_the_observation_of_a_member_that_cannot_be_observed_carries_why() -> None:
    (seen,) = observe_all(fhpa("Duplicated", 1, 2), {"m2": _Relisting()})  # type: ignore[dict-item]
    assert not seen.healthy and seen.unobserved == "member cache relisting m2/pods"


def test_a_large_fleet_that_cannot_be_observed_is_named_in_a_bounded_message() -> None:
    names = [f"m{i:02d}" for i in range(12)]
    f = fhpa("StaticWeighted", 12, 24, weights=dict.fromkeys(names, 1))
    f, fleet, _ = settle(f, [obs(n, 1) for n in names])
    blind = [o.model_copy(update={"healthy": False, "unobserved": "x" * 300}) for o in fleet]
    f, _, _ = settle(f, blind, T0 + timedelta(seconds=5))
    observed, ready = conditions(f)["MembersObserved"], conditions(f)["Ready"]
    assert (observed.message or "").count("m0") + (observed.message or "").count("m1") == 10
    assert (observed.message or "").endswith("; and 2 more")
    assert "x" * 257 not in (observed.message or "")  # each reason cut
    assert ready.status != "True"
