"""`fhpa explain NAMESPACE/NAME` (and `kubectl fhpa explain NAMESPACE/NAME`): why each member cluster of a
FederatedHPA has its bounds, what the controller did last and what it will do next.

This half only reads: the FederatedHPA (its spec and status) and the Events on it, from the management
cluster, with the kubeconfig kubectl would use. Everything it says is worked out by the pure
``fhpa.explanation`` module, so nothing here needs access to a member cluster or its Secret.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from controller.errors import NotFoundError, PortError
from controller.kube.clients import KubeClient, Timeouts
from controller.kube.control_plane import KubeControlPlane
from fhpa.commands.cluster import connect
from fhpa.cron_explanation import TARGET_EXISTS, TARGET_MISSING, explain_cron
from fhpa.explanation import explain, render
from fhpa.member_access import JoinError
from fhpa_api import API_VERSION, CRON_FEDERATED_HPA, FEDERATED_HPA
from fhpa_api.models import CronFederatedHPA, CrossVersionObjectReference, FederatedHPA

TIMEOUTS = Timeouts(connect=5.0, read=30.0, probe=5.0)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="why each member cluster of a FederatedHPA has its bounds, and what happens next",
        description="Reads the FederatedHPA's status and its Events on the management cluster (no member "
        "access needed) and explains, per member cluster, its bounds and their reason, the last actions "
        "and what the controller does next. Also a kubectl plugin: `kubectl fhpa explain shop/web`.",
    )
    parser.add_argument(
        "target", metavar="NAMESPACE/NAME", help="the FederatedHPA (NAME alone: -n or default)"
    )
    parser.add_argument("-n", "--namespace", help="its namespace when NAMESPACE/ is left out")
    parser.add_argument(
        "--kind",
        choices=["fhpa", "cronfhpa"],
        default="fhpa",
        help="cronfhpa: explain a CronFederatedHPA (next fires, last results, whether its target exists)",
    )
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="management cluster kubeconfig (default as kubectl)"
    )
    parser.add_argument("--context", metavar="CTX", help="its context (default: current)")
    parser.set_defaults(func=run)


def split_target(target: str, namespace: str | None) -> tuple[str, str]:
    """NAMESPACE/NAME, or NAME in ``namespace`` (default "default")."""
    if "/" in target:
        ns, _, name = target.partition("/")
        if not ns or not name or "/" in name:
            raise JoinError(f"{target!r} is not NAMESPACE/NAME")
        return ns, name
    return namespace or "default", target


def read(client: KubeClient, namespace: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The FederatedHPA as stored and the Events whose involvedObject is it (by name and kind)."""
    obj = client.get(f"/apis/{API_VERSION}/namespaces/{namespace}/federatedhpas/{name}")
    events = client.get(
        f"/api/v1/namespaces/{namespace}/events",
        fieldSelector=f"involvedObject.name={name},involvedObject.kind={FEDERATED_HPA}",
    )
    return obj, list((events or {}).get("items") or [])


_T = TypeVar("_T")


def fetch(
    args: argparse.Namespace, kind: str, load: Callable[[KubeClient, str, str], _T]
) -> tuple[KubeClient, str, _T] | int:
    """The client, the namespace and what ``load`` read for the target; or, having said why on stderr,
    the exit code (1): not found, unreachable, or stored in a shape that cannot be read."""
    try:
        namespace, name = split_target(args.target, args.namespace)
        client = connect("management", args.kubeconfig, args.context, TIMEOUTS)
        return client, namespace, load(client, namespace, name)
    except NotFoundError:
        print(f"fhpa explain: {kind} {args.target} not found", file=sys.stderr)
    except (JoinError, PortError) as exc:
        print(f"fhpa explain: {exc}", file=sys.stderr)
    except ValidationError as exc:
        print(f"fhpa explain: the stored object cannot be read ({exc.error_count()} errors)", file=sys.stderr)
    return 1


def _load_fhpa(client: KubeClient, namespace: str, name: str) -> tuple[FederatedHPA, list[dict[str, Any]]]:
    obj, events = read(client, namespace, name)
    return FederatedHPA.model_validate(obj), events


def _load_cron(client: KubeClient, namespace: str, name: str) -> CronFederatedHPA:
    return CronFederatedHPA.model_validate(
        client.get(f"/apis/{API_VERSION}/namespaces/{namespace}/cronfederatedhpas/{name}")
    )


def run(args: argparse.Namespace) -> int:
    if args.kind == "cronfhpa":
        return run_cron(args)
    fetched = fetch(args, FEDERATED_HPA, _load_fhpa)
    if isinstance(fetched, int):
        return fetched
    _, _, (fhpa, events) = fetched
    explanation = explain(fhpa, events, datetime.now(UTC))
    if args.output == "json":
        print(json.dumps(explanation.to_dict(), indent=2))
    else:
        print(render(explanation))
    return 0


def target_state(client: KubeClient, namespace: str, ref: CrossVersionObjectReference) -> str | None:
    """Whether the CronFederatedHPA's target exists on the management cluster (None: could not tell)."""
    try:
        if ref.kind == FEDERATED_HPA:
            client.get(f"/apis/{API_VERSION}/namespaces/{namespace}/federatedhpas/{ref.name}")
        else:
            KubeControlPlane(client.api).get_scale(namespace, ref)
    except NotFoundError:
        return TARGET_MISSING
    except PortError:
        return None
    return TARGET_EXISTS


def run_cron(args: argparse.Namespace) -> int:
    """Explain a CronFederatedHPA: each rule's next fire and last results, and whether the target exists."""
    fetched = fetch(args, CRON_FEDERATED_HPA, _load_cron)
    if isinstance(fetched, int):
        return fetched
    client, namespace, cron = fetched
    state = target_state(client, namespace, cron.spec.scale_target_ref)
    lines = explain_cron(cron, state, datetime.now(UTC))
    if args.output == "json":
        print(json.dumps({"lines": lines, "target": state}, indent=2))
    else:
        print("\n".join(lines))
    return 0
