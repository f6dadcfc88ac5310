#!/usr/bin/env bash
# Debian's lua5.1 (the Lua version Argo CD's interpreter implements), for the Argo CD customization
# tests (tests/manifests/test_argocd_testdata.py). Installed with apt-get when missing; a no-op after.
set -euo pipefail
if command -v lua5.1 >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "[lua-install] lua5.1 is missing and this is not root: run 'sudo apt-get install lua5.1'" >&2
  exit 1
fi
apt-get install -y -q lua5.1 >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q lua5.1 >/dev/null; }
echo "[lua-install] $(lua5.1 -v 2>&1)"
