"""Members are bulkheads: one member whose lists never finish does not hold up any other member's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from controller.kube.member_cache import CacheNotSyncedError, MemberCache
from tests.controller.kube.test_member_cache import StubTransport, named, wait_for


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


class ExpiringTransport(StubTransport):
    """Pods are listed, then their watch expires (410) and the new list hangs until ``release``; by
    then every pod has been deleted."""

    def __init__(self) -> None:
        super().__init__(20, named)
        self.release = threading.Event()
        self.relisting = threading.Event()
        self.expire = threading.Event()
        self.pod_lists = 0

    def list_page(self, path: str, query: Mapping[str, Any]) -> Mapping[str, Any]:
        if path.endswith("/pods"):
            self.pod_lists += 1
            if self.pod_lists > 1:
                self.relisting.set()
                self.release.wait(30)
                return {"metadata": {"resourceVersion": "200"}, "items": []}
        return super().list_page(path, query)

    def open_watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> Any:
        if path.endswith("/pods") and self.pod_lists == 1 and self.expire.is_set():
            return _Lines([json.dumps({"type": "ERROR", "object": {"code": 410, "message": "too old"}})])
        return super().open_watch(path, query, read_timeout)


class _Lines:
    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def lines(self) -> Iterator[str]:
        return iter(self._lines)

    def close(self) -> None:
        pass

    def release(self) -> None:
        pass


def test_a_relisting_member_is_unknown_not_answered_from_its_old_store() -> None:
    """N1: after a 410 the cache kept answering its 20 old pods as current while it listed again."""
    transport = ExpiringTransport()
    cache = MemberCache("east", transport, min_watch_interval=0.05)
    try:
        cache.start()
        assert cache.wait_synced(timeout=10) and len(cache.all_pods()) == 20
        transport.expire.set()
        assert transport.relisting.wait(10)
        with pytest.raises(CacheNotSyncedError, match="relisting"):
            cache.all_pods()
        transport.release.set()
        wait_for(lambda: not any(lw.relisting for lw in cache.watches), "the relist", timeout=10)
        assert cache.all_pods() == []
    finally:
        transport.release.set()
        cache.stop(timeout=5)
