"""`fhpa cluster join`, `fhpa cluster list` and `fhpa cluster unjoin`: register member clusters without
hand-writing a kubeconfig into a Secret (as ``karmadactl join`` or ``kubefedctl join`` do).

join, with the operator's own kubeconfig for the member (``--kubeconfig``, any credential kubectl takes):
in the member it creates the controller's identity from ``manifests/member`` (``fhpa.member_access``):
the namespace, the ServiceAccount, its ClusterRole and binding (or Roles in ``--namespaces``) and a
ServiceAccount token Secret (``kubernetes.io/service-account-token``: long-lived, and served by every
Kubernetes version the controller supports, where a TokenRequest token would expire and need renewing).
It waits for the token controller to fill the token in, and writes on the management cluster the
labelled member Secret with a kubeconfig of inline credentials only, which it first checks with the
controller's own ``build_configuration``. Running it again changes only what differs.

The token is never printed: ``--dry-run`` shows a placeholder in its place and makes no request.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.errors import ConflictError, NotFoundError, PortError
from controller.kube.clients import (
    KubeClient,
    KubeconfigError,
    Timeouts,
    build_api_client,
    build_configuration,
)
from controller.kube.member import KubeMemberCluster
from controller.kube.registry import (
    ANNOTATION_CONTEXT,
    MEMBER_LABEL,
    identity_of,
    policy_of,
    read_secret,
)
from controller.planning.wording import count
from fhpa import kubeconfig, leftovers
from fhpa import member_access as access
from fhpa.member_access import JoinError, MemberAccess
from fhpa_api.limits import shorten

DEFAULT_NAMESPACE = "federated-hpa-system"
TOKEN_PLACEHOLDER = "<the token of {ns}/{name}, filled in by the member's token controller>"
MANAGEMENT_TIMEOUTS = Timeouts(connect=5.0, read=30.0, probe=5.0)
PROBE_TIMEOUTS = Timeouts(connect=3.0, read=5.0, probe=3.0)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cluster", help="join, list and unjoin member clusters")
    actions = parser.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    _register_join(actions)
    _register_list(actions)
    _register_unjoin(actions)


def _management_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("management cluster")
    group.add_argument(
        "--management-kubeconfig",
        metavar="FILE",
        help="kubeconfig of the management cluster (default: $KUBECONFIG or ~/.kube/config)",
    )
    group.add_argument("--management-context", metavar="CTX", help="its context (default: current)")
    group.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        help=f"the controller's namespace, where member Secrets live (default {DEFAULT_NAMESPACE})",
    )


def _member_flags(parser: argparse.ArgumentParser, required: bool) -> None:
    group = parser.add_argument_group("member cluster")
    group.add_argument(
        "--kubeconfig",
        required=required,
        metavar="FILE",
        help="your kubeconfig for the member cluster (any credential kubectl accepts: it is used here "
        "only, never copied into the Secret)",
    )
    group.add_argument("--context", metavar="CTX", help="its context (default: current)")
    group.add_argument(
        "--member-manifests",
        type=Path,
        default=access.MANIFEST_DIR,
        metavar="DIR",
        help="the manifests/member directory whose objects are created (default: the repository's)",
    )


def _register_join(actions: argparse._SubParsersAction) -> None:
    join = actions.add_parser(
        "join",
        help="give the controller access to a member cluster and register it",
        description="Creates the controller's ServiceAccount, its RBAC (manifests/member) and a token in "
        "the member cluster, then the labelled member Secret on the management cluster. Idempotent.",
    )
    join.add_argument("name", help="the cluster's name (the member Secret's name)")
    _member_flags(join, required=True)
    join.add_argument("--labels", metavar="K=V,...", help="the cluster's labels, for labelSelector")
    join.add_argument("--provider", help="for clusterAffinity.fieldSelector")
    join.add_argument("--region", help="for clusterAffinity.fieldSelector")
    join.add_argument("--zone", help="for clusterAffinity.fieldSelector")
    join.add_argument(
        "--elastic-pods",
        type=int,
        metavar="N",
        help="the cluster grows nodes on demand, up to N more pods of a workload: for a cluster whose "
        "node autoscaler the controller cannot read (neither the cluster autoscaler's status nor "
        "Karpenter's NodePools)",
    )
    join.add_argument(
        "--server",
        metavar="URL",
        help="the member API server's URL as the controller reaches it from the management cluster "
        "(default: the one in --kubeconfig, which may be an address only your workstation reaches)",
    )
    join.add_argument(
        "--namespaces",
        metavar="A,B",
        help="grant access in these namespaces only (Roles; run the controller with the same "
        "--allow-namespaces); default: every namespace, kube-system included (a ClusterRole: see "
        "docs/design.md, Member clusters)",
    )
    join.add_argument(
        "--token-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the member's token controller to fill the token in (default 60)",
    )
    join.add_argument("--dry-run", action="store_true", help="print the objects; change nothing")
    _management_flags(join)
    join.set_defaults(func=guarded("join", _join))


def _register_list(actions: argparse._SubParsersAction) -> None:
    listing = actions.add_parser(
        "list",
        help="the member clusters, probed now",
        description="Lists the member Secrets and probes each member from here with the Secret's own "
        "kubeconfig (GET /readyz, /version, autoscaling discovery), in parallel.",
    )
    listing.add_argument("-o", "--output", choices=["table", "json"], default="table")
    _management_flags(listing)
    listing.set_defaults(func=guarded("list", _list))


def _register_unjoin(actions: argparse._SubParsersAction) -> None:
    unjoin = actions.add_parser(
        "unjoin",
        help="remove a member cluster: its Secret, and with --kubeconfig its access in the member",
        description="Deletes the member Secret on the management cluster and, given the member's "
        "kubeconfig, the RBAC, token and ServiceAccount join created there (the namespace is kept). "
        "It first lists the FederatedHPAs whose status has a row for the cluster, and refuses without "
        "--force when there are any: their member HPAs there would keep scaling with their last bounds, "
        "unseen by the controller, unless --delete-member-hpas removes them.",
    )
    unjoin.add_argument("name", help="the cluster's name")
    _member_flags(unjoin, required=False)
    unjoin.add_argument(
        "--namespaces",
        metavar="A,B",
        help="the namespaces a namespace-scoped join granted (default: as recorded on the member Secret)",
    )
    unjoin.add_argument(
        "--force",
        action="store_true",
        help="unjoin even though FederatedHPAs still plan with this cluster",
    )
    unjoin.add_argument(
        "--delete-member-hpas",
        action="store_true",
        help="also delete, in the member (needs --kubeconfig), the HPAs this controller created there "
        "(those carrying its owner labels)",
    )
    unjoin.add_argument("--dry-run", action="store_true", help="print what would be done; change nothing")
    _management_flags(unjoin)
    unjoin.set_defaults(func=guarded("unjoin", _unjoin))


# --- clients ----------------------------------------------------------------------------------------


def guarded(action: str, body: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``body`` with its failures as one line on stderr: exit 2 when the arguments must change
    (JoinError), 1 when a cluster refused or did not answer (PortError)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return body(args)
        except JoinError as exc:
            print(f"fhpa cluster {action}: {exc}", file=sys.stderr)
            return 2
        except PortError as exc:
            print(f"fhpa cluster {action}: {exc}", file=sys.stderr)
            return 1

    return run


def management_client(args: argparse.Namespace) -> KubeClient:
    return connect("management", args.management_kubeconfig, args.management_context, MANAGEMENT_TIMEOUTS)


def connect(name: str, config_file: str | None, context: str | None, timeouts: Timeouts) -> KubeClient:
    """A client from a kubeconfig the operator gave: any credential kubectl takes (it is theirs)."""
    try:
        api = kubeconfig.api_client(config_file, context)
    except kubeconfig.KubeconfigFileError as exc:
        raise JoinError(f"cannot use the kubeconfig for the {name} cluster: {exc}") from None
    return KubeClient(name, api, timeouts)


def server_of(client: KubeClient) -> tuple[str, bytes | None, str | None]:
    """The member's URL, its CA (PEM) and TLS server name, as the operator's kubeconfig has them."""
    conf = client.api.configuration
    ca: bytes | None = None
    if conf.ssl_ca_cert:
        ca = Path(conf.ssl_ca_cert).read_bytes()
    return str(conf.host), ca, getattr(conf, "tls_server_name", None) or None


def member_ca(kubeconfig_ca: bytes | None, token_ca: bytes | None, verified: bool) -> bytes:
    """The CA the member Secret pins: the one in the operator's kubeconfig, else the token Secret's.

    The token Secret's CA is what the member served; it is trusted only over a connection the
    operator's kubeconfig verified. With ``insecure-skip-tls-verify`` anyone in the path could have
    served their own, and the Secret written would look verified while pinning theirs."""
    if kubeconfig_ca:
        return kubeconfig_ca
    if not verified:
        raise JoinError(
            "your kubeconfig skips TLS verification of the member, so the CA it serves cannot be trusted; "
            "put the member's CA in your kubeconfig (certificate-authority-data) and join again"
        )
    if not token_ca:
        raise JoinError(
            "no CA for the member: neither your kubeconfig nor the token Secret carries one, and the "
            "controller accepts no kubeconfig without verified TLS"
        )
    return token_ca


# --- join -------------------------------------------------------------------------------------------


@dataclass
class JoinReport:
    """What join did, one line per object (never a credential)."""

    lines: list[str] = field(default_factory=list)

    def add(self, side: str, what: str, outcome: str) -> None:
        self.lines.append(f"{side:<10} {what}: {outcome}")


def _join(args: argparse.Namespace) -> int:
    name = access.check_cluster_name(args.name)
    labels = access.parse_labels(args.labels)
    namespaces = access.parse_namespaces(args.namespaces)
    elastic_pods = access.check_elastic_pods(args.elastic_pods)
    plan = access.member_objects(args.member_manifests, namespaces)
    member = connect("member", args.kubeconfig, args.context, MANAGEMENT_TIMEOUTS)
    server, ca, tls_name = server_of(member)
    server = args.server or server

    def secret_with(token: str, ca_pem: bytes) -> dict[str, Any]:
        user = plan.service_account[1]
        config = access.member_kubeconfig(name, server, ca_pem, token, user, tls_name)
        return access.member_secret(
            name,
            args.namespace,
            access.kubeconfig_text(config),
            labels,
            provider=args.provider,
            region=args.region,
            zone=args.zone,
            joined_namespaces=namespaces,
            elastic_pods=elastic_pods,
        )

    if args.dry_run:
        placeholder = TOKEN_PLACEHOLDER.format(ns=plan.token_secret[0], name=plan.token_secret[1])
        secret = access.redacted(secret_with("x", ca or b""), placeholder)
        print(render_dry_run(plan, secret, server))
        return 0

    management = management_client(args)
    report = JoinReport()
    for obj in plan.objects:
        report.add("member", access.describe(obj), apply_object(member, obj))
    token, token_ca = wait_for_token(member, plan.token_secret, args.token_timeout, plan.service_account[1])
    ca_pem = member_ca(ca, token_ca, verified=bool(member.api.configuration.verify_ssl))
    secret = secret_with(token, ca_pem)
    check_kubeconfig(secret)
    report.add("management", access.describe(secret), apply_secret(management, secret))
    print("\n".join(report.lines))
    if namespaces is None:
        print(CLUSTER_WIDE_NOTE, file=sys.stderr)
    return 0


CLUSTER_WIDE_NOTE = (
    "note: the member identity may write HPAs and Scales in every namespace, kube-system included; the "
    "controller acts in kube-* namespaces only if its --deny-namespaces allows it. To narrow this grant, "
    "join with --namespaces A,B (the list of --allow-namespaces)"
)
"""Said on stderr after a cluster-wide join: what was granted, what guards it, and how to narrow it."""


def render_dry_run(plan: MemberAccess, secret: Mapping[str, Any], server: str) -> str:
    """The objects join would create, as YAML: the member's, then the management cluster's."""
    member = yaml.safe_dump_all(plan.objects, sort_keys=False)
    management = yaml.safe_dump(dict(secret), sort_keys=False)
    return f"# in the MEMBER cluster ({server})\n{member}---\n# in the MANAGEMENT cluster\n{management}"


def apply_object(client: KubeClient, obj: Mapping[str, Any]) -> str:
    """Create ``obj`` when missing, else bring its rules or subjects in step: created, updated, unchanged."""
    path = access.path_of(obj)
    existing = client.find(path)
    if existing is None:
        collection = access.object_path(obj["kind"], None, obj["metadata"].get("namespace"))
        try:
            client.request("POST", collection, body=dict(obj))
        except ConflictError:  # created meanwhile (a second join): compare with it on the next run
            return "exists"
        return "created"
    update = access.update_of(existing, obj)
    if update is None:
        return "unchanged"
    client.request("PUT", path, body=update)
    return "updated"


def apply_secret(client: KubeClient, secret: Mapping[str, Any]) -> str:
    path = access.path_of(secret)
    existing = client.find(path)
    if existing is None:
        client.request(
            "POST", access.object_path("Secret", None, secret["metadata"]["namespace"]), body=dict(secret)
        )
        return "created"
    update = access.secret_update(existing, secret)
    if update is None:
        return "unchanged"
    client.request("PUT", path, body=update)
    return "updated"


def wait_for_token(
    client: KubeClient,
    where: tuple[str, str],
    timeout: float,
    service_account: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> tuple[str, bytes | None]:
    """The token (and ca.crt) the member's token controller puts into the token Secret. A Secret of that
    name that already existed is used only if it is a token of ``service_account``: join leaves an
    existing Secret alone, and one of another type or for another ServiceAccount would hand the
    controller credentials with rights nobody reviewed."""
    namespace, name = where
    deadline = monotonic() + timeout
    while True:
        secret = client.find(access.object_path("Secret", name, namespace)) or {}
        if secret and service_account is not None:
            _check_token_secret(secret, namespace, name, service_account)
        data = secret.get("data") or {}
        if data.get("token"):
            token = base64.b64decode(data["token"]).decode()
            ca = base64.b64decode(data["ca.crt"]) if data.get("ca.crt") else None
            return token, ca
        if monotonic() >= deadline:
            raise JoinError(
                f"Secret {namespace}/{name} in the member has no token after {timeout:.0f}s: is the "
                "token controller (kube-controller-manager) running there?"
            )
        sleep(0.5)


def _check_token_secret(secret: Mapping[str, Any], namespace: str, name: str, service_account: str) -> None:
    owner = ((secret.get("metadata") or {}).get("annotations") or {}).get(access.SA_NAME_ANNOTATION)
    if secret.get("type") != access.TOKEN_TYPE or owner != service_account:
        raise JoinError(
            f"Secret {namespace}/{name} in the member exists but is not a token of ServiceAccount "
            f"{service_account} (type {shorten(secret.get('type'), 64)}, for {shorten(owner, 64)}); "
            "delete it, or `fhpa cluster unjoin`, and join again"
        )


def check_kubeconfig(secret: Mapping[str, Any]) -> None:
    """Refuse to write a Secret the controller would refuse (security review H1)."""
    view = read_secret(secret)
    try:
        build_configuration(view.kubeconfig or "", None, policy_of(view))
    except KubeconfigError as exc:
        raise JoinError(f"the member kubeconfig would be refused by the controller: {exc}") from None


# --- unjoin -----------------------------------------------------------------------------------------


def _unjoin(args: argparse.Namespace) -> int:
    name = access.check_cluster_name(args.name)
    if args.delete_member_hpas and not args.kubeconfig:
        raise JoinError("--delete-member-hpas needs --kubeconfig for the member cluster")
    management = management_client(args)
    path = access.object_path("Secret", name, args.namespace)
    secret = management.find(path)
    if secret is not None and (secret["metadata"].get("labels") or {}).get(MEMBER_LABEL) != "true":
        raise JoinError(f"Secret {args.namespace}/{name} is not a member Secret; left alone")
    namespaces = access.parse_namespaces(args.namespaces)
    if namespaces is None and secret is not None:
        namespaces = access.joined_namespaces(secret)
    planned = leftovers.planned_in(management, name)
    member = (
        connect("member", args.kubeconfig, args.context, MANAGEMENT_TIMEOUTS) if args.kubeconfig else None
    )
    member_hpas = leftovers.ours_in_member(member, namespaces) if member is not None else []
    if planned and not args.force:
        print(unjoin_refusal(name, planned, member_hpas, args.delete_member_hpas), file=sys.stderr)
        return 2
    act = _would if args.dry_run else _delete_now
    report = JoinReport()
    for line in (p.describe() for p in planned):
        report.add("management", line, "plans with this cluster; it loses the cluster's share")
    if member is not None:
        plan = access.member_objects(args.member_manifests, namespaces)
        for obj in reversed(plan.objects):
            if obj["kind"] == "Namespace":
                report.add("member", access.describe(obj), "kept (it may hold other things)")
                continue
            report.add("member", access.describe(obj), act(member, access.path_of(obj)))
    if secret is None:
        report.add("management", f"Secret {args.namespace}/{name}", "not found")
    else:
        report.add("management", f"Secret {args.namespace}/{name}", act(management, path))
    # after the controller lost its access and the Secret: it cannot write them back meanwhile
    for hpa in member_hpas:
        if args.delete_member_hpas and member is not None:
            report.add("member", hpa.describe(), act(member, hpa.path))
        else:
            report.add("member", hpa.describe(), "left in place (--delete-member-hpas removes it)")
    print("\n".join(report.lines))
    if not args.kubeconfig:
        print(
            "the member cluster still grants the controller's ServiceAccount its access, and any member "
            "HPA it created stays: run again with --kubeconfig for that cluster to remove the access "
            "(and --delete-member-hpas for the HPAs)",
            file=sys.stderr,
        )
    return 0


def unjoin_refusal(
    cluster: str,
    planned: list[leftovers.PlannedHere],
    member_hpas: list[leftovers.MemberHPA],
    delete_hpas: bool,
) -> str:
    """Why unjoin stops, what it would orphan, and the two ways on."""
    lines = [
        f"fhpa cluster unjoin: {count(len(planned), 'FederatedHPA')} still plan with {cluster}; "
        "nothing was changed:",
        *(f"  {p.describe()}" for p in planned),
    ]
    if member_hpas and not delete_hpas:
        lines.append(f"their member HPAs in {cluster} would keep scaling there, unseen by the controller:")
        lines += [f"  {h.describe()}" for h in member_hpas]
    lines.append(
        "move them off the cluster first (clusterAffinity), or pass --force to unjoin anyway "
        "(with --kubeconfig and --delete-member-hpas to remove the member HPAs too); "
        "--dry-run shows what would be done"
    )
    return "\n".join(lines)


def _would(client: KubeClient, path: str) -> str:
    """The dry run's answer: what a delete would find, read and not written."""
    return "would be deleted" if client.find(path) is not None else "not found"


def _delete_now(client: KubeClient, path: str) -> str:
    return delete(client, path)


def delete(client: KubeClient, path: str) -> str:
    try:
        client.request("DELETE", path)
    except NotFoundError:
        return "not found"
    return "deleted"


# --- list -------------------------------------------------------------------------------------------


@dataclass
class MemberRow:
    name: str
    labels: dict[str, str]
    health: str  # Healthy, Unhealthy, Unusable (the Secret cannot be used)
    kubernetes_version: str | None = None
    hpa_api_version: str | None = None
    last_probe: str | None = None
    error: str | None = None


def _list(args: argparse.Namespace) -> int:
    listed = management_client(args).get(
        access.object_path("Secret", None, args.namespace), labelSelector=f"{MEMBER_LABEL}=true"
    )
    secrets = sorted(listed.get("items") or [], key=lambda s: s["metadata"]["name"])
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(secrets)))) as pool:
        rows = list(pool.map(probe_member, secrets))
    if args.output == "json":
        print(json.dumps([_camel(asdict(r)) for r in rows], indent=2))
    else:
        print(render_table(rows))
    return 0


def probe_member(secret: Mapping[str, Any], timeouts: Timeouts = PROBE_TIMEOUTS) -> MemberRow:
    """Probe one member with its Secret's own kubeconfig, as the controller would reach it."""
    view = read_secret(secret)
    identity, _ = identity_of(view)
    row = MemberRow(name=view.name, labels=dict(identity.labels), health="Unusable")
    if view.kubeconfig is None:
        row.error = view.problem
        return row
    try:
        api = build_api_client(
            view.kubeconfig, view.annotations.get(ANNOTATION_CONTEXT), policy=policy_of(view)
        )
    except KubeconfigError as exc:
        row.error = str(exc)
        return row
    client = KubeClient(view.name, api, timeouts)
    try:
        row.last_probe = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ok, message = client.probe()
        row.health = "Healthy" if ok else "Unhealthy"
        if not ok:
            row.error = message
            return row
        version = client.get("/version")
        row.kubernetes_version = version.get("gitVersion") if isinstance(version, dict) else None
        row.hpa_api_version = "autoscaling/" + KubeMemberCluster(identity, client).hpa_version()
    except PortError as exc:
        row.health, row.error = "Unhealthy", str(exc)
    finally:
        client.close()
    return row


MAX_CELL_CHARS = 80
MAX_ERROR_CHARS = 400


def terminal_safe(text: str, limit: int = MAX_CELL_CHARS) -> str:
    """``text`` with every non-printable character (escape sequences, carriage returns, newlines) shown
    as a \\x or \\u escape, and cut to ``limit``: a member's version string and error text are the
    member's to choose, and printed raw they could rewrite or hide what the operator's terminal shows."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def render_table(rows: list[MemberRow]) -> str:
    header = ("NAME", "LABELS", "HEALTH", "KUBERNETES", "HPA API", "LAST PROBE")
    table = [header] + [
        tuple(
            terminal_safe(cell)
            for cell in (
                r.name,
                ",".join(f"{k}={v}" for k, v in sorted(r.labels.items())) or "<none>",
                r.health,
                r.kubernetes_version or "-",
                r.hpa_api_version or "-",
                r.last_probe or "-",
            )
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]
    lines += [terminal_safe(f"{r.name}: {r.error}", MAX_ERROR_CHARS) for r in rows if r.error]
    return "\n".join(lines) if rows else "no member clusters registered"


def _camel(row: dict[str, Any]) -> dict[str, Any]:
    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part.upper() if part in ("hpa", "api") else part.title() for part in rest)

    return {camel(k): v for k, v in row.items()}
