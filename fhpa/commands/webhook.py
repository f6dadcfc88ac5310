"""`fhpa webhook serve`: the admission webhook over TLS under gunicorn."""

from __future__ import annotations

import argparse
import sys

from webhook.server import add_arguments, exec_server, options_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("webhook", help="the admission webhook server")
    actions = parser.add_subparsers(dest="webhook_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve /mutate, /validate, /healthz, /readyz and /metrics over TLS",
        description="Serves the FederatedHPA/CronFederatedHPA admission webhook with gunicorn over TLS. "
        "The certificate in --cert-dir is reloaded when its files change (no restart).",
    )
    add_arguments(serve)
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    problems = options.problems()
    if problems:
        for problem in problems:
            print(f"fhpa webhook serve: {problem}", file=sys.stderr)
        return 2
    exec_server(options)  # does not return
    return 0
