"""pytest fixtures of the kube tier (real v1.20.2 member clusters), loaded by tests/conftest.py.

A plugin module rather than conftest code so that the tier has its own terminal-summary hook.

  kube_binaries        session: the four binaries (skips, or under CI=true FAILS, when missing)
  kube_load            session: the LoadModel the session members share
  kube_members         session: two members, "m1" (one 2-CPU node) and "m2" (nodes of 1 and
                       1.5 CPU), started once and reused by every test: ~20 s of start-up paid once
  kube_namespace       a fresh namespace on every session member; at the end of the test it is
                       deleted and its pods waited for, so the next test finds empty nodes
  kube_member_factory  more members for one test (own LoadModel unless given), stopped after it

Logs: a member is stopped with its work directory kept (path printed) when a test using it failed,
or always with FHPA_KUBE_KEEP=1.
"""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.builds import KUBE_BUILD_SCRIPT, KubeBinaries, kube_availability
from tests.support.kube_load import LoadModel
from tests.support.kubemember import KubeMember, NodeSpec, wait_for
from tests.support.tier_gate import TierGate

KUBE_GATE = TierGate(
    name="kube",
    tag="KUBE TIER UNAVAILABLE",
    runs_against="real member clusters",
    build_script=KUBE_BUILD_SCRIPT,
    make_target="kube",
)
_FAILED_KEY = pytest.StashKey[bool]()

SESSION_NODES = {
    "m1": (NodeSpec("m1-node-a", cpu="2"),),
    "m2": (NodeSpec("m2-node-a", cpu="1"), NodeSpec("m2-node-b", cpu="1500m")),
}


def _binaries_or_skip() -> KubeBinaries:
    return KUBE_GATE.binaries_or_skip(kube_availability())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    """Remember that a kube test failed, so the session members keep their logs."""
    report = yield
    if report.failed and item.get_closest_marker("kube") is not None:
        item.session.stash[_FAILED_KEY] = True
    return report


@pytest.fixture(scope="session")
def kube_binaries() -> KubeBinaries:
    return _binaries_or_skip()


@pytest.fixture(scope="session")
def kube_load() -> LoadModel:
    return LoadModel()


@pytest.fixture(scope="session")
def kube_members(
    request: pytest.FixtureRequest, kube_binaries: KubeBinaries, kube_load: LoadModel
) -> Iterator[dict[str, KubeMember]]:
    members: dict[str, KubeMember] = {}
    try:
        for name, nodes in SESSION_NODES.items():
            members[name] = KubeMember(name, binaries=kube_binaries, nodes=nodes, model=kube_load)
        # started side by side: each start is mostly waiting for its own processes
        with concurrent.futures.ThreadPoolExecutor(len(members)) as pool:
            for future in [pool.submit(m.start) for m in members.values()]:
                future.result()
        yield members
    finally:
        failed = request.session.stash.get(_FAILED_KEY, False)
        for member in members.values():
            member.stop(keep_logs=failed)


def delete_namespace(member: KubeMember, name: str, timeout: float = 60) -> None:
    """Empty a namespace quickly and delete it: its workloads go at once and its pods are force
    deleted until none is left (their node resources are free for the next test); the namespace
    object itself is left to the namespace controller."""
    if not member.started:
        return
    base = f"/api/v1/namespaces/{name}"
    background = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    for path in (
        f"/apis/autoscaling/v1/namespaces/{name}/horizontalpodautoscalers",
        f"/apis/apps/v1/namespaces/{name}/deployments",
        f"/apis/apps/v1/namespaces/{name}/replicasets",
    ):
        member.request("DELETE", path, background)
    force = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}

    def no_pods_left() -> bool:
        if member.request("GET", f"{base}/pods")[1].get("items") == []:
            return True
        member.request("DELETE", f"{base}/pods", force)  # a ReplicaSet not collected yet may add one
        return False

    wait_for(no_pods_left, timeout, f"{member.name}: pods of namespace {name} gone")
    member.request("DELETE", base)


@pytest.fixture
def kube_namespace(kube_members: dict[str, KubeMember]) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    for member in kube_members.values():
        member.create_namespace(name)
    yield name
    for member in kube_members.values():
        delete_namespace(member, name)


@pytest.fixture
def kube_member_factory(
    request: pytest.FixtureRequest, kube_binaries: KubeBinaries
) -> Iterator[Callable[..., KubeMember]]:
    """``factory(name, **kwargs) -> KubeMember`` (started); kwargs go to ``KubeMember``."""
    started: list[KubeMember] = []

    def make(name: str, **kwargs: Any) -> KubeMember:
        member = KubeMember(name, binaries=kube_binaries, **kwargs)
        started.append(member)
        return member.start()

    yield make
    failed = request.session.stash.get(_FAILED_KEY, False)
    for member in reversed(started):
        member.stop(keep_logs=failed)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Repeat the kube-tier skip loudly at the end of the run."""
    KUBE_GATE.summarize(terminalreporter)
