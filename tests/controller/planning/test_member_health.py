"""The member HPA's own conditions reach the cluster's status row, and a blind HPA raises a Warning once."""

from __future__ import annotations

from controller.planning.observation import ClusterObservation
from fhpa.explanation import explain, render
from fhpa_api.models import Condition
from tests.support.planning_builders import T0, fhpa, obs, owned_hpa, row, settle

BLIND = Condition(
    type="ScalingActive",
    status="False",
    reason="FailedGetExternalMetric",
    message="the HPA was unable to compute the replica count: unable to get external metric queue_depth",
)


def blind(o: ClusterObservation) -> ClusterObservation:
    """``o`` with its member HPA unable to read its metrics (a broken metrics adapter)."""
    assert o.hpa is not None
    conditions = [c for c in o.hpa.conditions if c.type != "ScalingActive"] + [
        BLIND,
        Condition(type="AbleToScale", status="True", reason="SucceededGetScale", message="ok"),
    ]
    return o.model_copy(update={"hpa": o.hpa.model_copy(update={"conditions": conditions})})


def test_the_rows_carry_the_member_hpa_conditions_and_a_blind_hpa_warns_once() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"m1": 1, "m2": 1})
    f, fleet, _ = settle(f, [obs("m1", 3), obs("m2", 3)])
    f, fleet, first = settle(f, fleet)
    assert [e.reason for e in first.events if e.type == "Warning"] == []
    fleet = [blind(o) if o.name == "m2" else o for o in fleet]
    f, fleet, p = settle(f, fleet, T0)
    warnings = [e for e in p.events if e.reason == "MetricsUnavailable"]
    assert [(e.type, e.message.split(":")[0]) for e in warnings] == [("Warning", "metrics unavailable in m2")]
    assert "FailedGetExternalMetric" in warnings[0].message
    m2 = {c.type: (c.status, c.reason) for c in row(p, "m2").conditions}
    assert m2["MemberScalingActive"] == ("False", "FailedGetExternalMetric")
    assert m2["MemberAbleToScale"] == ("True", "SucceededGetScale")
    assert "MemberScalingActive" not in {c.type for c in row(p, "m1").conditions}
    # still blind on the next pass: the row already says so, no second Warning
    fleet = [blind(o) if o.name == "m2" else o for o in fleet]
    _, _, again = settle(f, fleet, T0)
    assert not [e for e in again.events if e.reason == "MetricsUnavailable"]
    # explain says it in the same words
    text = render(explain(f.model_copy(update={"status": again.status}), [], T0))
    assert "metrics unavailable in m2: its member HPA says FailedGetExternalMetric" in text


def test_a_cluster_without_our_hpa_carries_no_member_conditions() -> None:
    f = fhpa("Duplicated", 1, 4)
    theirs = owned_hpa(f, 1, 4, 1).model_copy(update={"owned": False, "conditions": [BLIND]})
    _, _, p = settle(f, [obs("m1", 1, hpa=theirs)])
    assert not [c for c in row(p, "m1").conditions if c.type.startswith("Member")]
    assert not [e for e in p.events if e.reason == "MetricsUnavailable"]
