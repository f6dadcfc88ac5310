"""Where the real-server tiers' binaries are, and whether they can be used: the build caches of
``scripts/realapi-build.sh`` and ``scripts/kube-build.sh``. A missing or stale build is an error whose
message names the last build status and the command that fixes it, since the tiers' gates
(tests/conftest.py, tests/support/kube_fixtures.py) print it as the reason they skip or fail."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
REALAPI_BUILD_SCRIPT = "scripts/realapi-build.sh"
KUBE_BUILD_SCRIPT = "scripts/kube-build.sh"
PATCH_FILE = REPO_ROOT / "scripts" / "realapi" / "server.patch"
KUBE_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


class RealAPIUnavailable(RuntimeError):
    """The server binary or etcd is missing (or stale); the message says how to fix it."""


class KubeUnavailable(RuntimeError):
    """The binaries are missing or stale; the message says how to build them."""


def _cache_dir(variable: str, tier: str) -> Path:
    env = os.environ.get(variable)
    return Path(env) if env else Path.home() / ".cache" / "federated-hpa" / tier


# realapi tier


@dataclass(frozen=True)
class Binaries:
    apiserver: Path
    etcd: Path


def realapi_dir() -> Path:
    """The build cache of ``scripts/realapi-build.sh`` (``$FHPA_REALAPI_DIR`` or the default)."""
    return _cache_dir("FHPA_REALAPI_DIR", "realapi")


def find_binaries() -> Binaries:
    """Return the apiserver and etcd paths, or raise ``RealAPIUnavailable`` with the reason.

    ``$FHPA_REALAPI_BIN`` and ``$FHPA_ETCD`` override the locations. Without the override, the
    binary must have been built from the repository's current ``server.patch``.
    """
    hint = f"run `bash {REALAPI_BUILD_SCRIPT}` (or `make realapi`)"
    explicit = os.environ.get("FHPA_REALAPI_BIN")
    cache = realapi_dir()
    apiserver = Path(explicit) if explicit else cache / "bin" / "apiextensions-apiserver"
    if not (apiserver.is_file() and os.access(apiserver, os.X_OK)):
        status = cache / "status"
        last = ""
        if status.is_file():
            last = f"; last build status: {status.read_text().strip()}"
        raise RealAPIUnavailable(f"apiextensions-apiserver not found at {apiserver}{last}; {hint}")
    if not explicit:
        stamp = cache / "build.stamp"
        want = hashlib.sha256(PATCH_FILE.read_bytes()).hexdigest() if PATCH_FILE.is_file() else ""
        recorded = stamp.read_text() if stamp.is_file() else ""
        if f"patch_sha256={want}" not in recorded.splitlines():
            raise RealAPIUnavailable(
                f"{apiserver} was built from another version of scripts/realapi/server.patch; {hint}"
            )
    etcd_env = os.environ.get("FHPA_ETCD")
    etcd = etcd_env or shutil.which("etcd") or ("/usr/bin/etcd" if Path("/usr/bin/etcd").exists() else None)
    if not etcd or not os.access(etcd, os.X_OK):
        raise RealAPIUnavailable(f"etcd not found on PATH (Debian package etcd-server); {hint}")
    return Binaries(apiserver=apiserver, etcd=Path(etcd))


def realapi_availability() -> tuple[Binaries | None, str]:
    """``(binaries, "")`` when the tier can run, else ``(None, reason)``."""
    try:
        return find_binaries(), ""
    except RealAPIUnavailable as exc:
        return None, str(exc)


# kube tier


@dataclass(frozen=True)
class KubeBinaries:
    apiserver: Path
    controller_manager: Path
    scheduler: Path
    etcd: Path


def kube_dir() -> Path:
    """The build cache of ``scripts/kube-build.sh`` (``$FHPA_KUBE_DIR`` or the default)."""
    return _cache_dir("FHPA_KUBE_DIR", "kube")


def find_kube_binaries() -> KubeBinaries:
    """The four binaries, or ``KubeUnavailable`` with the reason and the fix."""
    hint = f"run `bash {KUBE_BUILD_SCRIPT}` (or `make kube`; ~13 min cold, cached afterwards)"
    cache = kube_dir()
    status = cache / "status"
    last = f"; last build status: {status.read_text().strip()}" if status.is_file() else ""
    paths = [cache / "bin" / comp for comp in KUBE_COMPONENTS]
    for path in paths:
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise KubeUnavailable(f"{path.name} not found at {path}{last}; {hint}")
    if not (cache / "build.stamp").is_file():
        raise KubeUnavailable(f"{cache}/build.stamp missing (interrupted build?); {hint}")
    etcd = os.environ.get("FHPA_ETCD") or shutil.which("etcd") or str(cache / "bin" / "etcd")
    if not os.access(etcd, os.X_OK):
        raise KubeUnavailable(f"etcd not found on PATH nor in {cache}/bin; {hint}")
    apiserver, controller_manager, scheduler = paths
    return KubeBinaries(apiserver, controller_manager, scheduler, Path(etcd))


def kube_availability() -> tuple[KubeBinaries | None, str]:
    """``(binaries, "")`` when the tier can run, else ``(None, reason)``."""
    try:
        return find_kube_binaries(), ""
    except KubeUnavailable as exc:
        return None, str(exc)
