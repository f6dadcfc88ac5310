"""One reconcile of one FederatedHPA: observe every member cluster, plan, execute.

The simulator and the real controller both call this function; only the ports differ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from controller.errors import ClusterUnreachableError, PortError
from controller.executor import ActionHook, ExecutionResult, execute
from controller.planning.observation import ClusterObservation
from controller.planning.plan import Plan, bind
from controller.planning.planner import PlannerConfig, plan
from controller.ports import Clock, ControlPlane, MemberCluster
from fhpa_api.models import FederatedHPA

log = logging.getLogger(__name__)

PassHook = Callable[[FederatedHPA, Plan, ExecutionResult], None]
"""Called after every pass with the object as read, the plan and what the executor did (metrics: the
failovers, rejoins and moves that the stored status shows). The planner stays pure: what happened is
read from the result, not announced by the planner."""


def observe_all(fhpa: FederatedHPA, members: Mapping[str, MemberCluster]) -> list[ClusterObservation]:
    """Observe every registered cluster; one that cannot be observed is reported unhealthy, not skipped.

    Any port error counts (an unreachable cluster, or one that refuses the reads we need): the planner
    cannot act on a cluster it cannot see, and the failover grace period decides what follows.
    """
    observations = []
    for name in sorted(members):
        member = members[name]
        try:
            observations.append(member.observe(fhpa))
        except PortError as exc:
            ident = member.identity
            detail = exc.detail if isinstance(exc, ClusterUnreachableError) else str(exc)
            log.info("cluster not observable", extra={"cluster": name, "error": detail})
            observations.append(ident.observed(healthy=False, unobserved=detail))
    return observations


def reconcile_federated_hpa(
    fhpa: FederatedHPA,
    members: Mapping[str, MemberCluster],
    control_plane: ControlPlane,
    clock: Clock,
    config: PlannerConfig | None = None,
    on_action: ActionHook | None = None,
    on_pass: PassHook | None = None,
) -> tuple[Plan, ExecutionResult]:
    observations = observe_all(fhpa, members)
    now = clock.now()
    # every member write is conditional on the observation the plan was made from (resourceVersions)
    the_plan = bind(plan(fhpa, observations, now, config or PlannerConfig()), fhpa, observations)
    current_max = {o.name: o.hpa.max_replicas for o in observations if o.hpa is not None}
    result = execute(the_plan, fhpa, members, control_plane, current_max, on_action, now)
    if on_pass is not None:
        on_pass(fhpa, the_plan, result)
    return the_plan, result
