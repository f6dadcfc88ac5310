"""`fhpa cluster unjoin` against the real API server tier: a FederatedHPA stored by the real server, with a
status row for the member written through its /status subresource, makes unjoin refuse without --force
and name it; with --force and --delete-member-hpas the member's HPA of ours goes.

The control plane is the real API server (CRDs) fronted together with a FakeKube for core/v1 (the
member Secret), as in test_join_explain_realapi; the member is a FakeKube over TLS that serves RBAC.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from controller.planning.member_hpa import (
    FIELD_MANAGER,
    LABEL_MANAGED_BY,
    LABEL_OWNER_NAME,
    LABEL_OWNER_NAMESPACE,
)
from fhpa.cli import main
from tests.e2e.realapi.test_join_explain import GROUP, control_plane
from tests.support.clusters import SYSTEM, member, token_controller, write_kubeconfig
from tests.support.realapi import RealAPIServer

pytestmark = [pytest.mark.realapi, pytest.mark.slow]


@pytest.fixture
def plane(realapi: RealAPIServer, realapi_namespace: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    with ExitStack() as stack:
        core, front = control_plane(stack, realapi, realapi_namespace)
        fake = member(namespaces=("default", "kube-system", realapi_namespace))
        stack.callback(fake.stop)
        stack.enter_context(token_controller(fake))
        yield {
            "namespace": realapi_namespace,
            "core": core,
            "member": fake,
            "member_config": str(write_kubeconfig(fake, tmp_path / "m1.kubeconfig")),
            "management": str(front.write_kubeconfig(tmp_path / "management.kubeconfig")),
            "api": realapi.api_client(),
        }


def run(capsys: pytest.CaptureFixture[str], plane: dict[str, Any], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--management-kubeconfig", plane["management"]])
    out, err = capsys.readouterr()
    return code, out, err


def test_unjoin_refuses_and_names_a_federatedhpa_the_real_server_stores_with_a_row_for_it(
    plane: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from kubernetes.client import CustomObjectsApi

    ns, fake = plane["namespace"], plane["member"]
    assert run(capsys, plane, "cluster", "join", "m1", "--kubeconfig", plane["member_config"])[0] == 0
    api = CustomObjectsApi(plane["api"])
    body = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 8,
        },
    }
    api.create_namespaced_custom_object(GROUP, "v1alpha1", ns, "federatedhpas", body)
    status = {
        "status": {"clusters": [{"name": "m1", "minReplicas": 1, "maxReplicas": 5, "currentReplicas": 3}]}
    }
    api.patch_namespaced_custom_object_status(GROUP, "v1alpha1", ns, "federatedhpas", "web", status)
    labels = {LABEL_MANAGED_BY: FIELD_MANAGER, LABEL_OWNER_NAMESPACE: ns, LABEL_OWNER_NAME: "web"}
    fake.store.create(
        "horizontalpodautoscalers.autoscaling",
        {
            "metadata": {"name": "web", "namespace": ns, "labels": labels},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 5,
            },
        },
    )

    code, _, err = run(capsys, plane, "cluster", "unjoin", "m1", "--kubeconfig", plane["member_config"])
    assert code == 2, err
    assert f"FederatedHPA {ns}/web (min 1, max 5, 3 running)" in err
    assert plane["core"].store.find("secrets", SYSTEM, "m1") is not None

    argv = (
        "cluster",
        "unjoin",
        "m1",
        "--kubeconfig",
        plane["member_config"],
        "--force",
        "--delete-member-hpas",
    )
    code, out, err = run(capsys, plane, *argv)
    assert code == 0, err
    assert f"HorizontalPodAutoscaler {ns}/web (for FederatedHPA {ns}/web): deleted" in out
    assert fake.store.find("horizontalpodautoscalers.autoscaling", ns, "web") is None
    assert plane["core"].store.find("secrets", SYSTEM, "m1") is None
