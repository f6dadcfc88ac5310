"""What a run records: one sample per cluster per step, and the step that holds them.

Kept apart from the run loop so that what measures a run (``promises``, ``report``) reads plain records
and never imports the loop that produced them: a baseline, a test or a replay can build samples too.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ClusterSample:
    """One cluster during one step, as it was after the step's controller passes."""

    replicas: int  # the workload's spec.replicas
    ready: int
    starting: int  # scheduled, not Ready yet
    pending: int  # unschedulable
    capacity: int
    down: bool
    hpa_min: int | None  # the member HPA this FederatedHPA owns; None: it has none here
    hpa_max: int | None
    hpa_desired: int | None
    utilization: float  # CPU % of a ready pod, as its HPA saw it this step
    served_rps: float
    selected: bool = True  # selected by the clusterAffinity and not tainted NoExecute
    workload: bool = True  # the workload is propagated here
    foreign_hpa: bool = False  # an HPA this FederatedHPA does not own targets the workload
    drained: bool = False  # the controller wrote the workload's replicas down this step
    nodes: int = 0  # nodes of its cluster-autoscaler group (0: fixed capacity)
    quota_refused: int = 0  # replicas the namespace quota refused (never created)
    cost_per_hour: float = 0.0  # what the cluster cost during this step, per hour
    elastic_room: int = 0  # pods its node group can still add (within the quota)
    provision_s: float = 0.0  # how long a new node takes in its node group
    quota_pods: int | None = None  # the namespace quota on pods (None: none)
    failover_grace_s: float | None = None  # its grace now, as the simulator judges it (None: not recorded)


@dataclass
class StepSample:
    t: float  # seconds since t=0
    demand_rps: float
    served_rps: float
    oracle_rps: float
    controller_up: bool
    fhpa_min: int
    fhpa_max: int
    clusters: dict[str, ClusterSample]
    actions: list[str] = field(default_factory=list)  # member writes the controller did this step
