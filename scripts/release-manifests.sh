#!/usr/bin/env bash
# One install.yaml for `kubectl apply -f`: the chart rendered with the release namespace created, the
# CRDs first, the webhook certificates by cert-manager, and IMAGE (repository:tag) on every container.
#   usage: bash scripts/release-manifests.sh IMAGE OUT
set -euo pipefail
IMAGE="$1"
OUT="$2"
HELM="${FHPA_HELM_DIR:-$HOME/.cache/federated-hpa/helm}/bin/helm"
case "$IMAGE" in
  *:*) repo="${IMAGE%:*}"; tag="${IMAGE##*:}" ;;
  *) echo "IMAGE must be repository:tag, got $IMAGE" >&2; exit 2 ;;
esac
mkdir -p "$(dirname "$OUT")"
{
  echo "# federated-hpa install manifests (image $IMAGE), rendered from charts/federated-hpa."
  echo "# Needs cert-manager. kubectl apply --server-side -f install.yaml"
  "$HELM" template federated-hpa charts/federated-hpa --namespace federated-hpa-system --include-crds \
    --set createNamespace=true --set image.repository="$repo" --set image.tag="$tag" \
    --set webhook.certificates.mode=certManager
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "wrote $OUT"
