"""The member-cluster registry: Secrets in, members and health out, secrets never in the logs."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from kubernetes.client import V1ObjectMeta, V1Secret

from controller.errors import ClusterUnreachableError
from controller.kube.clients import Timeouts
from controller.kube.registry import (
    ANNOTATION_ALLOW_INSECURE_TLS,
    ANNOTATION_ALLOW_PROXY_URL,
    ANNOTATION_CONTEXT,
    ANNOTATION_REGION,
    ANNOTATION_TAINTS,
    ANNOTATION_ZONE,
    MEMBER_LABEL,
    TOPOLOGY_REGION,
    MemberRegistry,
    default_factory,
)
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA, FederatedHPASpec, ObjectMeta
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node, pod

NS = "fhpa-system"
TOKEN = "s3cr3t-token-value"


def secret(
    name: str,
    kubeconfig: dict[str, Any] | str | None,
    rv: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    namespace: str = NS,
    marker: str | None = "true",
) -> dict[str, Any]:
    all_labels = {**(labels or {}), **({MEMBER_LABEL: marker} if marker else {})}
    data = {}
    if kubeconfig is not None:
        text = kubeconfig if isinstance(kubeconfig, str) else yaml.safe_dump(kubeconfig)
        data["kubeconfig"] = base64.b64encode(text.encode()).decode()
    meta = {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": all_labels}
    return {"metadata": {**meta, "annotations": annotations or {}}, "data": data}


def fhpa() -> FederatedHPA:
    return FederatedHPA(
        metadata=ObjectMeta(name="web", namespace="default", uid="u1"),
        spec=FederatedHPASpec(
            scale_target_ref=CrossVersionObjectReference(
                api_version="apps/v1", kind="Deployment", name="web"
            ),
            max_replicas=5,
        ),
    )


@pytest.fixture
def fakes() -> Iterator[tuple[FakeKube, FakeKube]]:
    # TLS: a kubeconfig from a Secret may send its token only over https
    with FakeKube(stall_seconds=3, tls=True) as a, FakeKube(stall_seconds=3, tls=True) as b:
        for fk, replicas in ((a, 2), (b, 4)):
            fk.store.put("nodes", node("n1"))
            fk.store.put("deployments", deployment("web", replicas=replicas))
            fk.store.put("pods", pod("web-1", labels={"app": "web"}, node_name="n1"))
        yield a, b


@pytest.fixture
def registry() -> Iterator[MemberRegistry]:
    reg = MemberRegistry(NS, Timeouts(connect=0.5, read=1.0, probe=0.5))
    yield reg
    reg.close()


def test_only_labelled_secrets_in_our_namespace_are_members(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube]
) -> None:
    a, b = fakes
    change = registry.sync_from_secrets(
        [
            secret("east", a.kubeconfig(TOKEN), labels={"env": "prod"}),
            secret("west", b.kubeconfig(TOKEN)),
            secret("elsewhere", a.kubeconfig(), namespace="other"),
            secret("unmarked", a.kubeconfig(), marker=None),
            secret("false", a.kubeconfig(), marker="false"),
        ]
    )
    assert change.added == ["east", "west"]
    assert sorted(registry.members()) == ["east", "west"]
    assert registry.identities()["east"].labels == {"env": "prod"}  # the marker is not a cluster label
    obs = registry.members()["west"].observe(fhpa())
    assert obs.name == "west" and obs.current_replicas == 4


def test_identity_fields_from_annotations_and_topology_labels(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube]
) -> None:
    a, _ = fakes
    taints = [{"key": "maintenance", "effect": "NoExecute"}]
    registry.sync_from_secrets(
        [
            secret(
                "east",
                a.kubeconfig(),
                labels={TOPOLOGY_REGION: "eu-west-1"},
                annotations={
                    "autoscaling.karmada.io/provider": "aws",
                    ANNOTATION_ZONE: "eu-west-1a",
                    ANNOTATION_TAINTS: json.dumps(taints),
                },
            ),
            secret(
                "west", a.kubeconfig(), annotations={ANNOTATION_REGION: "us", ANNOTATION_TAINTS: "not json"}
            ),
        ]
    )
    east = registry.identities()["east"]
    assert (east.provider, east.region, east.zone) == ("aws", "eu-west-1", "eu-west-1a")
    assert [(t.key, t.effect) for t in east.taints] == [("maintenance", "NoExecute")]
    west = registry.identities()["west"]
    assert west.region == "us" and west.taints == []  # a bad annotation is ignored, not fatal


def test_a_changed_kubeconfig_rebuilds_the_client_and_a_relabel_keeps_it(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube]
) -> None:
    a, b = fakes
    registry.sync_from_secrets([secret("c", a.kubeconfig(), rv="1")])
    assert registry.members()["c"].observe(fhpa()).current_replicas == 2
    inner = registry._entry("c").member

    change = registry.sync_from_secrets([secret("c", a.kubeconfig(), rv="2", labels={"tier": "gold"})])
    assert change.relabelled == ["c"] and registry._entry("c").member is inner
    assert registry.identities()["c"].labels == {"tier": "gold"}

    change = registry.sync_from_secrets([secret("c", b.kubeconfig(), rv="3", labels={"tier": "gold"})])
    assert change.rebuilt == ["c"] and registry._entry("c").member is not inner
    assert registry.members()["c"].observe(fhpa()).current_replicas == 4  # now talks to the new server

    same = registry.sync_from_secrets([secret("c", b.kubeconfig(), rv="3", labels={"tier": "gold"})])
    assert not same.changed


def test_removed_secrets_remove_their_clusters(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube]
) -> None:
    a, b = fakes
    registry.sync_from_secrets([secret("east", a.kubeconfig()), secret("west", b.kubeconfig())])
    held = registry.members()["east"]
    assert registry.sync_from_secrets([secret("west", b.kubeconfig())]).removed == ["east"]
    assert list(registry.members()) == ["west"]
    with pytest.raises(ClusterUnreachableError, match="no longer registered"):
        held.observe(fhpa())  # a reconcile that still holds it gets a clean error


def test_watch_events_feed_the_registry(registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube]) -> None:
    a, _ = fakes
    assert registry.apply_event("ADDED", secret("east", a.kubeconfig())).added == ["east"]
    assert registry.apply_event("BOOKMARK", {"metadata": {"resourceVersion": "9"}}).changed is False
    unmarked = secret("east", a.kubeconfig(), rv="2", marker=None)
    assert registry.apply_event("MODIFIED", unmarked).removed == ["east"]  # the label was taken off
    registry.apply_event("ADDED", secret("east", a.kubeconfig(), rv="3"))
    assert registry.apply_event("DELETED", secret("east", None)).removed == ["east"]
    assert registry.members() == {}


def test_kubernetes_client_secret_objects_are_accepted(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube]
) -> None:
    a, _ = fakes
    typed = V1Secret(
        metadata=V1ObjectMeta(
            name="typed", namespace=NS, resource_version="5", labels={MEMBER_LABEL: "true"}
        ),
        string_data={"kubeconfig": yaml.safe_dump(a.kubeconfig())},
    )
    registry.sync_from_secrets([typed, typed.to_dict()])
    assert registry.members()["typed"].observe(fhpa()).current_replicas == 2


def test_an_unusable_secret_registers_an_always_unhealthy_cluster(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube], caplog: pytest.LogCaptureFixture
) -> None:
    a, _ = fakes
    exec_config = a.kubeconfig(TOKEN)
    exec_config["users"][0]["user"] = {"exec": {"command": "/bin/steal", "args": [TOKEN]}}
    caplog.set_level(logging.DEBUG)
    registry.sync_from_secrets(
        [
            secret("noconfig", None),
            secret("notyaml", f"token: {TOKEN}\n  - : ]["),
            secret("exec", exec_config),
            secret("nocontext", {"clusters": [], "users": [], "contexts": [], "token": TOKEN}),
        ]
    )
    problems = registry.problems()
    assert set(problems) == {"noconfig", "notyaml", "exec", "nocontext"}
    assert "exec" in problems["exec"] and "kubeconfig" in problems["noconfig"]
    health = registry.probe_all()
    assert all(h.healthy is False for h in health.values())
    with pytest.raises(ClusterUnreachableError, match="not supported"):
        registry.members()["exec"].observe(fhpa())
    logged = " ".join(str(vars(record)) for record in caplog.records)
    assert TOKEN not in logged and TOKEN not in json.dumps(problems)


SA_TOKEN = "eyJhbGciOi.CONTROLLER-SA-TOKEN.sig"


def _with(config: dict[str, Any], section: str, **fields: Any) -> dict[str, Any]:
    config[section][0][section[:-1]].update({k.replace("_", "-"): v for k, v in fields.items()})
    return config


def test_malformed_kubeconfigs_of_every_shape_register_broken_clusters(
    registry: MemberRegistry,
    fakes: tuple[FakeKube, FakeKube],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Any,
) -> None:
    """Security review H1 and M2: a path-based kubeconfig, and each shape that used to raise something other
    than KubeconfigError (the cluster then never registered), is a broken member with a reason."""
    a, _ = fakes
    token_file = tmp_path / "token"
    token_file.write_text(SA_TOKEN)
    tokenfile = a.kubeconfig(TOKEN)
    tokenfile["users"][0]["user"] = {"tokenFile": str(token_file)}
    plain_http = _with(a.kubeconfig(TOKEN), "clusters", server="http://127.0.0.1:1")
    shapes = {
        "tokenfile": (tokenfile, "tokenFile names a file"),
        "cafile": (
            _with(a.kubeconfig(TOKEN), "clusters", certificate_authority=str(token_file)),
            "names a file",
        ),
        "http": (plain_http, "http://"),
        "clusters-str": ({**a.kubeconfig(TOKEN), "clusters": TOKEN}, "clusters must be a list, not str"),
        "users-list": ({**a.kubeconfig(TOKEN), "users": [[TOKEN]]}, "must be a mapping, not list"),
        "token-list": (
            _with(a.kubeconfig(), "users", token=[TOKEN]),
            "user.token must be a string, not list",
        ),
        "server-int": (_with(a.kubeconfig(TOKEN), "clusters", server=6443), "must be a string, not int"),
        "bad-pem": (
            _with(
                a.kubeconfig(TOKEN), "clusters", certificate_authority_data=base64.b64encode(b"x").decode()
            ),
            "not a PEM certificate",
        ),
        "bad-timestamp": (f"token: {TOKEN}\nwhen: 2001-13-45\n", "cannot be parsed (ValueError)"),
        "insecure": (
            _with(a.kubeconfig(TOKEN), "clusters", insecure_skip_tls_verify=True),
            "allow-insecure-tls",
        ),
    }
    caplog.set_level(logging.DEBUG)
    change = registry.sync_from_secrets([secret(name, config) for name, (config, _) in shapes.items()])
    assert sorted(change.added) == sorted(shapes)
    problems = registry.problems()
    for name, (_, message) in shapes.items():
        assert message in problems[name], name
    assert all(h.healthy is False for h in registry.probe_all().values())
    with pytest.raises(ClusterUnreachableError, match="tokenFile names a file"):
        registry.members()["tokenfile"].observe(fhpa())
    assert a.requests == []  # no cluster was ever called, so no token went anywhere
    logged = " ".join(str(vars(record)) for record in caplog.records)
    for secret_text in (TOKEN, SA_TOKEN):
        assert secret_text not in logged and secret_text not in json.dumps(problems)


def test_a_secret_modified_into_a_malformed_one_replaces_the_working_client(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube], caplog: pytest.LogCaptureFixture
) -> None:
    """Security review M2: a rotation gone wrong used to leave the old client and credentials in use,
    with no problem reported and the old resourceVersion kept."""
    a, _ = fakes
    registry.apply_event("ADDED", secret("c", a.kubeconfig(TOKEN), rv="1"))
    assert registry.members()["c"].observe(fhpa()).healthy
    old = registry._entry("c").member
    caplog.set_level(logging.INFO)
    broken = a.kubeconfig(TOKEN)
    broken["contexts"] = {"fake": {"cluster": "fake"}}  # a map where a list belongs
    change = registry.apply_event("MODIFIED", secret("c", broken, rv="2"))
    assert change.rebuilt == ["c"]
    assert registry._entry("c").member is not old and registry._entry("c").resource_version == "2"
    assert "contexts must be a list, not dict" in registry.problems()["c"]
    assert registry.health("c").healthy is False  # type: ignore[union-attr]
    before = len(a.requests)
    with pytest.raises(ClusterUnreachableError, match="contexts must be a list"):
        registry.members()["c"].observe(fhpa())
    with pytest.raises(ClusterUnreachableError, match="unusable kubeconfig Secret"):
        registry._entry("c").member.observe(fhpa())
    assert len(a.requests) == before  # the old credentials are no longer used
    assert any("now unusable" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    registry.apply_event("MODIFIED", secret("c", a.kubeconfig(TOKEN), rv="3"))  # fixed again
    assert registry.problems() == {} and registry.members()["c"].observe(fhpa()).healthy


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_insecure_tls_and_proxy_url_only_with_the_opt_in_annotations_and_a_warning(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube], caplog: pytest.LogCaptureFixture
) -> None:
    a, _ = fakes
    insecure = a.kubeconfig(TOKEN)
    del insecure["clusters"][0]["cluster"]["certificate-authority-data"]
    insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    proxied = _with(a.kubeconfig(TOKEN), "clusters", proxy_url="http://127.0.0.1:1")
    caplog.set_level(logging.INFO)
    registry.sync_from_secrets([secret("insecure", insecure), secret("proxied", proxied)])
    assert "allow-insecure-tls" in registry.problems()["insecure"]
    assert "allow-proxy-url" in registry.problems()["proxied"]
    assert registry.warnings() == {}

    registry.sync_from_secrets(
        [
            secret("insecure", insecure, rv="2", annotations={ANNOTATION_ALLOW_INSECURE_TLS: "true"}),
            secret("proxied", proxied, rv="2", annotations={ANNOTATION_ALLOW_PROXY_URL: "true"}),
        ]
    )
    assert registry.problems() == {}
    assert registry.members()["insecure"].observe(fhpa()).current_replicas == 2
    warnings = registry.warnings()
    assert "insecure-skip-tls-verify" in warnings["insecure"] and "proxy-url" in warnings["proxied"]
    warned = [
        r for r in caplog.records if r.levelno == logging.WARNING and "insecure setting" in r.getMessage()
    ]
    assert {getattr(r, "cluster", None) for r in warned} == {"insecure", "proxied"}

    # taking the annotation away refuses the kubeconfig again (the opt-in is part of what is compared)
    registry.sync_from_secrets([secret("insecure", insecure, rv="3"), secret("proxied", proxied, rv="2")])
    assert "allow-insecure-tls" in registry.problems()["insecure"]


def test_probes_track_health_and_short_circuit_observe(fakes: tuple[FakeKube, FakeKube]) -> None:
    a, b = fakes
    timeouts = Timeouts(connect=0.5, read=1.0, probe=0.5)
    # a zero window: every probe is a real GET /readyz (the passive path has its own test below)
    registry = MemberRegistry(
        NS, timeouts, factory=default_factory(timeouts, live_window_seconds=0.0, quiet_probe_seconds=0.0)
    )
    try:
        _probes_track_health(registry, a, b)
    finally:
        registry.close()


def test_a_member_whose_watches_answer_is_not_probed_until_they_fall_silent() -> None:
    """Passive health: watches that carried a line within the window stand for a probe; a member that
    stalls (TCP alive, nothing sent) gets a real probe, which fails, once the window has passed."""
    with FakeKube(stall_seconds=3, tls=True, bookmark_seconds=0.2) as a:
        a.store.put("nodes", node("n1"))
        a.store.put("deployments", deployment("web", replicas=2))
        timeouts = Timeouts(connect=0.5, read=1.0, probe=0.5)
        registry = MemberRegistry(NS, timeouts, factory=default_factory(timeouts, live_window_seconds=3.0))
        try:
            registry.sync_from_secrets([secret("east", a.kubeconfig())])
            assert registry.members()["east"].observe(fhpa()).current_replicas == 2  # synced and streaming
            probes = lambda: len(a.requests_matching("GET", r"^/(readyz|healthz)$"))  # noqa: E731
            before = probes()
            for _ in range(3):
                assert registry.probe_all()["east"].healthy
                time.sleep(0.3)
            assert probes() == before  # answered by the watches, not by a probe
            a.vanish(stall=True)
            time.sleep(3.5)  # the window (3 s) passes without a line
            assert registry.probe_all()["east"].healthy is False
        finally:
            registry.close()


def wait_for_observation(registry: MemberRegistry, name: str, timeout: float = 20.0) -> None:
    """A member back from an outage is observed once its watches have listed again."""
    end = time.monotonic() + timeout
    while True:
        try:
            assert registry.members()[name].observe(fhpa()).healthy
            return
        except ClusterUnreachableError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def test_a_quiet_member_is_probed_once_per_quiet_period() -> None:
    """Watches open but carrying nothing (a real API server: a bookmark a minute): one real probe, then
    none until the quiet period has passed, then one again."""
    with FakeKube(stall_seconds=3, tls=True, bookmark_seconds=1000) as a:
        a.store.put("nodes", node("n1"))
        a.store.put("deployments", deployment("web", replicas=2))
        timeouts = Timeouts(connect=0.5, read=1.0, probe=0.5)
        factory = default_factory(timeouts, live_window_seconds=0.5, quiet_probe_seconds=2.5)
        registry = MemberRegistry(NS, timeouts, factory=factory)
        try:
            registry.sync_from_secrets([secret("east", a.kubeconfig())])
            assert registry.members()["east"].observe(fhpa()).current_replicas == 2
            probes = lambda: len(a.requests_matching("GET", r"^/(readyz|healthz)$"))  # noqa: E731
            time.sleep(0.6)  # past the line window: only the quiet rule can spare a probe
            assert registry.probe_all()["east"].healthy
            first = probes()
            assert first >= 1
            assert registry.probe_all()["east"].healthy
            assert probes() == first  # within the quiet period: no request
            time.sleep(2.7)
            assert registry.probe_all()["east"].healthy
            assert probes() == first + 1
        finally:
            registry.close()


def _probes_track_health(registry: MemberRegistry, a: FakeKube, b: FakeKube) -> None:
    times = iter(datetime(2026, 11, 22, 12, m, tzinfo=UTC) for m in range(60))
    registry._clock = lambda: next(times)
    registry.sync_from_secrets([secret("east", a.kubeconfig()), secret("west", b.kubeconfig())])
    assert registry.health("east").healthy is None  # type: ignore[union-attr]
    first = registry.probe_all()
    assert first["east"].healthy and first["west"].healthy

    # a stall far longer than the probe's 0.5 s timeout, so a loaded machine cannot blur the two (with
    # the fixture's 3 s stall the bound had to be 2.5 s, and a make test run at load took 2.56 s)
    a.stall_seconds = 10.0
    a.vanish(stall=True)
    t0 = time.monotonic()
    second = registry.probe_all()
    assert time.monotonic() - t0 < 8  # the probe timeout, not the stall
    assert second["east"].healthy is False and second["east"].since is not None
    assert second["east"].consecutive_failures == 1 and second["east"].last_error
    assert second["west"].healthy and second["west"].since == first["west"].since

    before = len(a.requests)
    with pytest.raises(ClusterUnreachableError, match="health probe"):
        registry.members()["east"].observe(fhpa())
    assert len(a.requests) == before  # no request to a cluster known to be down

    a.reappear()
    assert registry.probe_all()["east"].healthy  # and the failing watches retry at once
    wait_for_observation(registry, "east", timeout=40)  # a watch stalled before may hold its 10 s


def test_health_survives_a_relabel_and_a_new_kubeconfig_starts_over(
    registry: MemberRegistry, fakes: tuple[FakeKube, FakeKube]
) -> None:
    a, b = fakes
    registry.sync_from_secrets([secret("c", a.kubeconfig(), rv="1")])
    a.vanish()
    registry.probe_all()
    registry.sync_from_secrets([secret("c", a.kubeconfig(), rv="2", labels={"x": "y"})])
    assert registry.health("c").healthy is False  # type: ignore[union-attr]
    registry.sync_from_secrets(
        [secret("c", b.kubeconfig(), rv="3", annotations={ANNOTATION_CONTEXT: "fake"})]
    )
    assert registry.health("c").healthy is None  # type: ignore[union-attr]
    assert registry.members()["c"].observe(fhpa()).healthy  # not refused on the old client's record
    registry.sync_from_secrets([secret("c", "garbage: [", rv="4")])
    assert registry.health("c").healthy is False  # type: ignore[union-attr]


def test_fed_from_a_list_and_watch_of_secrets_on_the_control_plane(fakes: tuple[FakeKube, FakeKube]) -> None:
    """The manager's way: list the Secrets, sync, then apply each watch event from the list's version."""
    from kubernetes import client, watch
    from kubernetes import config as kube_config

    member, _ = fakes
    with FakeKube(namespaces=("default", NS)) as control_plane:
        control_plane.store.create("secrets", secret("east", member.kubeconfig()))
        core: Any = client.CoreV1Api(kube_config.new_client_from_config_dict(control_plane.kubeconfig()))
        registry = MemberRegistry(NS, Timeouts(connect=0.5, read=1.0, probe=0.5))
        try:
            listed = core.list_namespaced_secret(NS, label_selector=f"{MEMBER_LABEL}=true")
            assert registry.sync_from_secrets(listed.items).added == ["east"]
            assert registry.members()["east"].observe(fhpa()).current_replicas == 2

            control_plane.store.create("secrets", secret("west", member.kubeconfig()))
            control_plane.store.delete("secrets", NS, "east")
            stream = watch.Watch().stream(
                core.list_namespaced_secret,
                NS,
                label_selector=f"{MEMBER_LABEL}=true",
                resource_version=listed.metadata.resource_version,
                timeout_seconds=1,
            )
            for event in stream:
                registry.apply_event(event["type"], event["object"])
            assert list(registry.members()) == ["west"]
        finally:
            registry.close()
