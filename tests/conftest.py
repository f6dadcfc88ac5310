"""Shared pytest fixtures. Each tier keeps its fixtures in its own clearly marked section."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import settings

from tests.support.builds import REALAPI_BUILD_SCRIPT, Binaries, realapi_availability  # realapi tier
from tests.support.realapi import CRD_DIR, RealAPIServer
from tests.support.tier_gate import TierGate

# No wall-clock deadline for any property test: CI machines are loaded, and a slow example is not a bug.
# Tests that set their own @settings inherit this for what they leave out.
settings.register_profile("federated-hpa", deadline=None)
settings.load_profile("federated-hpa")

# ================================================================================================
# realapi tier: a real Kubernetes API server (apiextensions-apiserver + etcd + core stub).
# Owner: the realapi harness (tests/support/realapi.py). Build: `bash scripts/realapi-build.sh`.
#
#   realapi            session-scoped RealAPIServer, ScaleTarget CRD installed
#   realapi_factory    function-scoped factory for more servers ("clusters"), stopped after the test
#   realapi_namespace  a fresh namespace name (registered in the core stub) for one test
#
# When the binary or etcd is missing the tests using these fixtures SKIP with a loud reason;
# with CI=true they FAIL instead, so CI can never pass with the tier silently switched off.
# ================================================================================================

SCALETARGET_CRD = CRD_DIR / "scaletarget.yaml"
REALAPI_GATE = TierGate(
    name="realapi",
    tag="REALAPI TIER UNAVAILABLE",
    runs_against="the real API server",
    build_script=REALAPI_BUILD_SCRIPT,
    make_target="realapi",
    build_note="a cold build takes about 4 min",
)


@pytest.fixture(scope="session")
def realapi_binaries() -> Binaries:
    """Paths of the apiserver and etcd binaries (skips or, under CI=true, fails when missing)."""
    return REALAPI_GATE.binaries_or_skip(realapi_availability())


@pytest.fixture(scope="session")
def realapi(realapi_binaries: Binaries) -> Iterator[RealAPIServer]:
    """One real API server for the whole session, with the ScaleTarget test CRD installed.

    Shared by all tests: give objects unique names or use ``realapi_namespace``."""
    server = RealAPIServer(name="session", binaries=realapi_binaries)
    server.start()
    try:
        server.install_crds([SCALETARGET_CRD])
        yield server
    finally:
        server.stop()


@pytest.fixture
def realapi_factory(realapi_binaries: Binaries) -> Iterator[Callable[..., RealAPIServer]]:
    """``realapi_factory(name="member", crds=(SCALETARGET_CRD,), **kwargs) -> RealAPIServer``.

    Starts another independent server (own etcd, ports, PKI) and installs ``crds``; every server
    made by the factory is stopped when the test ends. ``kwargs`` go to ``RealAPIServer``."""
    started: list[RealAPIServer] = []

    def make(
        name: str = "member",
        crds: Sequence[str | os.PathLike[str] | dict[str, Any]] = (SCALETARGET_CRD,),
        **kwargs: Any,
    ) -> RealAPIServer:
        server = RealAPIServer(name=name, binaries=realapi_binaries, **kwargs)
        started.append(server)
        server.start()
        if crds:
            server.install_crds(crds)
        return server

    try:
        yield make
    finally:
        for server in reversed(started):
            server.stop()


@pytest.fixture
def realapi_namespace(realapi: RealAPIServer) -> str:
    """A namespace name unique to this test, known to the session server's core stub."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    realapi.create_namespace(name)
    return name


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Repeat the realapi skip loudly at the end of the run (``-ra`` lists it too)."""
    REALAPI_GATE.summarize(terminalreporter)


# ================================================================================================
# end of the realapi tier section
# ================================================================================================


# ================================================================================================
# kube tier: real Kubernetes v1.20.2 member clusters (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, a kubelet stand-in, a metrics.k8s.io server). Owner: the kube harness
# (tests/support/kubemember.py). Build: `bash scripts/kube-build.sh` (`make kube`).
# Fixtures (kube_members, kube_namespace, kube_member_factory, ...) live in the plugin below, which
# has its own terminal summary; like the realapi tier they SKIP when the build is missing and FAIL
# under CI=true.
# ================================================================================================

# The webhook's TLS fixtures (``certs``) serve both its own tests and the realapi tier's; the ``helm``
# fixture serves the chart's tests and the real-server tiers' dry runs of the chart.
pytest_plugins = [
    "tests.support.kube_fixtures",
    "tests.support.webhook_fixtures",
    "tests.support.helm_fixtures",
]

# ================================================================================================
# end of the kube tier section
# ================================================================================================


# ================================================================================================
# parallel runs (pytest-xdist: ``make test`` passes ``-n 3 --dist loadgroup``)
# ================================================================================================


# Each real-server tier runs on one worker, so its session-scoped servers start only once (session
# fixtures are per worker: spread over workers, the kube members would start on each). xdist's own
# ``xdist_group`` marks do not group under pytest 9.2 (xdist suffixes ``item._nodeid``, which
# pytest no longer reads), so the scheduler groups by the tiers' folders instead.
REAL_SERVER_TIERS = ("tests/e2e/kube/", "tests/e2e/realapi/")
ONE_WORKER_FILES = ("tests/webhook/test_app_fuzz.py",)
"""Files whose last test checks what the tests before it left behind (the fuzzed server's log), so
their tests must run in order on one worker."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with one work unit per real-server tier; every other test is its own unit.

    The biggest units go out first, so each tier starts on a worker of its own at once, and the
    CPU-bound unit tests run on the rest (and on a tier's worker once its tier is done)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class TierScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            units = (*REAL_SERVER_TIERS, *ONE_WORKER_FILES)
            return next((unit for unit in units if nodeid.startswith(unit)), nodeid)

    return TierScheduling(config, log)


# ================================================================================================
# logging: for tests of code that configures the root logger (``pytest.mark.usefixtures``)
# ================================================================================================


@pytest.fixture
def keep_root_logger() -> Iterator[None]:
    """The code under test replaces the root logger's handlers; give pytest's own back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
