"""Members are bulkheads, over real HTTP: hostile member servers on loopback (tests/support/hostile_member)
are cut off at their own caps and deadlines, and the members beside them sync and serve as if alone."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from controller.kube.member_budget import MIB, Caps
from controller.kube.member_cache import CacheNotSyncedError, MemberCache
from controller.kube.member_watches import Change
from tests.controller.kube.test_member_cache import FAST, WAIT, wait_for
from tests.support.hostile_member import HostileMember


def started(stack: ExitStack, member: HostileMember, name: str, caps: Caps, **kwargs: Any) -> MemberCache:
    """A started cache of ``member``, stopped (and its client closed) when the test ends."""
    client = member.client(name)
    stack.callback(client.close)
    cache = MemberCache.for_client(
        client,
        caps=caps,
        backoff=FAST,
        min_watch_interval=0.05,
        denied_retry_seconds=600,  # given up stays given up for the test's length
        **kwargs,
    )
    cache.start()
    stack.callback(cache.stop, 5)
    return cache


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def unknown_because(cache: MemberCache) -> str:
    try:
        cache.all_pods()
    except CacheNotSyncedError as exc:
        return str(exc)
    except Exception as exc:  # failing watches: unreachable, also unknown
        return str(exc)
    return ""


def test_nine_members_serve_within_5s_while_a_tenth_trickles_and_is_cut_at_its_deadline(
    stack: ExitStack,
) -> None:
    caps = Caps(response_seconds=2.0)
    trickler = stack.enter_context(HostileMember("trickle", beat=0.5, lifetime=60))
    honest = [stack.enter_context(HostileMember("honest", beat=0.5, lifetime=60)) for _ in range(9)]
    slow = started(stack, trickler, "slow", caps)
    others = [started(stack, m, f"m{i}", caps) for i, m in enumerate(honest)]
    began = time.monotonic()
    for cache in others:
        assert cache.wait_synced(timeout=max(0.0, began + 5 - time.monotonic())), cache.cluster
        assert len(cache.all_pods()) == 3
    assert time.monotonic() - began <= 5
    # the trickler's page is cut at 2 s, whatever the per-read timeout (30 s) would have allowed
    wait_for(lambda: "not answered in full within 2 s" in unknown_because(slow), "the trickle cut off", 15)
    assert not slow.synced


def test_a_watch_trickling_bytes_is_cut_at_its_whole_response_deadline(stack: ExitStack) -> None:
    """Synced, then a watch that sends a byte every 0.2 s and never a line: a per-read timeout would
    never fire; the watch's own deadline (timeoutSeconds 1 + slack 1) cuts it, and the member is unknown."""
    hostile = stack.enter_context(HostileMember("trickle_watch", beat=0.2))
    cache = started(stack, hostile, "slow", Caps(), timeout_seconds=1, read_slack_seconds=1.0)
    wait_for(lambda: "still open past its deadline" in unknown_because(cache), "the watch cut off", WAIT)
    for _ in range(10):  # and it stays unknown while it trickles, not only between two watches
        assert "past its deadline" in unknown_because(cache)
        time.sleep(0.1)


def test_a_member_streaming_garbage_costs_no_more_memory_than_its_page_cap(stack: ExitStack) -> None:
    caps = Caps(page_bytes=4 * MIB)
    hostile = stack.enter_context(HostileMember("garbage", max_bytes=64 * MIB))
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        cache = started(stack, hostile, "garbage", caps)
        wait_for(lambda: "list page over its cap of 4 MiB" in unknown_because(cache), "the page cap", WAIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert hostile.sent < 32 * MIB  # cut off early, not read to the server's own end
    assert peak - before <= 2 * caps.page_bytes + 4 * MIB, f"+{(peak - before) / MIB:.1f} MiB"


@pytest.mark.parametrize(
    ("mode", "caps", "page_size", "reason"),
    [
        ("giant_page", Caps(page_bytes=1 * MIB), 500, "a list page over its cap of 1 MiB"),
        ("endless_continue", Caps(objects=1000), 100, "over its cap of 1000 objects"),
        ("long_line", Caps(line_bytes=1 * MIB), 500, "a watch line over its cap of 1 MiB"),
        ("flood", Caps(objects=500), 500, "over its cap of 500 objects"),
    ],
)
def test_a_member_over_its_caps_is_unknown_with_the_reason_and_the_others_are_untouched(
    stack: ExitStack, mode: str, caps: Caps, page_size: int, reason: str
) -> None:
    hostile = stack.enter_context(HostileMember(mode, count=20_000 if mode == "giant_page" else 3))
    honest = stack.enter_context(HostileMember("honest"))
    changes: list[Change] = []
    bad = started(stack, hostile, "bad", caps, page_size=page_size, on_change=changes.append)
    good = started(stack, honest, "good", caps, page_size=page_size)
    wait_for(lambda: reason in unknown_because(bad), f"{mode}: {reason}", WAIT)
    assert "over its budget" in unknown_because(bad)
    assert good.wait_synced(timeout=WAIT) and len(good.all_pods()) == 3
    if mode == "flood":  # it had synced: what it held is given up, and every plan hears of it
        assert bad.budget.held[0] == 0 and not bad._pods_by_ns
        wait_for(lambda: any(c.synced and c.resource == "Pod" for c in changes[1:]), "the notice", WAIT)
