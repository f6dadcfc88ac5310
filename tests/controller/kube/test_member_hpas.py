"""Member HPAs as the adapter reads them (controller.kube.member_hpas): the digest its writes stamp is the
planner's, and an HPA's ownership and target are read from its labels and scaleTargetRef."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.kube.member_hpas import hpa_observation, owns, spec_template_digest, targets
from controller.planning.member_hpa import (
    LABEL_OWNER_NAME,
    LABEL_OWNER_UID,
    owner_labels,
    render_spec,
    template_digest,
)
from fhpa_api.models import CrossVersionObjectReference, HorizontalPodAutoscalerBehavior, MetricSpec
from tests.support.member_world import make_fhpa


def test_the_digest_written_is_the_planners_template_digest() -> None:
    fhpa = make_fhpa()
    fhpa.spec.behavior = HorizontalPodAutoscalerBehavior.model_validate(
        {"scaleDown": {"stabilizationWindowSeconds": 60}}
    )
    fhpa.spec.metrics = [
        MetricSpec.model_validate(
            {
                "type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
            }
        )
    ]
    assert spec_template_digest(render_spec(fhpa, 1, 9)) == template_digest(fhpa)


def test_an_hpa_is_ours_by_uid_or_by_the_labels_of_a_federated_hpa_of_the_same_name() -> None:
    fhpa = make_fhpa()
    labelled = {"metadata": {"labels": owner_labels(fhpa)}}
    assert owns(labelled, fhpa)
    assert not owns({"metadata": {"labels": {}}}, fhpa)
    recreated = {**owner_labels(fhpa), LABEL_OWNER_UID: "uid-of-the-deleted-one"}
    assert owns({"metadata": {"labels": recreated}}, fhpa)  # same namespace and name: adopted
    another = {**owner_labels(fhpa), LABEL_OWNER_UID: "uid-2", LABEL_OWNER_NAME: "api"}
    assert not owns({"metadata": {"labels": another}}, fhpa)


def test_an_hpa_targets_a_workload_by_group_kind_and_name_in_any_version() -> None:
    ref = CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web")
    hpa = {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1beta2", "kind": "Deployment", "name": "web"}}}
    assert targets(hpa, ref)
    core = {"spec": {"scaleTargetRef": {"apiVersion": "v1", "kind": "Deployment", "name": "web"}}}
    assert not targets(core, ref)  # another group
    assert not targets({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "api"}}}, ref)


def test_the_hpas_last_scale_time_is_read_and_an_unreadable_one_is_none() -> None:
    # the lowest Prioritized tier goes to 0 only once its HPA has not scaled for a stabilization window
    hpa = {"spec": {"maxReplicas": 4}, "status": {"lastScaleTime": "2026-11-25T19:00:00Z"}}
    assert hpa_observation(hpa, True).last_scale_time == datetime(2026, 11, 25, 19, tzinfo=UTC)
    assert hpa_observation({"status": {"lastScaleTime": "yesterday"}}, True).last_scale_time is None
    assert hpa_observation({}, True).last_scale_time is None
