"""`fhpa certs generate`: a CA and a webhook serving certificate for clusters without cert-manager."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from certs.generate import CertificateError, generate


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("certs", help="certificates for the admission webhook")
    actions = parser.add_subparsers(dest="certs_command", metavar="ACTION", required=True)
    gen = actions.add_parser(
        "generate",
        help="write ca.crt, tls.crt and tls.key for the webhook Service and print the base64 caBundle",
        description="Writes ca.crt, ca.key, tls.crt and tls.key (keys mode 0600) into --out. An existing "
        "CA in --out is reused, so re-running renews the serving certificate and keeps the caBundle. "
        "Prints the base64 caBundle on stdout.",
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
    print(bundle.ca_bundle)
    return 0
