"""The manager's world, shared by the manager's test files."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.manager_world import SYSTEM, control_plane_fake, start_manager
from tests.support.members import member_cluster, member_secret, registry


@pytest.fixture
def world() -> Iterator[dict[str, Any]]:
    """A running manager (no leader election) over a control plane with two member clusters' Secrets."""
    cp = control_plane_fake()
    members = {"member1": member_cluster(), "member2": member_cluster()}
    for name, fake in members.items():
        cp.store.create("secrets", member_secret(name, fake, SYSTEM))
    manager, stop, thread, _ = start_manager(
        cp, registry(SYSTEM), watch_timeout_seconds=5, cleanup_give_up_seconds=3
    )
    yield {"cp": cp, "members": members, "manager": manager, "stop": stop, "thread": thread}
    stop.set()
    thread.join(10)
    for fake in (cp, *members.values()):
        fake.stop()
