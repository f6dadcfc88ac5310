"""The HTTP transport of the list/watch loop against loopback servers: a page over its cap is refused as
the cap is passed, a refusal keeps its meaning, and a watch past its deadline says so."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.errors import NotFoundError
from controller.kube.member_budget import MIB, BudgetExceededError, Caps, MemberBudget, ResponseDeadlineError
from controller.kube.watch_transport import KubeTransport
from tests.support.hostile_member import HostileMember


@pytest.fixture
def giant() -> Iterator[HostileMember]:
    with HostileMember("giant_page", count=10_000) as member:
        yield member


def test_a_page_over_its_cap_is_refused_and_an_honest_one_read(giant: HostileMember) -> None:
    client = giant.client("m1")
    try:
        transport = KubeTransport(client, MemberBudget("m1", Caps(page_bytes=MIB)))
        with pytest.raises(BudgetExceededError, match="list page over its cap of 1 MiB"):
            transport.list_page("/api/v1/pods", {"limit": 500})
        assert transport.list_page("/api/v1/nodes", {"limit": 500})["items"] == []
        with pytest.raises(NotFoundError):
            transport.list_page("/api/v1/secrets", {})
        # without a member budget (the control plane's own objects) nothing is capped
        assert len(KubeTransport(client).list_page("/api/v1/pods", {"limit": 500})["items"]) == 10_000
    finally:
        client.close()


def test_a_watch_still_open_past_its_deadline_is_cut_off() -> None:
    with HostileMember("trickle_watch", beat=0.1) as member:
        client = member.client("m1")
        try:
            stream = KubeTransport(client, MemberBudget("m1")).open_watch(
                "/api/v1/pods", {"watch": True}, 0.5
            )
            with pytest.raises(ResponseDeadlineError, match="still open past its deadline"):
                list(stream.lines())
            stream.release()
        finally:
            client.close()
