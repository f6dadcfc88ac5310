"""Members are bulkheads: one member whose lists never finish does not hold up any other member's."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from controller.kube.member_cache import MemberCache
from tests.controller.kube.test_member_cache import StubTransport, named


class TricklingTransport(StubTransport):
    """A member whose list answers never complete (as one trickling a byte every few seconds would)."""

    def __init__(self) -> None:
        super().__init__(1, named)
        self.release = threading.Event()
        self.stuck = 0
        self._lock = threading.Lock()

    def list_page(self, path: str, query: Mapping[str, Any]) -> Mapping[str, Any]:
        with self._lock:
            self.stuck += 1
        self.release.wait(30)
        return super().list_page(path, query)


def test_nine_members_sync_while_one_member_never_finishes_a_list() -> None:
    slow = TricklingTransport()
    caches = [MemberCache("slow", slow)] + [MemberCache(f"m{i}", StubTransport(3, named)) for i in range(9)]
    try:
        for cache in caches:
            cache.start()
        assert all(cache.wait_synced(timeout=5) for cache in caches[1:])
        assert slow.stuck == 1  # its own lists take turns behind its own gate
        assert not caches[0].synced
    finally:
        slow.release.set()
        for cache in caches:
            cache.stop(timeout=5)
