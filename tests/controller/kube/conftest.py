"""The populated member cluster most KubeMemberCluster tests start from (a file may define its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fakekube import FakeKube
from tests.support.member_world import populate


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    """A FakeKube that stalls a stalled request 3 s, with ``populate``'s nodes, Deployment and pods."""
    fk = FakeKube(stall_seconds=3)
    fk.start()
    populate(fk)
    yield fk
    fk.stop()
