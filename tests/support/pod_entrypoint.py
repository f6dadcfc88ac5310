"""The process a pod runner's container starts: ``python -m tests.support.pod_entrypoint ROOT -- ARGV``.

It plays the image's entrypoint from the checkout: ``ARGV[0]`` is the image's ENTRYPOINT executable
(``fhpa``), run as the console script of that name that this environment installs, with ``ARGV[1:]``.
``ROOT`` is the pod's file system root on this machine (tests/support/pod_runner.py writes its volumes
under it). Paths in the args were rewritten by the runner; the service-account mount is the one path
the code takes from constants rather than args (the client library's in-cluster token and CA files,
the controller's namespace file), so those constants are pointed under ``ROOT`` here, before the
command runs.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from pathlib import Path

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _rooted(root: Path, path: str) -> str:
    return str(root / path.lstrip("/"))


def point_in_cluster_files_at(root: Path) -> None:
    """The in-cluster constants, under the pod's root (as the kubelet's mount would place them)."""
    from kubernetes.config import incluster_config

    from fhpa.commands import controller

    incluster_config.SERVICE_TOKEN_FILENAME = _rooted(root, f"{SERVICE_ACCOUNT}/token")
    incluster_config.SERVICE_CERT_FILENAME = _rooted(root, f"{SERVICE_ACCOUNT}/ca.crt")
    controller.SERVICE_ACCOUNT_NAMESPACE = Path(_rooted(root, f"{SERVICE_ACCOUNT}/namespace"))


def main(argv: list[str]) -> int:
    root, separator, *command = argv
    if separator != "--" or not command:
        raise SystemExit("usage: pod_entrypoint ROOT -- ENTRYPOINT [ARGS...]")
    point_in_cluster_files_at(Path(root))
    (script,) = entry_points(group="console_scripts", name=command[0])
    sys.argv = command
    return int(script.load()(command[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
