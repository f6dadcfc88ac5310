"""`fhpa certs generate` and `fhpa certs check`: a CA and a webhook serving certificate for clusters
without cert-manager, and when they must be regenerated (nothing renews them by itself: review L9)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from certs.generate import RENEW_BEFORE_DAYS, CertificateError, Expiry, check, generate

RENEWAL_DOC = "docs/certificates.md"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("certs", help="certificates for the admission webhook")
    actions = parser.add_subparsers(dest="certs_command", metavar="ACTION", required=True)
    gen = actions.add_parser(
        "generate",
        help="write ca.crt, tls.crt and tls.key for the webhook Service and print the base64 caBundle",
        description="Writes ca.crt, ca.key, tls.crt and tls.key (keys mode 0600) into --out. An existing "
        "CA in --out is reused, so re-running renews the serving certificate and keeps the caBundle. "
        "Prints the base64 caBundle on stdout, and on stderr when the certificates expire and when to "
        f"regenerate them (see {RENEWAL_DOC}).",
    )
    gen.add_argument("--out", required=True, type=Path, help="directory to write the files into")
    gen.add_argument("--service", required=True, help="the webhook Service's name")
    gen.add_argument("--namespace", required=True, help="the webhook Service's namespace")
    gen.add_argument(
        "--ip", action="append", default=[], metavar="ADDR", help="an IP SAN (repeatable), e.g. 127.0.0.1"
    )
    gen.add_argument(
        "--days", type=int, default=365, help="validity of the serving certificate (default 365)"
    )
    gen.add_argument("--new-ca", action="store_true", help="make a new CA even if --out holds one")
    gen.set_defaults(func=run_generate)

    chk = actions.add_parser(
        "check",
        help="say when tls.crt and ca.crt expire; exit 1 when regenerating is due",
        description="Prints the expiry of tls.crt and ca.crt in --dir. Exits 1 with a warning when one "
        "expires within --renew-before-days (or has expired), 2 when they cannot be read, else 0.",
    )
    chk.add_argument("--dir", required=True, type=Path, help="the directory `generate` wrote into")
    chk.add_argument(
        "--renew-before-days",
        type=int,
        default=RENEW_BEFORE_DAYS,
        help=f"warn when fewer days than this are left (default {RENEW_BEFORE_DAYS})",
    )
    chk.set_defaults(func=run_check)
    _register_rotate(actions)


def _register_rotate(actions: argparse._SubParsersAction) -> None:
    rot = actions.add_parser(
        "rotate",
        help="in the cluster: keep the webhook's self-signed CA and serving certificate in Secrets, "
        "renew them before they expire, and keep the webhook configurations' caBundle current",
        description="Each pass reads the Secrets federated-hpa-webhook-ca and federated-hpa-webhook-tls in "
        "--namespace, issues what is missing or due, and sets the caBundle of the mutating and validating "
        "configurations named --webhook-configuration. With --every it repeats forever (the chart's "
        "cert-rotator Deployment); without, it runs once.",
    )
    rot.add_argument("--namespace", required=True, help="where the Secrets and the webhook Service live")
    rot.add_argument("--service", default="federated-hpa-webhook", help="the webhook Service's name")
    rot.add_argument("--webhook-configuration", default="federated-hpa-webhook", metavar="NAME")
    rot.add_argument("--ip", action="append", default=[], metavar="ADDR", help="an IP SAN (repeatable)")
    rot.add_argument("--days", type=int, default=90, help="validity of each serving certificate (default 90)")
    rot.add_argument("--renew-before-days", type=int, default=RENEW_BEFORE_DAYS, metavar="DAYS")
    rot.add_argument("--every", type=float, default=0, metavar="SECONDS", help="repeat this often (0: once)")
    where = rot.add_mutually_exclusive_group(required=True)
    where.add_argument("--in-cluster", action="store_true", help="use the pod's ServiceAccount")
    where.add_argument("--kubeconfig", metavar="FILE")
    rot.add_argument("--context", metavar="CTX")
    rot.set_defaults(func=run_rotate)


def run_generate(args: argparse.Namespace) -> int:
    try:
        bundle = generate(args.out, args.service, args.namespace, args.ip, args.days, new_ca=args.new_ca)
    except CertificateError as exc:
        print(f"fhpa certs generate: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"fhpa certs generate: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    reused = "reused the CA in" if bundle.ca_reused else "wrote a new CA to"
    print(f"{reused} {bundle.out_dir}; wrote tls.crt and tls.key; caBundle:", file=sys.stderr)
    if bundle.ca_replaced:
        print(
            "WARNING: the CA in the directory expired before the new certificate would, so a new CA was "
            "made and the caBundle changed: apply the Secret and the webhook configurations together",
            file=sys.stderr,
        )
    for line in _expiry_lines(bundle.tls_not_after, bundle.ca_not_after):
        print(line, file=sys.stderr)
    print(bundle.ca_bundle)
    return 0


def _expiry_lines(tls_not_after: dt.datetime, ca_not_after: dt.datetime) -> list[str]:
    renew_by = tls_not_after - dt.timedelta(days=RENEW_BEFORE_DAYS)
    lines = [
        f"tls.crt expires at {tls_not_after.isoformat(timespec='minutes')}; "
        f"regenerate it before {renew_by.date().isoformat()} and apply it again ({RENEWAL_DOC})",
        f"ca.crt expires at {ca_not_after.isoformat(timespec='minutes')}",
    ]
    if renew_by <= dt.datetime.now(dt.UTC):
        lines.append(
            f"WARNING: tls.crt is valid for fewer than {RENEW_BEFORE_DAYS} days: "
            "`fhpa certs check` will report it as due at once"
        )
    return lines


def run_check(args: argparse.Namespace) -> int:
    try:
        found = check(args.dir, args.renew_before_days)
    except CertificateError as exc:
        print(f"fhpa certs check: {exc}", file=sys.stderr)
        return 2
    due: list[Expiry] = []
    for expiry in found:
        print(expiry.describe())
        if expiry.due:
            due.append(expiry)
    for expiry in due:
        state = "has expired" if expiry.expired else f"expires within {args.renew_before_days} days"
        print(
            f"WARNING: {expiry.name} {state}: regenerate it with `fhpa certs generate --out {args.dir} "
            f"...` and apply it again ({RENEWAL_DOC})",
            file=sys.stderr,
        )
    return 1 if due else 0


def run_rotate(args: argparse.Namespace) -> int:
    import fhpa_logs as logs
    from certs import rotator
    from certs.generate import parse_ips, service_dns_names
    from certs.renewal import Policy
    from fhpa import kubeconfig

    try:
        if not 0 <= args.renew_before_days < args.days:
            raise CertificateError("--renew-before-days must be at least 0 and below --days")
        policy = Policy(
            dns_names=service_dns_names(args.service, args.namespace),
            ips=parse_ips(args.ip),
            days=args.days,
            renew_before=dt.timedelta(days=args.renew_before_days),
        )
    except CertificateError as exc:
        print(f"fhpa certs rotate: {exc}", file=sys.stderr)
        return 2
    logs.configure()
    target = rotator.Target(namespace=args.namespace, webhook_configuration=args.webhook_configuration)
    api_client = kubeconfig.api_client_or_in_cluster(args.kubeconfig, args.context)
    if args.every <= 0:
        plan = rotator.rotate_once(api_client, target, policy)
        print(plan.reason)
        return 0
    rotator.run(api_client, target, policy, args.every)
    return 0
