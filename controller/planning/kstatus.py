"""The two conditions kstatus reads (and so Flux's health checks), derived from those we already write.

kstatus, the status library Flux and kpt use, computes a custom resource's state from
`metadata.deletionTimestamp` (Terminating), `status.observedGeneration` behind `metadata.generation`
(InProgress), and two "abnormal-true" conditions: `Reconciling=True` (InProgress) and `Stalled=True`
(Failed); with none of them it reports Current. Our `Ready=False` alone would read as Current, so a
refused namespace or a FederatedHPA no cluster can hold would pass a Flux health check.

Rather than a second source of truth, both conditions mirror one we write already: `Stalled` mirrors
`Ready=False` (reason and message included: the controller keeps retrying, but the user must act), and
`Reconciling` mirrors a CronFederatedHPA's `Executing=True` (a fire being applied). They exist only while
true, as kstatus' convention for abnormal-true conditions has it, and keep the transition time of the
condition they mirror, so rewriting them from the same input changes nothing.
"""

from __future__ import annotations

from fhpa_api.models import Condition

STALLED = "Stalled"
RECONCILING = "Reconciling"
MIRRORS = ((STALLED, "Ready", "False"), (RECONCILING, "Executing", "True"))


def with_kstatus(conditions: list[Condition]) -> list[Condition]:
    """`conditions` with Stalled and Reconciling recomputed from the conditions they mirror."""
    own = [c for c in conditions if c.type not in (STALLED, RECONCILING)]
    derived = [
        source.model_copy(update={"type": target, "status": "True"})
        for target, source_type, when in MIRRORS
        for source in own
        if source.type == source_type and source.status == when
    ]
    return own + derived
