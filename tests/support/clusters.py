"""Test helpers for `fhpa cluster`: a member FakeKube that serves what join writes (ServiceAccounts, RBAC)
with a stand-in token controller, and kubeconfig files for the member and the management side."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.fake_pki import fake_pki
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource

RBAC = "rbac.authorization.k8s.io"
SYSTEM = "federated-hpa-system"
TOKEN_TYPE = "kubernetes.io/service-account-token"


def serve_join_kinds(fake: FakeKube) -> None:
    """ServiceAccounts and RBAC, which FakeKube does not serve by default."""
    fake.store.add_resource(Resource("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)))
    fake.store.add_resource(Resource(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False))
    fake.store.add_resource(
        Resource(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False)
    )
    fake.store.add_resource(Resource(RBAC, "v1", "roles", "Role"))
    fake.store.add_resource(Resource(RBAC, "v1", "rolebindings", "RoleBinding"))


@contextmanager
def token_controller(fake: FakeKube, token: str = "member-sa-token") -> Iterator[None]:
    """What kube-controller-manager does for a service-account-token Secret: fill in token and ca.crt."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.02):
            secrets, _ = fake.store.list_objects("secrets", None)
            for secret in secrets:
                if secret.get("type") == TOKEN_TYPE and not (secret.get("data") or {}).get("token"):
                    secret["data"] = {
                        "token": base64.b64encode(token.encode()).decode(),
                        "ca.crt": base64.b64encode(fake_pki().ca_cert).decode(),
                    }
                    fake.store.update("secrets", secret)

    thread = threading.Thread(target=loop, name="token-controller", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def member(namespaces: tuple[str, ...] = ("default", "kube-system")) -> FakeKube:
    """A started member over TLS (the controller sends a token only over https)."""
    fake = FakeKube(tls=True, namespaces=namespaces, git_version="v1.29.4-member")
    serve_join_kinds(fake)
    fake.start()
    return fake


def write_kubeconfig(fake: FakeKube, path: Path, token: str = "admin-token") -> Path:
    path.write_text(json.dumps(fake.kubeconfig(token=token, cluster=path.stem)))
    return path
