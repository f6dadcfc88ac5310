"""A CronFederatedHPA in a namespace the controller may not act in runs no rule (security review M5)."""

from __future__ import annotations

from controller.cron_controller import CronController
from controller.planning.namespaces import REASON_NAMESPACE_NOT_ALLOWED, NamespacePolicy
from tests.controller.test_cron_controller import FHPA_REF, NS, at, make_cron, make_fhpa, rule
from tests.support.fakes import FakeControlPlane

DENY_SHOP = NamespacePolicy(deny=("kube-*", "sho?"))


def world(ref: dict[str, str] | None = None) -> FakeControlPlane:
    cp = FakeControlPlane()
    cp.workloads[(NS, "Deployment", "web")] = 1
    cp.add(make_fhpa())
    rules = [{"name": "r", "schedule": "3 * * * *", "targetMinReplicas": 8}] if ref else [rule()]
    cp.add(make_cron(rules, ref, at(9, 1)))
    return cp


def ready(cp: FakeControlPlane) -> tuple[str, str, str]:
    status = cp.crons[(NS, "peak")].status
    assert status is not None
    found = [c for c in status.conditions or [] if c.type == "Ready"]
    assert len(found) == 1
    return found[0].status, found[0].reason or "", found[0].message or ""


def test_a_due_fire_in_a_denied_namespace_scales_nothing_and_says_why_once() -> None:
    cp = world()
    ctl = CronController(cp, namespaces=DENY_SHOP)
    assert ctl.reconcile(NS, "peak", at(9, 3)) is None  # no timer: nothing to wake up for
    assert cp.scale_calls == []
    status, reason, message = ready(cp)
    assert (status, reason) == ("False", REASON_NAMESPACE_NOT_ALLOWED)
    assert "namespace shop matches --deny-namespaces pattern 'sho?'" in message
    assert [(e.type, e.reason) for e in cp.events] == [("Warning", REASON_NAMESPACE_NOT_ALLOWED)]
    writes = cp.status_writes
    ctl.reconcile(NS, "peak", at(9, 3, 10))  # again: nothing new to say
    assert cp.status_writes == writes and len(cp.events) == 1 and cp.scale_calls == []


def test_a_federated_hpa_target_in_a_namespace_off_the_allow_list_is_not_patched() -> None:
    cp = world(FHPA_REF)
    CronController(cp, namespaces=NamespacePolicy(allow=("team-*",))).reconcile(NS, "peak", at(9, 3))
    assert cp.patch_calls == [] and cp.scale_calls == []
    assert "matches no --allow-namespaces pattern (team-*)" in ready(cp)[2]
    control = world(FHPA_REF)  # the same fire with the namespace allowed patches the bounds
    CronController(control, namespaces=NamespacePolicy()).reconcile(NS, "peak", at(9, 3))
    assert control.patch_calls


def test_allowed_again_the_rules_run_and_the_refusal_is_dropped() -> None:
    cp = world()
    CronController(cp, namespaces=DENY_SHOP).reconcile(NS, "peak", at(9, 3))
    CronController(cp, namespaces=NamespacePolicy()).reconcile(NS, "peak", at(9, 3, 5))
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]
    status = cp.crons[(NS, "peak")].status
    assert status is not None
    assert not any(c.reason == REASON_NAMESPACE_NOT_ALLOWED for c in status.conditions or [])


def test_without_a_policy_every_namespace_is_acted_on() -> None:
    cp = world()
    CronController(cp).reconcile(NS, "peak", at(9, 3))
    assert cp.scale_calls == [(NS, "Deployment", "web", 5)]
