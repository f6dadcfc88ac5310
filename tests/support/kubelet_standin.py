"""A kubelet stand-in for the kube tier's member clusters: what a node agent does to pod status.

There are no containers here, but the real controllers (ReplicaSet, HPA) and our controller read
pod status, so something must write it as a kubelet would:

* a pod the real scheduler bound to one of this member's Nodes becomes ``Running`` with
  ``Ready=False`` at once (the container starts), then ``Ready=True`` after ``startup_delay``
  seconds (the readiness probe passes): the delay the HPA's unready-pod handling and our
  pending/ready counts are about;
* a pod being deleted (``deletionTimestamp`` set) is removed for good (the graceful stop finishes),
  which frees its requests on the node for the scheduler;
* pods the scheduler left unbound stay ``Pending`` with its ``PodScheduled=False/Unschedulable``.

It polls the member (a list every ``period`` seconds) rather than watching: simpler, and a poll
delay of a fraction of a second is far below the start-up delays the tests use. Errors (a member
whose apiserver was stopped) are counted and retried at the next poll.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]
# request(method, path, body, content_type) -> (status, parsed body)
Requester = Callable[..., tuple[int, Any]]


def _stamp(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _PodState:
    namespace: str
    name: str
    labels: Mapping[str, str]
    started: float
    ready: bool = False


class KubeletStandIn:
    """Pod status for the pods bound to ``nodes`` of one member. ``start()``/``stop()``; thread-safe reads."""

    def __init__(
        self,
        member: str,
        request: Requester,
        nodes: Callable[[], set[str]],
        *,
        startup_delay: float = 2.0,
        period: float = 0.3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.member = member
        self._request = request
        self._nodes = nodes
        self.startup_delay = startup_delay
        self.period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._pods: dict[str, _PodState] = {}  # by uid
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"kubelet {member}", daemon=True)
        self.errors = 0
        self.last_error = ""

    # -- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> KubeletStandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def pause(self) -> None:
        """Stop touching the member (its apiserver is about to be stopped) without forgetting pods."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    # -- what the load model reads ---------------------------------------------------------------------

    def ready_pods(self) -> list[tuple[str, str, Mapping[str, str]]]:
        """(namespace, name, labels) of the pods that are Ready now."""
        with self._lock:
            return [(p.namespace, p.name, p.labels) for p in self._pods.values() if p.ready]

    # -- the loop -------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            if self._paused.is_set():
                continue
            try:
                self.sync_once()
            except Exception as exc:  # a stopped or restarting apiserver: retry at the next poll
                self.errors += 1
                self.last_error = repr(exc)

    def sync_once(self) -> None:
        status, body = self._request("GET", "/api/v1/pods")
        if status != 200:
            raise RuntimeError(f"pod list answered HTTP {status}")
        mine = self._nodes()
        seen: set[str] = set()
        for pod in body.get("items", []):
            node = pod["spec"].get("nodeName")
            if node not in mine:
                continue
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            if pod["metadata"].get("deletionTimestamp"):
                self._finish_deletion(pod)
                seen.discard(uid)
                continue
            self._advance(uid, pod)
        with self._lock:
            for uid in set(self._pods) - seen:
                del self._pods[uid]

    def _finish_deletion(self, pod: JSON) -> None:
        meta = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]},
        }
        self._request("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", body)
        with self._lock:
            self._pods.pop(meta["uid"], None)

    def _advance(self, uid: str, pod: JSON) -> None:
        meta = pod["metadata"]
        now = self._clock()
        with self._lock:
            state = self._pods.get(uid)
        phase = (pod.get("status") or {}).get("phase")
        if state is None:
            state = _PodState(meta["namespace"], meta["name"], dict(meta.get("labels") or {}), now)
            if phase == "Running" and _ready(pod):  # a pod this stand-in marked before a restart
                state.ready = True
            else:
                self._write_status(pod, ready=False, at=now)
            with self._lock:
                self._pods[uid] = state
            return
        if not state.ready and now - state.started >= self.startup_delay:
            self._write_status(pod, ready=True, at=now)
            with self._lock:
                state.ready = True

    def _write_status(self, pod: JSON, *, ready: bool, at: float) -> None:
        meta = pod["metadata"]
        old = (pod.get("status") or {}).get("conditions") or []
        keep = [c for c in old if c.get("type") == "PodScheduled"]
        flag = "True" if ready else "False"
        conditions = [
            *keep,
            {"type": "Initialized", "status": "True", "lastTransitionTime": _stamp(at)},
            {"type": "ContainersReady", "status": flag, "lastTransitionTime": _stamp(at)},
            {"type": "Ready", "status": flag, "lastTransitionTime": _stamp(at)},
        ]
        status = {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "startTime": (pod.get("status") or {}).get("startTime") or _stamp(at),
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status"
        code, answer = self._request(
            "PATCH",
            path,
            {"metadata": {"uid": meta["uid"]}, "status": status},
            "application/merge-patch+json",
        )
        if code not in (200, 404, 409):
            raise RuntimeError(f"pod status patch answered HTTP {code}: {str(answer)[:200]}")


def _ready(pod: JSON) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )
