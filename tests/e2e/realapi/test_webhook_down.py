"""A FederatedHPA is deleted while the webhook is down, against the real API server tier.

The manifests' webhook configurations are registered (failurePolicy Fail) but point at a loopback port
where nothing listens: every call to the webhook fails. The webhook configurations' matchConditions keep
the UPDATEs that only touch metadata, and every UPDATE of an object being deleted, away from the webhook,
so the controller's own finalizer code (``controller.finalizer.clean_up`` with ``KubeControlPlane`` as
its store) releases the finalizer and the object goes. The same configurations without matchConditions
(what an API server older than 1.28 makes of them) refuse that finalizer removal, and the controller says
so with a Warning Event and retries.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.finalizer import FINALIZER, clean_up
from controller.kube.control_plane import KubeControlPlane
from fhpa_api.defaulting import apply_defaults
from fhpa_api.models import FederatedHPA, FederatedHPAStatus
from tests.e2e.realapi.test_webhook import loopback_configs, server_with_crds
from tests.support.builds import Binaries
from tests.support.processes import free_port
from tests.support.realapi import RealAPIServer
from tests.support.reviews import API_VERSION, fhpa

pytestmark = [pytest.mark.realapi, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(realapi_binaries: Binaries) -> Iterator[RealAPIServer]:
    with server_with_crds(realapi_binaries, "webhook-down") as server:
        yield server


@pytest.fixture
def webhook_down(cluster: RealAPIServer, certs: Path) -> Iterator[Any]:
    """``register(match_conditions)`` puts the manifests' webhook configurations in place, calling a
    webhook that is not running; with ``match_conditions=False`` they lose that field."""

    def register(match_conditions: bool = True) -> None:
        mutating, validating = loopback_configs(
            free_port(),  # bound, then released: nothing listens
            (certs / "ca.crt").read_bytes(),
        )
        for config in mutating + validating:
            for hook in config["webhooks"]:
                assert hook["failurePolicy"] == "Fail" and hook["matchConditions"]
                if not match_conditions:
                    del hook["matchConditions"]
        cluster.set_webhooks(mutating=mutating, validating=validating)

    yield register
    cluster.set_webhooks(mutating=[], validating=[])


class Recorder:
    """The ControlPlane half that clean_up reports through (Events and status), recorded."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def emit_event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))

    def update_federated_hpa_status(self, f: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        return f


def _path(namespace: str, name: str = "") -> str:
    base = f"/apis/{API_VERSION}/namespaces/{namespace}/federatedhpas"
    return f"{base}/{name}" if name else base


def _stored_with_finalizer(cluster: RealAPIServer) -> tuple[str, str]:
    """A valid FederatedHPA carrying our finalizer, created while no webhook is registered."""
    namespace = f"down-{uuid.uuid4().hex[:8]}"
    cluster.create_namespace(namespace)
    obj = apply_defaults(fhpa(f"web-{uuid.uuid4().hex[:6]}"))
    obj["metadata"].pop("uid", None)
    obj["metadata"].update(namespace=namespace, finalizers=[FINALIZER])
    status, stored = cluster.request("POST", _path(namespace), obj)
    assert status == 201, stored
    return namespace, obj["metadata"]["name"]


def _assert_webhook_is_down(cluster: RealAPIServer, namespace: str, name: str) -> None:
    """A spec change still needs the webhook, and fails: the webhook is registered and not answering."""
    _, current = cluster.request("GET", _path(namespace, name))
    changed = copy.deepcopy(current)
    changed["spec"]["maxReplicas"] += 1
    status, answer = cluster.request("PUT", _path(namespace, name), changed)
    assert status == 500 and "failed calling webhook" in answer["message"], answer


def _delete_and_clean_up(cluster: RealAPIServer, namespace: str, name: str) -> tuple[Any, Recorder]:
    status, deleting = cluster.request("DELETE", _path(namespace, name))
    assert status == 200 and deleting["metadata"]["deletionTimestamp"], deleting
    plane = KubeControlPlane(cluster.api_client())
    current = plane.get_federated_hpa(namespace, name)
    assert current is not None and current.metadata.finalizers == [FINALIZER]
    recorder = Recorder()
    result = clean_up(current, {}, recorder, plane, datetime.now(UTC))  # type: ignore[arg-type]
    return result, recorder


def test_a_federatedhpa_is_deleted_while_the_webhook_is_down(
    cluster: RealAPIServer, webhook_down: Any
) -> None:
    namespace, name = _stored_with_finalizer(cluster)
    webhook_down()
    _assert_webhook_is_down(cluster, namespace, name)
    _, labelled = cluster.request("GET", _path(namespace, name))
    labelled["metadata"]["labels"] = {"team": "web"}
    assert cluster.request("PUT", _path(namespace, name), labelled)[0] == 200  # metadata only: let through

    result, recorder = _delete_and_clean_up(cluster, namespace, name)

    assert result.released and recorder.events[-1][:2] == ("Normal", "CleanedUp")
    assert cluster.request("GET", _path(namespace, name))[0] == 404


def test_without_match_conditions_the_finalizer_is_held_and_a_warning_says_why(
    cluster: RealAPIServer, webhook_down: Any
) -> None:
    namespace, name = _stored_with_finalizer(cluster)
    webhook_down(match_conditions=False)
    _assert_webhook_is_down(cluster, namespace, name)

    result, recorder = _delete_and_clean_up(cluster, namespace, name)

    assert not result.released and result.requeue_after_seconds
    kind, reason, message = recorder.events[-1]
    assert (kind, reason) == ("Warning", "FinalizerNotRemoved") and "webhook" in message, message
    status, held = cluster.request("GET", _path(namespace, name))
    assert status == 200 and held["metadata"]["finalizers"] == [FINALIZER]
    # leave nothing behind: with no webhook registered the controller's next pass releases it
    cluster.set_webhooks(mutating=[], validating=[])
    plane = KubeControlPlane(cluster.api_client())
    again = plane.get_federated_hpa(namespace, name)
    assert again is not None
    assert clean_up(again, {}, recorder, plane, datetime.now(UTC)).released  # type: ignore[arg-type]
