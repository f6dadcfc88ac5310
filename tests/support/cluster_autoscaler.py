"""A cluster-autoscaler stand-in for test members: what the real one shows of itself, in standard objects.

It polls the member's pods (as the kubelet stand-in does) and, for pods that pend unschedulable:

* picks the first node group with room below its max; the nodes the pods need (whole nodes of
  ``pods_per_node``) are asked for at once (the group's target rises) and join ``provision_seconds``
  later through ``add_node`` (the harness registers a Ready Node, labelled with the group's name as
  cloud providers label theirs); each pod gets a ``TriggeredScaleUp`` Event, as the real one writes;
* when every group is at its max, each such pod gets ``NotTriggerScaleUp`` ("max node group size
  reached");
* after each poll it writes its status ConfigMap ``kube-system/cluster-autoscaler-status`` in the
  older readable-text format or the newer YAML one (``status_format``), with each group's min, max,
  target (cloudProviderTarget) and registered nodes.

It does not scale down, and it does not simulate pods to find which group fits: every group is assumed
to fit every pod. Errors (a member whose apiserver is down) are counted and retried at the next poll.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

JSON = dict[str, Any]
Requester = Callable[..., tuple[int, Any]]
NAMESPACE, NAME = "kube-system", "cluster-autoscaler-status"
GROUP_LABEL = "autoscaling.fhpa.io/node-group"


def _stamp(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class NodeGroupSpec:
    name: str
    max_size: int
    pods_per_node: int
    min_size: int = 0
    target: int = 0  # the size asked for (starts at the nodes that exist)
    registered: int = 0
    coming: list[float] = field(default_factory=list)  # when each asked-for node joins


class ClusterAutoscalerStandIn:
    """``start()``/``stop()``, or ``sync_once()`` from a test that drives it step by step."""

    def __init__(
        self,
        member: str,
        request: Requester,
        add_node: Callable[[str, str], None],
        groups: list[NodeGroupSpec],
        *,
        provision_seconds: float = 5.0,
        status_format: str = "yaml",
        period: float = 0.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if status_format not in ("yaml", "text"):
            raise ValueError(f"status_format must be yaml or text, not {status_format!r}")
        self.member = member
        self._request = request
        self._add_node = add_node
        self.groups = groups
        self.provision_seconds = provision_seconds
        self.status_format = status_format
        self.period = period
        self._clock = clock
        self._handled: dict[str, str | None] = {}  # pending pod uid -> the group its node comes from
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cluster-autoscaler {member}", daemon=True)
        self.errors = 0
        self.last_error = ""

    def start(self) -> ClusterAutoscalerStandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.sync_once()
            except Exception as exc:  # a stopped apiserver: retry at the next poll
                self.errors += 1
                self.last_error = repr(exc)

    # -- one poll -------------------------------------------------------------------------------------

    def sync_once(self) -> None:
        now = self._clock()
        self._join_due(now)
        status, body = self._request("GET", "/api/v1/pods")
        if status != 200:
            raise RuntimeError(f"pod list answered HTTP {status}")
        pending = [pod for pod in body.get("items", []) if _unschedulable(pod)]
        uids = {pod["metadata"]["uid"] for pod in pending}
        self._handled = {uid: group for uid, group in self._handled.items() if uid in uids}
        for pod in pending:
            if pod["metadata"]["uid"] not in self._handled:
                self._place(pod, now)
        self._write_status(now)

    def _join_due(self, now: float) -> None:
        for group in self.groups:
            for at in [t for t in group.coming if t <= now]:
                group.coming.remove(at)
                group.registered += 1
                self._add_node(group.name, f"{group.name}-{group.registered}")

    def _place(self, pod: JSON, now: float) -> None:
        """Ask for a node for this pod, unless a node already asked for has a slot left for it."""
        for group in self.groups:
            waiting = sum(1 for g in self._handled.values() if g == group.name)
            slots = (group.target - group.registered) * group.pods_per_node
            if waiting < slots:
                self._event(pod, "TriggeredScaleUp", self._triggered(group, group.target, group.target), now)
            elif group.target < group.max_size:
                group.target += 1
                group.coming.append(now + self.provision_seconds)
                self._event(
                    pod, "TriggeredScaleUp", self._triggered(group, group.target - 1, group.target), now
                )
            else:
                continue
            self._handled[pod["metadata"]["uid"]] = group.name
            return
        self._event(
            pod, "NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached", now
        )
        self._handled[pod["metadata"]["uid"]] = None

    @staticmethod
    def _triggered(group: NodeGroupSpec, before: int, after: int) -> str:
        return f"pod triggered scale-up: [{{{group.name} {before}->{after} (max: {group.max_size})}}]"

    def _event(self, pod: JSON, reason: str, message: str, now: float) -> None:
        meta = pod["metadata"]
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{reason.lower()}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
            },
            "reason": reason,
            "message": message,
            "type": "Normal",
            "source": {"component": "cluster-autoscaler"},
            "firstTimestamp": _stamp(now),
            "lastTimestamp": _stamp(now),
            "count": 1,
        }
        status, answer = self._request("POST", f"/api/v1/namespaces/{meta['namespace']}/events", event)
        if status not in (200, 201, 409):
            raise RuntimeError(f"event create answered HTTP {status}: {str(answer)[:200]}")

    # -- the status ConfigMap -------------------------------------------------------------------------

    def render(self, now: float) -> str:
        return (
            render_text(self.groups, now) if self.status_format == "text" else render_yaml(self.groups, now)
        )

    def _write_status(self, now: float) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {"status": self.render(now)},
        }
        path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
        status, _ = self._request("PUT", f"{path}/{NAME}", body)
        if status == 404:
            status, _ = self._request("POST", path, body)
        if status not in (200, 201):
            raise RuntimeError(f"status ConfigMap write answered HTTP {status}")


def _unschedulable(pod: JSON) -> bool:
    if (pod.get("spec") or {}).get("nodeName"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in conditions
    )


def _scale_up(group: NodeGroupSpec) -> str:
    return "InProgress" if group.target > group.registered else "NoActivity"


def render_text(groups: list[NodeGroupSpec], now: float) -> str:
    """The readable format the autoscaler wrote before 1.30."""
    at = datetime.datetime.fromtimestamp(now, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.000000000 +0000 UTC")
    ready = sum(g.registered for g in groups)
    lines = [
        f"Cluster-autoscaler status at {at}:",
        "Cluster-wide:",
        f"  Health:      Healthy (ready={ready} unready=0 notStarted=0 registered={ready})",
        f"               LastProbeTime:      {at}",
        f"  ScaleUp:     {'InProgress' if any(g.coming for g in groups) else 'NoActivity'} (ready={ready})",
        f"               LastProbeTime:      {at}",
        "  ScaleDown:   NoCandidates (candidates=0)",
        "",
        "NodeGroups:",
    ]
    for g in groups:
        lines += [
            f"  Name:        {g.name}",
            f"  Health:      Healthy (ready={g.registered} unready=0 notStarted=0 registered={g.registered}"
            f" longUnregistered=0 cloudProviderTarget={g.target}"
            f" (minSize={g.min_size}, maxSize={g.max_size}))",
            f"               LastProbeTime:      {at}",
            f"  ScaleUp:     {_scale_up(g)} (ready={g.registered} cloudProviderTarget={g.target})",
            f"               LastProbeTime:      {at}",
            "  ScaleDown:   NoCandidates (candidates=0)",
            "",
        ]
    return "\n".join(lines)


def render_yaml(groups: list[NodeGroupSpec], now: float) -> str:
    """The YAML format of the autoscaler from 1.30 on."""
    at = _stamp(now)
    doc = {
        "time": at,
        "autoscalerStatus": "Running",
        "clusterWide": {"health": {"status": "Healthy"}, "scaleUp": {"status": "NoActivity"}},
        "nodeGroups": [
            {
                "name": g.name,
                "health": {
                    "status": "Healthy",
                    "nodeCounts": {"registered": {"total": g.registered, "ready": g.registered}},
                    "cloudProviderTarget": g.target,
                    "minSize": g.min_size,
                    "maxSize": g.max_size,
                    "lastProbeTime": at,
                },
                "scaleUp": {"status": _scale_up(g), "lastProbeTime": at},
                "scaleDown": {"status": "NoCandidates", "candidates": 0},
            }
            for g in groups
        ],
    }
    return yaml.safe_dump(doc, sort_keys=False)
