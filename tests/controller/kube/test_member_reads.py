"""What the member adapter reads (controller.kube.member_reads) that needs no cluster: counting a
workload's pods (the reads against a served cluster are in test_member.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.kube.member_reads import pod_counts
from tests.support.fakekube_builders import pod

pod_states = st.fixed_dictionaries(
    {
        "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        "unschedulable": st.booleans(),
        "ready": st.booleans(),
        "bound": st.booleans(),
        "terminating": st.booleans(),
    }
)


@settings(max_examples=200)
@given(states=st.lists(pod_states, max_size=12))
def test_pod_counts_partition_the_live_pods(states: list[dict[str, Any]]) -> None:
    pods = []
    for s in states:
        p = pod("p", unschedulable=s["unschedulable"], ready=s["ready"], phase=s["phase"], node_name="n")
        if not s["bound"]:
            p["spec"].pop("nodeName", None)
        if s["terminating"]:
            p["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
        pods.append(p)
    ready, pending, running = pod_counts(pods)
    live = [s for s in states if s["phase"] not in ("Succeeded", "Failed")]
    assert pending == sum(1 for s in live if s["unschedulable"])
    assert ready + pending <= len(live) and running + pending <= len(live)
    assert ready == sum(1 for s in live if not s["unschedulable"] and s["ready"] and not s["terminating"])
