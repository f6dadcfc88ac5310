"""The largest CronFederatedHPA validation admits, with every history full, is stored whole by a real API
server (the sizes themselves are measured in tests/controller/planning/test_cron_history_size.py)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from fhpa_api import limits
from tests.controller.planning.test_cron_history_size import full_status, worst_case_object

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.realapi
def test_the_real_api_server_stores_the_worst_case_object_with_full_status(realapi: Any) -> None:
    from kubernetes.client import CustomObjectsApi

    realapi.install_crds(sorted((ROOT / "manifests" / "crds").glob("autoscaling.karmada.io_*.yaml")))
    namespace = f"budget-{uuid.uuid4().hex[:8]}"
    realapi.create_namespace(namespace)
    custom = CustomObjectsApi(realapi.api_client())
    obj = worst_case_object()
    obj["metadata"] = {"name": "worst-case", "namespace": namespace}
    args = ("autoscaling.karmada.io", "v1alpha1", namespace, "cronfederatedhpas")
    created = custom.create_namespaced_custom_object(*args, obj)
    created["status"] = full_status(obj)
    stored = custom.replace_namespaced_custom_object_status(*args, "worst-case", created)
    assert len(stored["status"]["executionHistories"]) == limits.RULES_MAX_ITEMS
    read = custom.get_namespaced_custom_object(*args, "worst-case")
    assert read["status"]["executionHistories"] == stored["status"]["executionHistories"]
