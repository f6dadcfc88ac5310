"""Manifests as the real `kubectl kustomize` renders them, so the tests read what users apply."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
needs_kubectl = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl not installed")

Documents = list[dict[str, Any]]


def kustomize(directory: Path, home: Path | None = None) -> Documents:
    """The documents ``directory`` renders to; skips without kubectl. No kubeconfig and a bare PATH, so
    the user's setup cannot change the output; ``home`` keeps kubectl's cache out of the user's home."""
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed")
    env = {"KUBECONFIG": "/dev/null", "PATH": "/usr/bin:/bin"}
    if home is not None:
        env |= {"HOME": str(home), "KUBECACHEDIR": str(home)}
    result = subprocess.run(
        [KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def by_kind_and_name(docs: Documents) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}
