"""What the initial assignment's split read and gave each cluster, as status records it.

The split of DESIGN §3 reads every candidate's room at one instant (firm plus elastic) and, for the
weighted policies, a weight; later passes see other rooms. An explanation that recomputed the split
from the status of a later pass would print numbers the controller never used, so the assignment
records its inputs and results per cluster (``SplitStatus``) and the explanation prints those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.planning.affinity import priority
from controller.planning.observation import ClusterObservation
from controller.planning.policies import policy_of
from controller.planning.policies.base import ByWeight
from controller.planning.policy import excess_home
from fhpa_api.models import FederatedHPA, SplitStatus

PRIORITIZED = "Prioritized"


def split_records(
    fhpa: FederatedHPA,
    candidates: Sequence[ClusterObservation],
    room: Mapping[str, int | None],
    order: Sequence[str],
    maxes: Mapping[str, int],
    min_shares: Mapping[str, int],
    excess: int,
) -> dict[str, SplitStatus]:
    """One record per candidate: ``room`` as the split read it, ``maxes`` the capped max shares with the
    ``excess`` already placed where §3 puts it (:func:`excess_home`), ``min_shares`` the split of F.min."""
    policy = policy_of(fhpa)
    rank = {name: i + 1 for i, name in enumerate(order)}
    first = excess_home(fhpa, candidates) if candidates else None
    records = {}
    for cluster in candidates:
        name = cluster.name
        records[name] = SplitStatus(
            room=room.get(name),
            weight=policy.weight(fhpa, cluster) if isinstance(policy, ByWeight) else None,
            priority=priority(fhpa.spec.preferences, cluster) if policy.name == PRIORITIZED else None,
            rank=rank.get(name),
            max_share=maxes.get(name, 0),
            min_share=min_shares.get(name, 0),
            excess=excess if name == first and excess else None,
        )
    return records
