"""`fhpa` entry point. Each subcommand lives in fhpa/commands/<name>.py and exposes
``register(subparsers)``; the subcommand sets ``func`` on its parser, which returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# 128 + SIGPIPE, what a shell reports for a Unix tool whose reader closed the pipe
SIGPIPE_EXIT = 141

# In the order `fhpa --help` lists them. `simulate` is the main job and the default.
COMMANDS = (
    "simulate",
    "validate",
    "assign",
    "cron",
    "controller",
    "webhook",
    "certs",
    "cluster",
    "explain",
)


def build_parser(prog: str = "fhpa") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Federated Horizontal Pod Autoscaling across Kubernetes clusters.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module_name = f"fhpa.commands.{name}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # not built yet
            raise
        module.register(subparsers)
    _remember_parsers(parser)
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Each subcommand's parser records itself in the namespace it fills (the innermost one wins), so
    that an unknown flag is reported with that subcommand's usage rather than the top-level one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_usage_parser=sub)
                _remember_parsers(sub)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        argv = ["simulate", *argv]  # the main job is the default: `fhpa`, `fhpa scenario.yaml`
    return _dispatch(build_parser(), argv)


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """`kubectl fhpa ...`: kubectl runs the executable kubectl-fhpa found on PATH with the words after
    `fhpa`. The same commands, named as kubectl users type them; with no command it prints the help
    rather than running the simulator (`fhpa`'s default), which a kubectl user never means."""
    return _dispatch(build_parser("kubectl fhpa"), list(sys.argv[1:] if argv is None else argv))


def _dispatch(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        owner = getattr(args, "_usage_parser", None) or parser
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except BrokenPipeError:
        # the reader went away (`fhpa validate --output json | head`): stop quietly, as Unix tools do,
        # and keep the interpreter's final flush from raising again on the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return SIGPIPE_EXIT


if __name__ == "__main__":
    sys.exit(main())
