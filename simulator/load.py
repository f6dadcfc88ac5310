"""Demand and how it reaches pods: a ``LoadModel``, chosen by the scenario's ``load.model``.

A load model answers two questions each step: how much demand there is, and how it lands on the ready
pods of each cluster (which sets their CPU use, which the native HPAs read). The engine asks nothing
else, so a new model (a geo load balancer with fixed shares, a queue) plugs in without touching the
run loop. The default, ``equalShare``, is the model the seeds were written for.

``equalShare`` assumes the pods of all clusters share the load equally (a global load balancer spreading
requests by pod). A pod serves at most ``pod_capacity`` rps, at which it runs at 100% of its CPU
request; its CPU utilization is its share over that capacity (it can be above 100%: the pod is
overloaded, requests queue, and what exceeds the ready pods' capacity is counted as unserved).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from simulator.cluster import CPU_REQUEST_MILLI


class TraceError(ValueError):
    """A load trace that cannot be interpolated."""


@dataclass(frozen=True)
class Trace:
    """(seconds since t=0, rps) points, linear in between, flat before the first and after the last."""

    times: tuple[float, ...]
    rps: tuple[float, ...]

    @classmethod
    def from_points(cls, points: Sequence[tuple[float, float]]) -> Trace:
        if not points:
            raise TraceError("a load trace needs at least one point")
        times = [t for t, _ in points]
        if any(b <= a for a, b in itertools.pairwise(times)):
            raise TraceError(f"trace times must strictly increase, got {times}")
        if any(r < 0 for _, r in points):
            raise TraceError("trace rps must be >= 0")
        return cls(tuple(times), tuple(float(r) for _, r in points))

    def at(self, seconds: float) -> float:
        i = bisect.bisect_right(self.times, seconds)
        if i == 0:
            return self.rps[0]
        if i == len(self.times):
            return self.rps[-1]
        t0, t1 = self.times[i - 1], self.times[i]
        r0, r1 = self.rps[i - 1], self.rps[i]
        return r0 + (r1 - r0) * (seconds - t0) / (t1 - t0)


@dataclass(frozen=True)
class LoadShare:
    """How one instant's demand lands on the fleet."""

    demand_rps: float
    per_pod_rps: float  # each ready pod's share
    usage_per_pod_milli: int  # CPU a ready pod uses, in millicores (request: CPU_REQUEST_MILLI)
    served_by_cluster: dict[str, float]

    @property
    def served_rps(self) -> float:
        return sum(self.served_by_cluster.values())

    @property
    def unserved_rps(self) -> float:
        return max(0.0, self.demand_rps - self.served_rps)

    @property
    def utilization_percent(self) -> float:
        return 100.0 * self.usage_per_pod_milli / CPU_REQUEST_MILLI


def share_load(demand_rps: float, ready_by_cluster: Mapping[str, int], pod_capacity: float) -> LoadShare:
    """Split ``demand_rps`` equally over the ready pods of the clusters that take traffic."""
    if pod_capacity <= 0:
        raise ValueError(f"pod capacity must be > 0 rps, got {pod_capacity}")
    ready = sum(ready_by_cluster.values())
    per_pod = demand_rps / ready if ready else 0.0
    served_per_pod = min(per_pod, pod_capacity)
    usage = int(per_pod / pod_capacity * CPU_REQUEST_MILLI)
    served = {name: count * served_per_pod for name, count in ready_by_cluster.items()}
    return LoadShare(demand_rps, per_pod, usage, served)


class LoadModel(Protocol):
    """What the engine needs from a load model: the demand at an instant and how it lands on pods."""

    @property
    def pod_capacity(self) -> float:
        """rps one pod serves at 100% CPU (the oracle counts the fleet's room in these)."""
        ...

    def demand(self, seconds: float) -> float:
        """The fleet's demand in rps, ``seconds`` after t=0."""
        ...

    def share(self, demand_rps: float, ready_by_cluster: Mapping[str, int]) -> LoadShare:
        """How ``demand_rps`` lands on the ready pods of the clusters that take traffic."""
        ...


@dataclass(frozen=True)
class EqualShare:
    """A trace of demand, spread equally over every ready pod of the fleet (a load balancer by pod)."""

    trace: Trace
    pod_capacity: float

    def demand(self, seconds: float) -> float:
        return self.trace.at(seconds)

    def share(self, demand_rps: float, ready_by_cluster: Mapping[str, int]) -> LoadShare:
        return share_load(demand_rps, ready_by_cluster, self.pod_capacity)


LOAD_MODELS: dict[str, Callable[[Trace, float], LoadModel]] = {"equalShare": EqualShare}
"""The models a scenario may name in ``load.model``, each built from its trace and pod capacity."""
