"""ClusterAffinity matching and preference lookup."""

from __future__ import annotations

from controller.planning.affinity import affinity_matches, preference_for, priority, static_weight
from controller.planning.observation import ClusterObservation
from fhpa_api.models import ClusterAffinity, ClusterAutoscalingPreference

EU = ClusterObservation(
    name="eu1", labels={"env": "prod", "tier": "gold"}, provider="aws", region="eu-west-1"
)
US = ClusterObservation(
    name="us1", labels={"env": "dev"}, provider="gcp", region="us-east1", zone="us-east1-b"
)


def aff(**body: object) -> ClusterAffinity:
    return ClusterAffinity.model_validate(body)


def test_unset_affinity_selects_every_cluster() -> None:
    assert affinity_matches(None, EU)
    assert affinity_matches(aff(), US)


def test_cluster_names_and_exclude() -> None:
    assert affinity_matches(aff(clusterNames=["eu1"]), EU)
    assert not affinity_matches(aff(clusterNames=["eu1"]), US)
    assert not affinity_matches(aff(exclude=["eu1"]), EU)
    assert not affinity_matches(aff(clusterNames=["eu1", "us1"], exclude=["eu1"]), EU)


def test_label_selector_match_labels_and_expressions() -> None:
    assert affinity_matches(aff(labelSelector={"matchLabels": {"env": "prod"}}), EU)
    assert not affinity_matches(aff(labelSelector={"matchLabels": {"env": "prod"}}), US)
    expr = {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    assert affinity_matches(aff(labelSelector=expr), EU)
    assert not affinity_matches(aff(labelSelector=expr), US)
    notin = {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}
    assert affinity_matches(aff(labelSelector=notin), EU)
    assert not affinity_matches(aff(labelSelector=notin), US)
    absent = {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}
    assert affinity_matches(aff(labelSelector=absent), US)


def test_field_selector_on_provider_region_zone() -> None:
    region = {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu-west-1"]}]}
    assert affinity_matches(aff(fieldSelector=region), EU)
    assert not affinity_matches(aff(fieldSelector=region), US)
    zone = {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["us-east1-b"]}]}
    assert affinity_matches(aff(fieldSelector=zone), EU)  # no zone: not in the list
    assert not affinity_matches(aff(fieldSelector=zone), US)
    provider = {"matchExpressions": [{"key": "provider", "operator": "In", "values": ["gcp"]}]}
    assert affinity_matches(aff(fieldSelector=provider), US)


def test_unknown_operator_or_key_selects_nothing() -> None:
    bad_op = {"matchExpressions": [{"key": "env", "operator": "Gt", "values": ["1"]}]}
    assert not affinity_matches(aff(labelSelector=bad_op), EU)
    bad_key = {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}
    assert not affinity_matches(aff(fieldSelector=bad_key), EU)


def test_every_set_field_must_match() -> None:
    both = aff(clusterNames=["eu1"], labelSelector={"matchLabels": {"env": "dev"}})
    assert not affinity_matches(both, EU)


def test_first_matching_preference_wins_and_none_means_zero() -> None:
    prefs = [
        ClusterAutoscalingPreference.model_validate(
            {
                "targetCluster": {"labelSelector": {"matchLabels": {"env": "prod"}}},
                "staticWeight": 5,
                "priority": 9,
            }
        ),
        ClusterAutoscalingPreference.model_validate(
            {"targetCluster": {"clusterNames": ["eu1", "us1"]}, "staticWeight": 2, "priority": 1}
        ),
    ]
    assert preference_for(prefs, EU) is prefs[0]
    assert static_weight(prefs, EU) == 5 and priority(prefs, EU) == 9
    assert static_weight(prefs, US) == 2 and priority(prefs, US) == 1
    other = ClusterObservation(name="ap1")
    assert preference_for(prefs, other) is None
    assert static_weight(prefs, other) == 0 and priority(prefs, other) == 0
