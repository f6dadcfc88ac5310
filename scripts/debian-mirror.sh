#!/usr/bin/env bash
# Print the Debian archive mirror this machine's apt is configured with, or fail.
#
# Used by scripts/realapi-build.sh and scripts/kube-build.sh: both fetch Debian packages through a
# private apt state and must use the mirror the machine already trusts (no host name is written in
# the project). Looked at, in order: deb822 files /etc/apt/sources.list.d/*.sources, then the
# one-line files /etc/apt/sources.list and /etc/apt/sources.list.d/*.list. An entry counts as the
# Debian archive when one of its suites is the machine's release codename or a
# "<codename>-updates"/"-backports" suite of it (security archives, third-party repositories such
# as "nodistro" or "cloud-sdk-bookworm" and disabled entries are skipped).
#
#   usage: bash scripts/debian-mirror.sh      prints e.g. "http://<host>/debian", exit 0
#          exit 1 with a reason on stderr when none is found
# FHPA_DEBIAN_MIRROR overrides the lookup (for machines whose apt points at a proxy path).
set -euo pipefail

if [ -n "${FHPA_DEBIAN_MIRROR:-}" ]; then
  printf '%s\n' "$FHPA_DEBIAN_MIRROR"
  exit 0
fi

ETC="${FHPA_APT_ETC:-/etc/apt}"   # overridable for the script's own tests
CODENAME=""
if [ -r "${FHPA_OS_RELEASE:-/etc/os-release}" ]; then
  CODENAME="$(. "${FHPA_OS_RELEASE:-/etc/os-release}" && printf '%s' "${VERSION_CODENAME:-}")"
fi
if [ -z "$CODENAME" ]; then
  echo "debian-mirror: cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release)" >&2
  exit 1
fi

# Suites that mark the main Debian archive for this release.
is_archive_suite() {
  case "$1" in
    "$CODENAME" | "$CODENAME"-updates | "$CODENAME"-backports) return 0 ;;
    *) return 1 ;;
  esac
}

# deb822: paragraphs separated by blank lines; fields Types, URIs, Suites, Enabled.
from_deb822() {
  awk -v RS= -v FS='\n' '{
      types=""; uris=""; suites=""; enabled="yes"
      for (i = 1; i <= NF; i++) {
        line = $i
        if (line ~ /^#/) continue
        if (line ~ /^Types:/)   { sub(/^Types:[ \t]*/, "", line); types = line }
        if (line ~ /^URIs:/)    { sub(/^URIs:[ \t]*/, "", line); uris = line }
        if (line ~ /^Suites:/)  { sub(/^Suites:[ \t]*/, "", line); suites = line }
        if (line ~ /^Enabled:/) { sub(/^Enabled:[ \t]*/, "", line); enabled = tolower(line) }
      }
      if (enabled == "no" || types !~ /(^| )deb( |$)/) next
      split(uris, u, /[ \t]+/); n = split(suites, s, /[ \t]+/)
      for (j = 1; j <= n; j++) print u[1], s[j]
    }' "$1"
}

# one-line format: "deb [options] URI suite components..."
from_list() {
  awk '$1 == "deb" {
      i = 2
      if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      print $i, $(i + 1)
    }' "$1"
}

candidates() {
  local f
  for f in "$ETC"/sources.list.d/*.sources; do [ -f "$f" ] && from_deb822 "$f"; done
  [ -f "$ETC/sources.list" ] && from_list "$ETC/sources.list"
  for f in "$ETC"/sources.list.d/*.list; do [ -f "$f" ] && from_list "$f"; done
  return 0
}

while read -r uri suite; do
  [ -n "$uri" ] || continue
  case "$uri" in http://* | https://*) ;; *) continue ;; esac
  if is_archive_suite "$suite"; then
    printf '%s\n' "${uri%/}"
    exit 0
  fi
done < <(candidates)

echo "debian-mirror: no Debian archive for '$CODENAME' found in $ETC/sources.list or" \
     "$ETC/sources.list.d/*.sources|*.list; add one, or set FHPA_DEBIAN_MIRROR" >&2
exit 1
