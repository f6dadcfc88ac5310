"""The frozen heap and member rotation: a member whose Secret changes is freed, even after gc.freeze."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace
from typing import Any

from controller.kube.clients import Timeouts
from controller.kube.registry import MemberRegistry, default_factory
from controller.runtime import manager
from controller.runtime.fleet import FleetManager
from controller.runtime.manager import settle_heap
from tests.controller.kube.test_registry import NS, fhpa, secret
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node
from tests.support.waiting import wait_for

ROTATIONS = 10


def test_ten_secret_rotations_leave_no_old_member_alive_under_a_frozen_heap() -> None:
    with FakeKube(stall_seconds=3, tls=True) as member:
        member.store.put("nodes", node("n1"))
        member.store.put("deployments", deployment("web", replicas=2))
        timeouts = Timeouts(connect=0.5, read=1.0, probe=0.5)
        registry = MemberRegistry(NS, timeouts, factory=default_factory(timeouts))
        fleet: Any = SimpleNamespace(registry=registry, leading=True, _enqueue_all=lambda kind: None)
        dropped: list[weakref.ref[Any]] = []
        try:
            for rotation in range(ROTATIONS + 1):
                kubeconfig = member.kubeconfig(token=f"token-{rotation}")
                FleetManager._registry_event(fleet, "MODIFIED", secret("east", kubeconfig, rv=str(rotation)))
                current = registry._entries["east"].member
                assert registry.members()["east"].observe(fhpa()).current_replicas == 2  # caches synced
                settle_heap()  # as after a sync and at each resync: the live caches are frozen
                dropped.append(weakref.ref(current))
            dropped.pop()  # the member in use now

            def none_alive() -> bool:
                settle_heap()  # as the resync loop does every period
                return all(ref() is None for ref in dropped)

            wait_for(
                none_alive,
                timeout=20,
                what="the rotated-out members freed",
            )
        finally:
            registry.close()
            manager._thawed_until[0] = 0.0  # later tests expect settle_heap to freeze again
            gc.unfreeze()
