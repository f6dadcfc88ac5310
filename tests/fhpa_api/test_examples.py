"""Every shipped example is valid, covers every policy and cron mode, and round-trips through the models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fhpa_api.defaulting import apply_defaults
from fhpa_api.documents import load_documents
from fhpa_api.models import KINDS
from fhpa_api.validation import validate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DOCS = [doc for _, doc in load_documents(EXAMPLES)]
IDS = [f"{d['kind']}/{d['metadata']['name']}" for d in DOCS]


def test_examples_cover_every_policy_and_both_cron_targets() -> None:
    policies = {
        d["spec"].get("federatedHPAAssignment", {}).get("federatedHPAAssignmentType", "Duplicated")
        for d in DOCS
        if d["kind"] == "FederatedHPA"
    }
    assert policies == {"Duplicated", "StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized"}
    cron_targets = {d["spec"]["scaleTargetRef"]["kind"] for d in DOCS if d["kind"] == "CronFederatedHPA"}
    assert cron_targets == {"FederatedHPA", "Deployment"}


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_example_is_valid_without_warnings(doc: dict) -> None:
    result = validate(apply_defaults(doc))
    assert result.ok, [str(e) for e in result.errors]
    assert result.warnings == []


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
@pytest.mark.parametrize("defaulted", [False, True], ids=["as-written", "defaulted"])
def test_example_round_trips_through_the_model(doc: dict, defaulted: bool) -> None:
    source = apply_defaults(doc) if defaulted else doc
    wire = json.loads(json.dumps(source))
    model = KINDS[doc["kind"]].model_validate(wire)
    assert model.to_json() == wire
