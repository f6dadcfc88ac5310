"""Builders shared by the planner tests: FederatedHPAs, observations, and applying a plan's effects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.planning.member_hpa import template_digest
from controller.planning.observation import ClusterObservation, MemberHPAObservation
from controller.planning.plan import Plan
from controller.planning.planner import PlannerConfig, plan
from fhpa_api.models import Condition, FederatedHPA

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CONFIG = PlannerConfig()


def fhpa(
    policy: str = "Duplicated",
    min_replicas: int = 1,
    max_replicas: int = 10,
    clusters: list[str] | None = None,
    weights: dict[str, int] | None = None,
    priorities: dict[str, int] | None = None,
    generation: int = 1,
    **spec: Any,
) -> FederatedHPA:
    prefs = []
    for name, w in (weights or {}).items():
        prefs.append({"targetCluster": {"clusterNames": [name]}, "staticWeight": w})
    for name, p in (priorities or {}).items():
        prefs.append({"targetCluster": {"clusterNames": [name]}, "priority": p})
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "federatedHPAAssignment": {
            "federatedHPAAssignmentType": policy,
            "clusterAutoscalingPreference": prefs,
        },
        **spec,
    }
    if clusters is not None:
        body["clusterAffinity"] = {"clusterNames": clusters}
    return FederatedHPA.model_validate(
        {
            "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "generation": generation},
            "spec": body,
        }
    )


def obs(name: str, current: int = 0, available: int | None = None, **fields: Any) -> ClusterObservation:
    fields.setdefault("ready_replicas", current)
    return ClusterObservation(name=name, current_replicas=current, available_replicas=available, **fields)


def owned_hpa(
    f: FederatedHPA, lo: int, hi: int, current: int, desired: int | None = None, limited: bool = False
) -> MemberHPAObservation:
    conditions = [Condition(type="ScalingLimited", status="True" if limited else "False")]
    return MemberHPAObservation(
        name="web",
        owned=True,
        min_replicas=lo,
        max_replicas=hi,
        current_replicas=current,
        desired_replicas=current if desired is None else desired,
        template_digest=template_digest(f),
        conditions=conditions,
    )


def bounds(p: Plan) -> dict[str, tuple[int, int]]:
    """min/max per cluster holding an HPA, from the plan's status."""
    return {
        r.name: (r.min_replicas or 0, r.max_replicas or 0)
        for r in p.status.clusters or []
        if (r.max_replicas or 0) > 0
    }


def hpa_bounds(p: Plan) -> dict[str, tuple[int, int]]:
    return {a.cluster: (a.min_replicas or 0, a.max_replicas or 0) for a in p.hpa_actions if a.op != "delete"}


def writes(p: Plan) -> dict[str, int]:
    return {w.cluster: w.replicas for w in p.replica_writes}


def apply(
    f: FederatedHPA, observations: list[ClusterObservation], p: Plan
) -> tuple[FederatedHPA, list[ClusterObservation]]:
    """What the fleet looks like once the executor carried out ``p`` (member HPAs idle at current)."""
    actions = {a.cluster: a for a in p.hpa_actions}
    replicas = writes(p)
    result = []
    for o in observations:
        current = replicas.get(o.name, o.current_replicas)
        hpa = o.hpa
        action = actions.get(o.name)
        if action is not None and action.op == "delete":
            hpa = None
        elif action is not None:
            hpa = owned_hpa(f, action.min_replicas or 0, action.max_replicas or 0, current)
        elif hpa is not None and hpa.owned:
            hpa = hpa.model_copy(update={"current_replicas": current, "desired_replicas": current})
        ready = current if o.name in replicas else o.ready_replicas
        result.append(o.model_copy(update={"current_replicas": current, "ready_replicas": ready, "hpa": hpa}))
    return f.model_copy(update={"status": p.status}), result


def run(
    f: FederatedHPA,
    observations: list[ClusterObservation],
    now: datetime = T0,
    config: PlannerConfig = CONFIG,
) -> Plan:
    return plan(f, observations, now, config)


def settle(
    f: FederatedHPA,
    observations: list[ClusterObservation],
    now: datetime = T0,
    config: PlannerConfig = CONFIG,
) -> tuple[FederatedHPA, list[ClusterObservation], Plan]:
    """Plan once and apply the plan: the fleet as the next pass sees it."""
    p = plan(f, observations, now, config)
    f2, o2 = apply(f, observations, p)
    return f2, o2, p


def update(observations: list[ClusterObservation], name: str, **fields: Any) -> list[ClusterObservation]:
    """The fleet with one cluster's observation changed (HPA fields via hpa_*: desired, limited)."""
    result = []
    for o in observations:
        if o.name != name:
            result.append(o)
            continue
        hpa_fields = {k[4:]: fields.pop(k) for k in list(fields) if k.startswith("hpa_")}
        changed = o.model_copy(update=fields)
        if hpa_fields and changed.hpa is not None:
            hpa_update: dict[str, Any] = {"current_replicas": changed.current_replicas}
            if "desired" in hpa_fields:
                hpa_update["desired_replicas"] = hpa_fields["desired"]
            if "limited" in hpa_fields:
                desired = hpa_fields.get("desired", changed.hpa.desired_replicas)
                if not hpa_fields["limited"]:
                    limited = Condition(type="ScalingLimited", status="False", reason="DesiredWithinRange")
                elif desired > changed.hpa.max_replicas:
                    limited = Condition(type="ScalingLimited", status="True", reason="TooManyReplicas")
                else:
                    limited = Condition(type="ScalingLimited", status="True", reason="TooFewReplicas")
                hpa_update["conditions"] = [limited]
            changed = changed.model_copy(update={"hpa": changed.hpa.model_copy(update=hpa_update)})
        result.append(changed)
    return result


def row(p: Plan, name: str) -> Any:
    return next(r for r in p.status.clusters or [] if r.name == name)


def reasons(p: Plan) -> list[str]:
    return [e.reason for e in p.events]


def condition(p: Plan, cluster: str, type_: str) -> Condition:
    """The condition of ``type_`` on ``cluster``'s status row."""
    return next(c for c in row(p, cluster).conditions if c.type == type_)
