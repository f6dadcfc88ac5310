"""Member writes for tests: the plan's actions built from the few fields a test cares about.

The member port has one write entry point taking a plan's action; a test that wants "apply this spec"
or "scale to n" says so through these rather than building the action by hand each time.
"""

from __future__ import annotations

from controller.planning.plan import HPAAction, Observed, ReplicaWrite
from controller.ports import MemberCluster
from fhpa_api.models import FederatedHPA


def apply_hpa(
    member: MemberCluster,
    fhpa: FederatedHPA,
    spec: dict[str, object],
    observed: Observed | None = None,
    decision: str | None = None,
) -> None:
    """Create or update ``fhpa``'s member HPA with ``spec``."""
    action = HPAAction(
        cluster=member.identity.name, op="update", spec=spec, observed=observed, decision=decision
    )
    member.write(fhpa, action)


def delete_hpa(member: MemberCluster, fhpa: FederatedHPA, observed: Observed | None = None) -> None:
    """Delete ``fhpa``'s member HPA."""
    member.write(fhpa, HPAAction(cluster=member.identity.name, op="delete", observed=observed))


def scale(member: MemberCluster, fhpa: FederatedHPA, replicas: int, observed: Observed | None = None) -> None:
    """Set the replicas of ``fhpa``'s scale target in ``member``."""
    member.write(
        fhpa, ReplicaWrite(cluster=member.identity.name, replicas=replicas, reason="test", observed=observed)
    )
