"""Issue 15's "done when", end to end: two members joined with `fhpa cluster join` (subprocesses of the
installed CLI), the controller run against the control plane, an example applied, and
`kubectl fhpa explain` (the real kubectl finding the kubectl-fhpa plugin on PATH) says why each cluster
got its bounds.

The control plane is the real API server tier (CRDs, the FederatedHPA and its status) fronted together
with a FakeKube for core/v1 (member Secrets, Events, the Lease), as in the controller's own e2e tests;
the members are FakeKubes over TLS that serve RBAC, with a stand-in token controller.
"""

from __future__ import annotations

import base64
import copy
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.clusters import SYSTEM, member, token_controller, write_kubeconfig
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node
from tests.support.front import Backend, Front
from tests.support.processes import free_port
from tests.support.realapi import RealAPIServer

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
CRDS = sorted((REPO / "manifests" / "crds").glob("*.yaml"))
EXAMPLE = REPO / "examples" / "federatedhpa-static-weighted.yaml"
BIN = Path(sys.executable).parent
GROUP = "autoscaling.karmada.io"
MEMBERS = ("eu-west-1", "eu-central-1")  # two of the example's three clusterNames


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:  # not there yet
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def control_plane(stack: ExitStack, realapi: RealAPIServer, namespace: str) -> tuple[FakeKube, Front]:
    """The real API server (our CRDs installed) fronted together with a FakeKube for core/v1: the
    control plane the CLI and the controller see; both are stopped when ``stack`` closes."""
    realapi.install_crds(CRDS)
    core = FakeKube(namespaces=("default", "kube-system", SYSTEM, namespace), watch_max_seconds=20.0)
    core.start()
    stack.callback(core.stop)
    front = Front(
        real=Backend.https(realapi.url, realapi.ca_path, realapi.admin_cert_path, realapi.admin_key_path),
        fake=Backend.http(core.url),
    )
    front.start()
    stack.callback(front.stop)
    return core, front


@pytest.fixture
def plane(realapi: RealAPIServer, realapi_namespace: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    with ExitStack() as stack:
        core, front = control_plane(stack, realapi, realapi_namespace)
        members = {}
        for name in MEMBERS:
            fake = member(namespaces=("default", "kube-system", realapi_namespace))
            stack.callback(fake.stop)
            fake.store.create("nodes", node("node-1", cpu="8", memory="16Gi"))
            fake.store.create("deployments.apps", deployment("checkout-api", realapi_namespace, replicas=1))
            stack.enter_context(token_controller(fake, token=f"{name}-token"))
            members[name] = fake
        yield {
            "namespace": realapi_namespace,
            "core": core,
            "members": members,
            "management": front.write_kubeconfig(tmp_path / "management.kubeconfig"),
            "api": realapi.api_client(),
            "tmp": tmp_path,
        }


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "fhpa"), *argv], capture_output=True, text=True, timeout=120, env=env, cwd=REPO
    )


def controller(plane: dict[str, Any]) -> subprocess.Popen[bytes]:
    log = (plane["tmp"] / "controller.log").open("ab")
    args = [
        str(BIN / "fhpa"), "controller", "run",
        "--kubeconfig", str(plane["management"]),
        "--namespace", SYSTEM,
        "--watch-namespace", plane["namespace"],
        "--metrics-bind", f"127.0.0.1:{free_port()}",
        "--no-leader-elect", "--resync-period", "2", "--probe-period", "0.5",
        "--optimization-period", "3", "--watch-timeout", "5", "--shutdown-grace", "10",
    ]  # fmt: skip
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)


def test_join_two_members_run_the_controller_and_explain_the_split(plane: dict[str, Any]) -> None:
    ns, core = plane["namespace"], plane["core"]
    for name, fake in plane["members"].items():
        config = write_kubeconfig(fake, plane["tmp"] / f"{name}.kubeconfig", token=f"{name}-admin")
        done = cli(
            "cluster", "join", name, "--kubeconfig", str(config), "--labels", "tier=e2e",
            "--region", "eu", "--management-kubeconfig", str(plane["management"]),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        secret = core.store.get("secrets", SYSTEM, name)
        assert f"{name}-token" in base64.b64decode(secret["data"]["kubeconfig"]).decode()
    listed = cli("cluster", "list", "--management-kubeconfig", str(plane["management"]))
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[:3] for line in listed.stdout.splitlines()[1:]] == [
        ["eu-central-1", "tier=e2e", "Healthy"],
        ["eu-west-1", "tier=e2e", "Healthy"],
    ]

    proc = controller(plane)
    try:
        from kubernetes.client import CustomObjectsApi

        body = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
        body["metadata"]["namespace"] = ns
        api = CustomObjectsApi(plane["api"])
        api.create_namespaced_custom_object(GROUP, "v1alpha1", ns, "federatedhpas", body)

        def converged() -> dict[str, Any] | None:
            obj: dict[str, Any] = api.get_namespaced_custom_object(
                GROUP, "v1alpha1", ns, "federatedhpas", "checkout-api"
            )
            rows = (obj.get("status") or {}).get("clusters") or []
            return obj if len([r for r in rows if (r.get("maxReplicas") or 0) > 0]) == 2 else None

        obj = wait_for(converged, 60, "both members assigned")
        bounds = {r["name"]: (r["minReplicas"], r["maxReplicas"]) for r in obj["status"]["clusters"]}
        assert bounds == {"eu-central-1": (2, 7), "eu-west-1": (1, 3)}  # weights 2:1 of F.max 10, F.min 2

        env = dict(
            os.environ, KUBECONFIG=str(plane["management"]), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"
        )
        kubectl = shutil.which("kubectl")
        if kubectl is None:  # the plugin itself, as kubectl would run it
            done = subprocess.run(
                [str(BIN / "kubectl-fhpa"), "explain", f"{ns}/checkout-api"],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
        else:
            done = subprocess.run(
                [kubectl, "fhpa", "explain", f"{ns}/checkout-api"],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
        assert done.returncode == 0, done.stderr
        text = done.stdout
        assert "eu-central-1: min 2 max 7" in text and "eu-west-1: min 1 max 3" in text
        assert (
            "StaticWeighted: weight 2 of 3 (eu-central-1 2, eu-west-1 1): F.max 10 divides to max 7" in text
        )
        assert "MemberHPACreated: eu-west-1: member HPA created, min 1 max 3" in text
    finally:
        proc.terminate()
        proc.wait(20)
        sys.stderr.write((plane["tmp"] / "controller.log").read_text(errors="replace")[-3000:])
