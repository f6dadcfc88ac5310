"""`fhpa controller run`: the controller against a real control plane and real member clusters.

In a pod it uses the in-cluster service account (the default); elsewhere ``--kubeconfig``. SIGTERM and
SIGINT shut it down gracefully: the reconciles in flight finish and the leader Lease is released. The
exit code is 0 after a clean shutdown, 1 when the Lease was lost (the kubelet restarts the pod and it
stands for election again), 2 for bad flags. With ``--shards K`` (K > 1) a lost shard Lease is not
fatal: the replica keeps its other shards and campaigns on (docs/sharding.md).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "federated-hpa-system"
MAX_SHARDS = 64  # each replica reads every shard Lease every retry period: K GETs per period

log = logging.getLogger("fhpa.controller")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("controller", help="run the federated HPA controller")
    actions = parser.add_subparsers(dest="controller_command", metavar="ACTION")
    run = actions.add_parser(
        "run",
        help="watch FederatedHPA and CronFederatedHPA objects and act on member clusters",
    )
    conn = run.add_argument_group("connection")
    conn.add_argument("--kubeconfig", help="kubeconfig of the control plane (default: in-cluster config)")
    conn.add_argument("--context", help="context in --kubeconfig (default: its current context)")
    conn.add_argument(
        "--namespace",
        help="the controller's namespace: member-cluster Secrets and the leader Lease live here "
        f"(default: the pod's namespace, else {DEFAULT_NAMESPACE})",
    )
    conn.add_argument(
        "--watch-namespace", help="watch FederatedHPA objects in this namespace only (default: all)"
    )
    conn.add_argument(
        "--allow-namespaces",
        default="*",
        metavar="PATTERNS",
        help="comma-separated namespace names or globs (* and ?) whose FederatedHPAs and "
        "CronFederatedHPAs the controller acts on; the member namespace is the object's namespace, so "
        "whoever may create one in X can make the controller write HPAs and replicas in X on every member",
    )
    conn.add_argument(
        "--deny-namespaces",
        default="kube-*",
        metavar="PATTERNS",
        help="comma-separated namespace names or globs never acted on, even when allowed "
        "(an object there gets Ready=False, reason NamespaceNotAllowed); '' denies none",
    )
    le = run.add_argument_group("leader election")
    le.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True)
    le.add_argument("--lease-name", default="federated-hpa-controller")
    le.add_argument("--lease-duration", type=_positive, default=15.0, metavar="SECONDS")
    le.add_argument("--renew-deadline", type=_positive, default=10.0, metavar="SECONDS")
    le.add_argument("--retry-period", type=_positive, default=2.0, metavar="SECONDS")
    le.add_argument(
        "--warm-standby",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a replica that does not lead keeps the member Secrets and member caches synced (read "
        "only), so a takeover costs the Lease and not a sync of every member; it holds as much memory "
        "as the leader (--no-warm-standby: a standby holds none and syncs when it takes over)",
    )
    le.add_argument(
        "--shards",
        type=_shard_count,
        default=1,
        metavar="K",
        help="split the objects over K Leases (<lease-name>-shard-0..K-1) so that several replicas "
        "share the work, each holding about K/replicas of them (docs/sharding.md); 1 is one leader "
        "Lease named --lease-name; every replica must run with the same K",
    )
    pl = run.add_argument_group("behaviour")
    pl.add_argument("--failover-grace", type=_non_negative, default=60.0, metavar="SECONDS")
    pl.add_argument(
        "--blip-tolerance",
        type=_non_negative,
        default=30.0,
        metavar="SECONDS",
        help="an unreachable spell shorter than this is a blip that moves nothing; past it, a held "
        "cluster's unused max goes to clusters pressing for more, and one that ran every replica while "
        "no reachable one runs any is failed over (unless it flapped within the hour)",
    )
    pl.add_argument("--optimization-period", type=_positive, default=60.0, metavar="SECONDS")
    pl.add_argument(
        "--burst-assist",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write replicas to clusters with room when a cluster at its max wants more, ahead of their "
        "member HPAs, whose minReplicas hold them for the HPAs' scale-down window (docs/design.md)",
    )
    pl.add_argument(
        "--rejoin-hysteresis",
        type=_non_negative,
        default=120.0,
        metavar="SECONDS",
        help="a flapping cluster's grace grows: grace + this x (4^n - 1) after n failovers in an hour",
    )
    pl.add_argument(
        "--node-provision-seconds",
        type=_non_negative,
        default=None,
        metavar="SECONDS",
        help="how long pods that a node autoscaler is adding nodes for (TriggeredScaleUp) may pend before "
        "load moves away from them (default: the member Secret's node-provision-seconds, else 600)",
    )
    pl.add_argument("--default-time-zone", default="UTC", help="IANA zone for cron rules without timeZone")
    pl.add_argument(
        "--resync-period",
        type=_positive,
        default=300.0,
        metavar="SECONDS",
        help="every object planned again this often (a safety net: changes are watched)",
    )
    pl.add_argument(
        "--watch-timeout", type=int, default=300, metavar="SECONDS", help="server-side timeout of one watch"
    )
    pl.add_argument(
        "--probe-period", type=_positive, default=10.0, metavar="SECONDS", help="member health probes"
    )
    pl.add_argument(
        "--quiet-probe-period",
        type=_positive,
        default=60.0,
        metavar="SECONDS",
        help="a member whose watches are open but quiet is probed this often (one whose watches carried "
        "a line within the probe period is not probed)",
    )
    pl.add_argument("--workers", type=int, default=2, help="objects reconciled in parallel")
    pl.add_argument("--cleanup-timeout", type=_positive, default=300.0, metavar="SECONDS")
    pl.add_argument("--shutdown-grace", type=_positive, default=30.0, metavar="SECONDS")
    _budget_flags(
        run.add_argument_group("member budget (each member alone; one over it is unknown, not the fleet)")
    )
    ops = run.add_argument_group("operations")
    ops.add_argument(
        "--metrics-bind",
        type=_host_port,
        default="0.0.0.0:8080",
        help="HOST:PORT of /metrics, /healthz, /readyz",
    )
    ops.add_argument(
        "--health-bind",
        type=_host_port,
        default=None,
        help="HOST:PORT of /healthz and /readyz alone, for the kubelet's probes: connections to the "
        "metrics port cannot take their slots",
    )
    ops.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    ops.add_argument("--log-format", default="json", choices=["json", "text"])
    for action in run._actions:
        if action.default not in (None, argparse.SUPPRESS) and action.dest != "help":
            action.help = f"{action.help + '; ' if action.help else ''}default: %(default)s"
    run.set_defaults(func=run_command)
    parser.set_defaults(func=lambda args: _usage(parser))


def _budget_flags(group: Any) -> None:
    """What one member may cost the controller (controller.kube.member_budget); defaults from Caps."""
    from controller.kube.member_budget import MIB, Caps

    caps = Caps()
    flags: tuple[tuple[str, Callable[[str], Any], float, str, str], ...] = (
        ("--member-page-mib", _positive, caps.page_bytes / MIB, "MIB", "a member's list page larger than "
         "this is dropped and the member is unknown"),
        ("--member-line-mib", _positive, caps.line_bytes / MIB, "MIB", "a member's watch line longer than "
         "this without a newline is dropped, likewise"),
        ("--member-response-timeout", _positive, caps.response_seconds, "SECONDS", "a member's list page "
         "must be read in full within this (not only each read)"),
        ("--member-max-objects", _count, caps.objects, "N", "the most objects one member's caches hold "
         "(pods, nodes, HPAs, workloads)"),
        ("--member-max-cache-mib", _positive, caps.store_bytes / MIB, "MIB", "the most bytes one member's "
         "cached objects take, as compact JSON after the trim"),
    )  # fmt: skip
    for flag, kind, default, metavar, words in flags:
        group.add_argument(flag, type=kind, default=default, metavar=metavar, help=words)


def member_caps(args: argparse.Namespace) -> Any:
    """The member budget from the flags."""
    from controller.kube.member_budget import MIB, Caps

    return Caps(
        page_bytes=int(args.member_page_mib * MIB),
        line_bytes=int(args.member_line_mib * MIB),
        response_seconds=args.member_response_timeout,
        objects=args.member_max_objects,
        store_bytes=int(args.member_max_cache_mib * MIB),
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _number(text: str, kind: type[float] | type[int] = float) -> float:
    """``text`` as a number, or argparse's own error in words (not the type function's name)."""
    try:
        value = kind(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if kind is int else 'a number'}")
    return value


def _host_port(text: str) -> str:
    """HOST:PORT (HOST may be empty: every address), checked here rather than when the server binds."""
    _, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} must be HOST:PORT, with a port from 0 to 65535")
    return text


def _positive(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _non_negative(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _count(text: str) -> int:
    value = int(_number(text, int))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _shard_count(text: str) -> int:
    value = int(_number(text, int))
    if not 1 <= value <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_SHARDS}, got {text}")
    return value


def _namespace(args: argparse.Namespace) -> str:
    if args.namespace:
        return str(args.namespace)
    if SERVICE_ACCOUNT_NAMESPACE.exists():
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    return DEFAULT_NAMESPACE


def _api_client(args: argparse.Namespace) -> Any:
    """The control plane's ApiClient: --kubeconfig, else the in-cluster service account."""
    from fhpa import kubeconfig

    return kubeconfig.api_client_or_in_cluster(args.kubeconfig, args.context)


def _fail(message: str) -> int:
    print(f"fhpa controller run: {message}", file=sys.stderr)
    return 2


def run_command(args: argparse.Namespace) -> int:
    import fhpa_logs as logs

    logs.configure(args.log_level, args.log_format)
    try:
        manager, health = build(args)
    except ValueError as exc:
        return _fail(str(exc))
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        log.info("shutdown requested", extra={"signal": signal.Signals(signum).name})
        stop.set()

    try:
        health.start()  # before the signal handlers and the Lease: a busy port ends the process cleanly
    except OSError as exc:  # exit 1, not 2: the flags are fine, the machine is not
        binds = f"--metrics-bind {args.metrics_bind}" + (
            f" or --health-bind {args.health_bind}" if args.health_bind else ""
        )
        _fail(f"cannot listen on {binds}: {exc.strerror or exc}")
        return 1
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        code = manager.run(stop)
    finally:
        health.stop()
    log.info("controller exited", extra={"exit_code": code})
    return code


def build(args: argparse.Namespace) -> tuple[Any, Any]:
    """The Manager and its health server from the flags; ValueError with a clear message on bad input."""
    from kubernetes.config.config_exception import ConfigException

    from controller.kube.control_plane import KubeControlPlane
    from controller.planning.namespaces import NamespacePolicy
    from controller.planning.planner import PlannerConfig
    from controller.runtime.fleet import FleetManager
    from controller.runtime.health import HealthServer
    from controller.runtime.leader import LeaderConfig, LeaseClient, default_identity
    from controller.runtime.manager import ManagerConfig
    from controller.runtime.metrics import Metrics
    from fhpa.kubeconfig import KubeconfigFileError
    from fhpa_api.schedule import ScheduleError, load_time_zone

    try:
        load_time_zone(args.default_time_zone)
    except ScheduleError as exc:
        raise ValueError(f"--default-time-zone: {exc}") from None
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    if args.watch_timeout < 1:
        raise ValueError("--watch-timeout must be at least 1 second")
    if args.shards > 1 and not args.leader_elect:
        raise ValueError("--shards needs leader election: the shard Leases are how replicas split the work")
    if args.kubeconfig and not os.path.exists(args.kubeconfig):
        raise ValueError(f"--kubeconfig: no such file: {args.kubeconfig}")
    namespaces = NamespacePolicy.from_flags(args.allow_namespaces, args.deny_namespaces)
    caps = member_caps(args)
    namespace = _namespace(args)
    try:
        api = _api_client(args)
    except KubeconfigFileError as exc:
        raise ValueError(f"--kubeconfig: {exc}") from None
    except ConfigException as exc:
        raise ValueError(f"cannot configure the control-plane client ({exc}); pass --kubeconfig") from None
    identity = default_identity()
    lease = None
    if args.leader_elect:
        lease = LeaderConfig(
            namespace=namespace,
            name=args.lease_name,
            identity=identity,
            lease_duration_seconds=args.lease_duration,
            renew_deadline_seconds=args.renew_deadline,
            retry_period_seconds=args.retry_period,
        )
    config = ManagerConfig(
        namespace=namespace,
        leader_elect=args.leader_elect,
        lease=lease,
        planner=PlannerConfig(
            failover_grace_seconds=args.failover_grace,
            optimization_period_seconds=args.optimization_period,
            rejoin_hysteresis_seconds=args.rejoin_hysteresis,
            blip_tolerance_seconds=args.blip_tolerance,
            node_provision_seconds=args.node_provision_seconds,
            burst_assist=args.burst_assist,
        ),
        default_time_zone=args.default_time_zone,
        workers=args.workers,
        resync_seconds=args.resync_period,
        probe_seconds=args.probe_period,
        watch_timeout_seconds=args.watch_timeout,
        cleanup_give_up_seconds=args.cleanup_timeout,
        shutdown_grace_seconds=args.shutdown_grace,
        namespaces=namespaces,
        shards=args.shards,
        warm_standby=args.warm_standby,
    )
    metrics = Metrics()
    control_plane = KubeControlPlane(api, namespace=args.watch_namespace, reporting_instance=identity)
    manager = FleetManager(
        control_plane,
        _registry(namespace, args.probe_period, args.quiet_probe_period, caps),
        config,
        metrics=metrics,
        lease_client=LeaseClient(api) if args.leader_elect else None,
    )
    health = HealthServer(
        args.metrics_bind,
        metrics,
        liveness={"loops": manager.alive},
        readiness={"control-plane-api": manager.api_reachable, "informers": manager.caches_synced},
        probe_bind=args.health_bind,
    )
    log.info(
        "controller configured",
        extra={
            "namespace": namespace,
            "leader_elect": args.leader_elect,
            "shards": args.shards,
            "identity": identity,
            "namespaces": namespaces.describe(),
        },
    )
    return manager, health


def _registry(
    namespace: str, probe_seconds: float = 10.0, quiet_probe_seconds: float = 60.0, caps: Any = None
) -> Any:
    """Members watch-backed, each within its budget (``caps``); one whose watches carried a line within
    a probe period is not probed, and a quiet one (watches open, nothing on them) only every
    ``quiet_probe_seconds``."""
    from controller.kube.clients import Timeouts
    from controller.kube.registry import MemberRegistry, default_factory

    timeouts = Timeouts()
    factory = default_factory(
        timeouts,
        cache_options={"caps": caps} if caps is not None else None,
        live_window_seconds=probe_seconds,
        quiet_probe_seconds=quiet_probe_seconds,
    )
    return MemberRegistry(namespace, timeouts, factory=factory)
