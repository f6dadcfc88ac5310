#!/usr/bin/env bash
# Build the "real Kubernetes API server" used by the realapi test tier.
#
# What it produces (all OUTSIDE the repository, in $FHPA_REALAPI_DIR,
# default ~/.cache/federated-hpa/realapi):
#   bin/apiextensions-apiserver   the standalone CRD-serving half of kube-apiserver, built from
#                                 Debian sid's Go source packages with scripts/realapi/server.patch
#   build.stamp                   what the binary was built from (patch hash, package versions)
#   status                        "ok ..." or "failed: <reason>" (read by tests/conftest.py)
# and, when `etcd` is not on PATH, installs Debian's etcd-server from the system's own apt sources.
#
# The sid packages are fetched with a PRIVATE apt state (own sources list, lists and cache under
# $FHPA_REALAPI_DIR/apt); the system's apt configuration is never modified. The Go build itself
# needs no root: `apt-get download` + `dpkg-deb -x` into the cache, then `go build` in GOPATH mode.
#
# Re-running is cheap: when the binary exists and build.stamp records the current patch hash the
# script only checks etcd and exits. Set FHPA_REALAPI_REFRESH=1 to re-read sid's index and pick up
# newer package versions.
#
#   usage: bash scripts/realapi-build.sh        (exit 0 = ready, non-zero = tier unavailable)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${FHPA_REALAPI_DIR:-$HOME/.cache/federated-hpa/realapi}"
PATCH="$REPO/scripts/realapi/server.patch"
BIN="$DIR/bin/apiextensions-apiserver"
STAMP="$DIR/build.stamp"
STATUS="$DIR/status"
SUITE="${FHPA_REALAPI_SUITE:-sid}"
GO_PKG="${FHPA_REALAPI_GO_PKG:-golang-1.27-go}"
SRC_PKG="golang-k8s-apiextensions-apiserver-dev"
# Bump when the build recipe (flags, ldflags, layout) changes, so present builds are redone.
RECIPE=2
START=$SECONDS

say() { printf '[realapi-build %3ss] %s\n' "$((SECONDS - START))" "$*"; }
fail() {
  printf '[realapi-build] FAILED: %s\n' "$*" >&2
  printf '[realapi-build] the realapi test tier will be unavailable (tests skip, or fail under CI=true)\n' >&2
  mkdir -p "$DIR" 2>/dev/null && printf 'failed: %s\n' "$*" > "$STATUS" 2>/dev/null || true
  exit 1
}
trap 'fail "unexpected error at line $LINENO (command: $BASH_COMMAND)"' ERR

mkdir -p "$DIR" || fail "cannot create $DIR"
[ -f "$PATCH" ] || fail "patch file missing: $PATCH"
grep -q '^+++ ' "$PATCH" || fail "$PATCH contains no diff"
PATCH_SHA="$(sha256sum "$PATCH" | cut -d' ' -f1)"

# One build at a time per cache directory (several engineers / sessions may run `make test`).
exec 9>"$DIR/.lock"
if ! flock -n 9; then
  say "another realapi-build is running on $DIR; waiting for it"
  flock 9
fi

# --------------------------------------------------------------------------------------------
# etcd: a normal package from the system's configured Debian release (bookworm: etcd-server 3.4).
ensure_etcd() {
  if command -v etcd >/dev/null 2>&1; then
    say "etcd present: $(command -v etcd) ($(etcd --version 2>/dev/null | head -1))"
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    fail "etcd is not installed and this is not root; run: sudo apt-get install etcd-server"
  fi
  say "etcd missing: apt-get update && apt-get install etcd-server (system apt sources)"
  apt-get update -qq || fail "apt-get update (system sources) failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server \
    || fail "apt-get install etcd-server failed"
  command -v etcd >/dev/null 2>&1 || fail "etcd-server installed but no etcd on PATH"
  # The package's maintainer script may start a system etcd on :2379; the tests never use it
  # (each harness runs its own etcd on free loopback ports), so it is left alone.
  say "etcd installed: $(etcd --version 2>/dev/null | head -1)"
}

# --------------------------------------------------------------------------------------------
# Fast path: present build made with the current patch.
if [ -x "$BIN" ] && [ -f "$STAMP" ] && grep -qx "patch_sha256=$PATCH_SHA" "$STAMP" \
   && grep -qx "recipe=$RECIPE" "$STAMP" && [ "${FHPA_REALAPI_REFRESH:-0}" != 1 ]; then
  say "reusing $BIN (patch hash and recipe match build.stamp)"
  ensure_etcd
  printf 'ok %s\n' "$BIN" > "$STATUS"
  say "ready"
  exit 0
fi

for tool in apt-get apt-cache dpkg-deb patch sha256sum flock; do
  command -v "$tool" >/dev/null 2>&1 || fail "required tool '$tool' not found (Debian-based machine needed)"
done

APT="$DIR/apt"
DEBS="$DIR/debs"
ROOT="$DIR/root"
MANIFEST="$DIR/packages.txt"       # "name=version" of what is extracted in $ROOT
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$DEBS" "$DIR/bin" "$DIR/gocache"

# --------------------------------------------------------------------------------------------
# 1. Go toolchain + k8s sources from sid, unless already extracted (and no refresh requested).
need_sources=1
if [ -f "$MANIFEST" ] && [ -d "$ROOT/usr/share/gocode/src/k8s.io/apiextensions-apiserver" ] \
   && [ "${FHPA_REALAPI_REFRESH:-0}" != 1 ]; then
  need_sources=0
  say "step 1/4: Go sources already extracted ($(wc -l < "$MANIFEST") packages); skipping download"
fi

if [ "$need_sources" = 1 ]; then
  # The machine's own Debian mirror (scripts/debian-mirror.sh reads its apt sources); no
  # fallback host: without a configured mirror the tier cannot be built, and the message says so.
  MIRROR="${FHPA_REALAPI_MIRROR:-}"
  if [ -z "$MIRROR" ]; then
    MIRROR="$(bash "$REPO/scripts/debian-mirror.sh")" \
      || fail "no Debian mirror in the machine's apt sources (see the message above)"
  fi
  echo "deb $MIRROR $SUITE main" > "$APT/sources.list"
  APT_OPTS=(-o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o Dir::State::Lists="$APT/lists" -o Dir::Cache="$APT/cache"
            -o APT::Architecture=amd64)
  if [ "$(id -u)" = 0 ]; then
    # The cache lives in root's home, which the _apt sandbox user cannot write to.
    APT_OPTS+=(-o APT::Sandbox::User=root)
  fi

  say "step 1/4: reading the $SUITE index from $MIRROR (private apt state in $APT)"
  apt-get "${APT_OPTS[@]}" update -qq --error-on=any \
    || fail "apt-get update of the private $SUITE index from $MIRROR failed (no network to Debian?)"

  say "step 1/4: resolving the golang-* dependency closure of $SRC_PKG and $GO_PKG"
  apt-cache "${APT_OPTS[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "$SRC_PKG" "$GO_PKG" 2>/dev/null \
    | grep -v '^[ <]' | grep '^golang-' | sort -u > "$DIR/golist.txt" || true
  grep -qx "$SRC_PKG" "$DIR/golist.txt" || fail "$SRC_PKG is not in $SUITE any more (see $DIR/golist.txt)"
  grep -qx "$GO_PKG" "$DIR/golist.txt" || fail "$GO_PKG is not in $SUITE (set FHPA_REALAPI_GO_PKG)"

  # name=version list of the candidates, used for naming the .debs and as the manifest.
  apt-cache "${APT_OPTS[@]}" show --no-all-versions $(cat "$DIR/golist.txt") 2>/dev/null \
    | awk '/^Package:/{p=$2} /^Version:/{print p "=" $2}' | sort -u > "$DIR/wanted.txt"
  [ "$(wc -l < "$DIR/wanted.txt")" -eq "$(wc -l < "$DIR/golist.txt")" ] \
    || fail "could not resolve a version for every package (see $DIR/golist.txt, $DIR/wanted.txt)"

  missing=()
  while IFS='=' read -r name ver; do
    enc="${ver//:/%3a}"
    if [ ! -s "$DEBS/${name}_${enc}_amd64.deb" ] && [ ! -s "$DEBS/${name}_${enc}_all.deb" ]; then
      missing+=("$name=$ver")
    fi
  done < "$DIR/wanted.txt"
  say "step 1/4: $(wc -l < "$DIR/wanted.txt") packages wanted, ${#missing[@]} to download"
  if [ "${#missing[@]}" -gt 0 ]; then
    (cd "$DEBS" && apt-get "${APT_OPTS[@]}" download -qq "${missing[@]}") \
      || fail "apt-get download from $SUITE failed"
  fi

  if [ -f "$MANIFEST" ] && cmp -s "$MANIFEST" "$DIR/wanted.txt" && [ -d "$ROOT" ]; then
    say "step 2/4: extracted tree already matches; skipping extraction"
  else
    say "step 2/4: extracting $(wc -l < "$DIR/wanted.txt") packages into $ROOT"
    rm -rf "$ROOT.new"
    mkdir -p "$ROOT.new"
    while IFS='=' read -r name ver; do
      enc="${ver//:/%3a}"
      f="$DEBS/${name}_${enc}_amd64.deb"
      [ -s "$f" ] || f="$DEBS/${name}_${enc}_all.deb"
      [ -s "$f" ] || fail "downloaded file for $name $ver not found in $DEBS"
      dpkg-deb -x "$f" "$ROOT.new" || fail "dpkg-deb -x $f failed"
    done < "$DIR/wanted.txt"
    rm -rf "$ROOT"
    mv "$ROOT.new" "$ROOT"
    cp "$DIR/wanted.txt" "$MANIFEST"
    # Old .debs of superseded versions are not needed any more.
    for f in "$DEBS"/*.deb; do
      base="$(basename "$f")"
      name="${base%%_*}"; rest="${base#*_}"; ver="${rest%_*}"; ver="${ver//%3a/:}"
      grep -qx "$name=$ver" "$MANIFEST" || rm -f "$f"
    done
  fi
fi

GOROOT_DIR="$ROOT/usr/lib/${GO_PKG%-go}"
GOROOT_DIR="${GOROOT_DIR/golang-/go-}"   # golang-1.27-go -> /usr/lib/go-1.27
[ -x "$GOROOT_DIR/bin/go" ] || fail "Go toolchain not found at $GOROOT_DIR/bin/go"
SYS_GOPATH="$ROOT/usr/share/gocode"
K8S_VER="$(awk -F= -v p="$SRC_PKG" '$1==p{print $2}' "$MANIFEST")"   # e.g. 0.36.4-1
K8S_VER="${K8S_VER%%-*}"; K8S_VER="${K8S_VER#*:}"
MINOR="$(echo "$K8S_VER" | cut -d. -f2)"; PATCHLVL="$(echo "$K8S_VER" | cut -d. -f3)"
[ -n "$MINOR" ] && [ -n "$PATCHLVL" ] || fail "cannot parse the $SRC_PKG version '$K8S_VER'"
GIT_VERSION="v1.$MINOR.$PATCHLVL"

# --------------------------------------------------------------------------------------------
# 3. Patched copy of the apiextensions-apiserver source on an overlay GOPATH.
OVERLAY="$DIR/overlay"
say "step 3/4: applying scripts/realapi/server.patch to a copy of k8s.io/apiextensions-apiserver $K8S_VER"
rm -rf "$OVERLAY"
mkdir -p "$OVERLAY/src/k8s.io"
cp -a "$SYS_GOPATH/src/k8s.io/apiextensions-apiserver" "$OVERLAY/src/k8s.io/apiextensions-apiserver"
if ! (cd "$OVERLAY/src/k8s.io/apiextensions-apiserver" \
      && patch -p1 --batch --forward --no-backup-if-mismatch < "$PATCH" > "$DIR/patch.log" 2>&1); then
  cat "$DIR/patch.log" >&2
  fail "scripts/realapi/server.patch does not apply to $SRC_PKG $K8S_VER (sid moved?); update the patch"
fi
sed 's/^/    /' "$DIR/patch.log"
want="$(grep -c '^+++ ' "$PATCH")"
got="$(grep -c '^patching file ' "$DIR/patch.log" || true)"
[ "$got" = "$want" ] || fail "patch touched $got of $want files (see $DIR/patch.log)"
if grep -qiE 'hunk|fuzz|offset|reversed|ignor' "$DIR/patch.log"; then
  say "note: the patch applied with offsets/fuzz; check it still does what it says"
fi

# --------------------------------------------------------------------------------------------
# 4. go build (GOPATH mode, no network, static).
say "step 4/4: go build (GOPATH mode, $(nproc) cores; ~3 min cold, seconds with a warm cache)"
export GOROOT="$GOROOT_DIR" GOPATH="$OVERLAY:$SYS_GOPATH" GOCACHE="$DIR/gocache"
export PATH="$GOROOT/bin:$PATH" GO111MODULE=off CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
export GOTELEMETRY=off
VPKG=k8s.io/component-base/version
LDFLAGS="-s -w -X $VPKG.gitVersion=$GIT_VERSION -X $VPKG.gitMajor=1 -X $VPKG.gitMinor=$MINOR"
LDFLAGS="$LDFLAGS -X $VPKG.gitTreeState=clean -X $VPKG.buildDate=1970-01-01T00:00:00Z"
LDFLAGS="$LDFLAGS -X $VPKG.gitCommit=debian-${SRC_PKG}-${K8S_VER}"
rm -f "$BIN.tmp"
if ! go build -trimpath -ldflags="$LDFLAGS" -o "$BIN.tmp" k8s.io/apiextensions-apiserver; then
  fail "go build of k8s.io/apiextensions-apiserver failed (see the compiler output above)"
fi
mv "$BIN.tmp" "$BIN"
{
  echo "patch_sha256=$PATCH_SHA"
  echo "recipe=$RECIPE"
  echo "k8s_source=$SRC_PKG=$K8S_VER"
  echo "go=$("$GOROOT/bin/go" version)"
  echo "git_version=$GIT_VERSION"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$STAMP"
say "built $BIN ($(du -h "$BIN" | cut -f1), reports $GIT_VERSION)"

ensure_etcd
printf 'ok %s\n' "$BIN" > "$STATUS"
say "ready"
