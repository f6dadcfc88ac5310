"""Member clusters for controller tests: FakeKube "clusters" with a node and a workload, their Secrets,
and the real registry with short timeouts."""

from __future__ import annotations

import base64
import json

from controller.kube.clients import Timeouts
from controller.kube.registry import MEMBER_LABEL, MemberRegistry, default_factory
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node


def member_cluster(namespace: str = "default", replicas: int = 1, name: str = "web") -> FakeKube:
    """A started FakeKube with one roomy node and a Deployment ``name`` in ``namespace``."""
    namespaces = tuple(dict.fromkeys(("default", "kube-system", namespace)))
    fake = FakeKube(namespaces=namespaces, watch_max_seconds=5.0)
    fake.start()
    fake.store.create("nodes", node("node-1", cpu="8", memory="16Gi"))
    fake.store.create("deployments.apps", deployment(name, namespace, replicas=replicas))
    return fake


def member_secret(cluster: str, fake: FakeKube, namespace: str, labels: dict[str, str] | None = None) -> dict:
    config = fake.kubeconfig(cluster=cluster)
    if not fake.tls:  # the registry refuses to send a credential over plain HTTP; FakeKube needs none
        config["users"][0]["user"] = {}
    kubeconfig = json.dumps(config).encode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": cluster,
            "namespace": namespace,
            "labels": {MEMBER_LABEL: "true", **(labels or {})},
        },
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(kubeconfig).decode()},
    }


def registry(
    namespace: str, live_window_seconds: float = 10.0, quiet_probe_seconds: float = 60.0
) -> MemberRegistry:
    """The real member registry (watch-backed members) with timeouts short enough for tests; both
    windows at 0 make every probe a real GET /readyz."""
    timeouts = Timeouts(connect=1, read=3, probe=1)
    factory = default_factory(
        timeouts, live_window_seconds=live_window_seconds, quiet_probe_seconds=quiet_probe_seconds
    )
    return MemberRegistry(namespace, timeouts, factory=factory)
