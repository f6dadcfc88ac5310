#!/usr/bin/env bash
# Build the real Kubernetes member control plane used by the kube test tier (tests/e2e/kube/).
#
# What it produces (all OUTSIDE the repository, in $FHPA_KUBE_DIR, default
# ~/.cache/federated-hpa/kube):
#   bin/kube-apiserver, bin/kube-controller-manager, bin/kube-scheduler
#                 Kubernetes v1.20.2, compiled from Debian bookworm's `kubernetes` source package
#                 (the last Debian source that keeps the full upstream tree; later ones ship only
#                 kubectl) with Go 1.15 from Debian bullseye (what upstream built 1.20 with)
#   bin/etcd      only when etcd is not on PATH: Debian's etcd-server, unpacked, not installed
#   build.stamp   what the binaries were built from (recipe, source and Go versions)
#   status        "ok ..." or "failed: <reason>" (read by tests/conftest.py)
#   make.log      the full compiler output of the last build
#
# Everything is fetched with a PRIVATE apt state ($FHPA_KUBE_DIR/apt: own sources list, lists,
# cache, dpkg status) from the Debian mirror the machine's apt already uses
# (scripts/debian-mirror.sh); the system's apt configuration is never modified and nothing is
# installed system-wide, so no root is needed. Upstream's `make WHAT=...` builds in GOPATH mode
# over the vendored tree: no Go module downloads.
#
# Cold cost on 2 cores: 4 min on a quiet machine, up to ~13 min under load (code generators, then
# the compile), ~90 MB downloaded; afterwards only bin/ (~270 MB) is kept unless FHPA_KUBE_KEEP_TREE=1.
# Re-running is cheap: when the binaries exist and build.stamp records the current recipe the
# script exits at once.
#
#   usage: bash scripts/kube-build.sh        (exit 0 = ready, non-zero = tier unavailable)
# FHPA_KUBE_GO=1.19 builds with bookworm's Go 1.19 instead (then the vendored reflect2 is
# replaced by Debian's 1.0.2, without which kube-apiserver crashes at its first JSON map encode).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${FHPA_KUBE_DIR:-$HOME/.cache/federated-hpa/kube}"
STAMP="$DIR/build.stamp"
STATUS="$DIR/status"
SRC_VER="1.20.5+really1.20.2-1.1+deb12u1"   # bookworm's kubernetes source package
UPSTREAM="1.20.2"
GO_VER="${FHPA_KUBE_GO:-1.15}"
TARGETS="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler"
BINARIES="kube-apiserver kube-controller-manager kube-scheduler"
PROGRESS_EVERY="${FHPA_KUBE_PROGRESS_S:-30}"
# Bump when the recipe (source, Go, flags, layout) changes, so present builds are redone.
RECIPE=1
START=$SECONDS

say() { printf '[kube-build %4ss] %s\n' "$((SECONDS - START))" "$*"; }
fail() {
  printf '[kube-build] FAILED: %s\n' "$*" >&2
  printf '[kube-build] the kube test tier will be unavailable (tests skip, or fail under CI=true)\n' >&2
  mkdir -p "$DIR" 2>/dev/null && printf 'failed: %s\n' "$*" > "$STATUS" 2>/dev/null || true
  exit 1
}
trap 'fail "unexpected error at line $LINENO (command: $BASH_COMMAND)"' ERR

mkdir -p "$DIR" || fail "cannot create $DIR"

# One build at a time per cache directory (several sessions may run `make test` at once).
exec 9>"$DIR/.lock"
if ! flock -n 9; then
  say "another kube-build is running on $DIR; waiting for it"
  flock 9
fi

stamp_ok() {
  [ -f "$STAMP" ] && grep -qx "recipe=$RECIPE" "$STAMP" && grep -qx "go_series=$GO_VER" "$STAMP" || return 1
  local b
  for b in $BINARIES; do [ -x "$DIR/bin/$b" ] || return 1; done
  return 0
}

etcd_ok() { command -v etcd >/dev/null 2>&1 || [ -x "$DIR/bin/etcd" ]; }

if stamp_ok && etcd_ok; then
  say "reusing $DIR/bin ($(grep '^kubernetes=' "$STAMP"), $(grep '^go=' "$STAMP" | cut -d' ' -f3))"
  printf 'ok %s\n' "$DIR/bin" > "$STATUS"
  say "ready"
  exit 0
fi

for tool in apt-get dpkg-deb tar make flock sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || fail "required tool '$tool' not found (Debian-based machine needed)"
done

# ----------------------------------------------------------------------------------------------
# 1. Private apt state on the machine's own Debian mirror.
MIRROR="$(bash "$REPO/scripts/debian-mirror.sh")" \
  || fail "no Debian mirror in the machine's apt sources (see the message above)"
APT="$DIR/apt"
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$DIR/debs" "$DIR/src" "$DIR/bin"
touch "$APT/status"
GO_SUITE=bullseye
[ "$GO_VER" = 1.15 ] || GO_SUITE=bookworm
{
  echo "deb $MIRROR bookworm main"
  echo "deb-src $MIRROR bookworm main"
  [ "$GO_SUITE" = bookworm ] || echo "deb $MIRROR $GO_SUITE main"
} > "$APT/sources.list"
APT_OPTS=(-o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$APT/lists" -o Dir::Cache="$APT/cache"
          -o Dir::State::status="$APT/status" -o APT::Architecture=amd64)
if [ "$(id -u)" = 0 ]; then
  # The cache lives in root's home, which the _apt sandbox user cannot write to.
  APT_OPTS+=(-o APT::Sandbox::User=root)
fi
say "step 1/5: reading the bookworm and $GO_SUITE indexes from $MIRROR (private apt state in $APT)"
apt-get "${APT_OPTS[@]}" update -qq --error-on=any \
  || fail "apt-get update of the private index from $MIRROR failed (no network to the mirror?)"

if stamp_ok; then
  # The binaries are current; only etcd is missing (it left PATH since they were built).
  say "step 2/5: binaries current; fetching Debian's etcd-server alone"
  rm -rf "$DIR/etcd-root" && mkdir -p "$DIR/etcd-root"
  (cd "$DIR/debs" && apt-get "${APT_OPTS[@]}" download -qq etcd-server) \
    || fail "apt-get download of etcd-server failed"
  for f in "$DIR"/debs/etcd-server_*.deb; do dpkg-deb -x "$f" "$DIR/etcd-root" || fail "dpkg-deb -x $f failed"; done
  [ -x "$DIR/etcd-root/usr/bin/etcd" ] || fail "etcd-server provided no usr/bin/etcd"
  cp -p "$DIR/etcd-root/usr/bin/etcd" "$DIR/bin/etcd"
  rm -rf "$DIR/etcd-root" "$DIR/debs" "$APT/lists" "$APT/cache"
  printf 'ok %s\n' "$DIR/bin" > "$STATUS"
  say "ready: etcd unpacked at $DIR/bin/etcd"
  exit 0
fi

# ----------------------------------------------------------------------------------------------
# 2. Sources and toolchain.
K="$DIR/src/kubernetes-$UPSTREAM"
say "step 2/5: downloading the kubernetes=$SRC_VER source package (~35 MB)"
(cd "$DIR/src" && apt-get "${APT_OPTS[@]}" source --download-only -qq "kubernetes=$SRC_VER") \
  || fail "cannot download source package kubernetes=$SRC_VER from bookworm (left the mirror?)"
rm -rf "$K" "$K.tmp"
mkdir -p "$K.tmp"
tar -C "$K.tmp" -xzf "$DIR/src/kubernetes_1.20.5+really$UPSTREAM.orig.tar.gz" \
  || fail "cannot unpack the kubernetes orig tarball"
mv "$K.tmp/kubernetes-$UPSTREAM" "$K"
rmdir "$K.tmp"
for d in $TARGETS pkg/controller/podautoscaler vendor; do
  [ -d "$K/$d" ] || fail "the source package has no $d (not the full upstream tree)"
done

GO_PKGS=("golang-$GO_VER-go" "golang-$GO_VER-src")
EXTRA=()
[ "$GO_VER" = 1.15 ] || EXTRA+=(golang-github-modern-go-reflect2-dev)
etcd_ok || EXTRA+=(etcd-server)
say "step 2/5: downloading ${GO_PKGS[*]} ${EXTRA[*]} (.debs, unpacked into $DIR/root)"
rm -f "$DIR"/debs/*.deb
(cd "$DIR/debs" && apt-get "${APT_OPTS[@]}" download -qq "${GO_PKGS[@]}" "${EXTRA[@]}") \
  || fail "apt-get download of ${GO_PKGS[*]} ${EXTRA[*]} failed"
rm -rf "$DIR/root"
mkdir -p "$DIR/root"
for f in "$DIR"/debs/*.deb; do dpkg-deb -x "$f" "$DIR/root" || fail "dpkg-deb -x $f failed"; done
GOROOT_DIR="$DIR/root/usr/lib/go-$GO_VER"
[ -x "$GOROOT_DIR/bin/go" ] || fail "Go toolchain not found at $GOROOT_DIR/bin/go"
GO_VERSION="$("$GOROOT_DIR/bin/go" version)"
say "step 2/5: $GO_VERSION"
if [ -x "$DIR/root/usr/bin/etcd" ]; then
  cp -p "$DIR/root/usr/bin/etcd" "$DIR/bin/etcd"
  say "step 2/5: etcd not on PATH: using Debian's, unpacked at $DIR/bin/etcd"
fi

# ----------------------------------------------------------------------------------------------
# 3. Two adjustments to the tree, both outside the Go code that runs in the tests.
if [ "$GO_VER" != 1.15 ]; then
  # Vendored reflect2 v1.0.1 breaks under Go >= 1.18 (SIGSEGV in map iteration); 1.0.2 fixes it.
  R2="$DIR/root/usr/share/gocode/src/github.com/modern-go/reflect2"
  [ -d "$R2" ] || fail "golang-github-modern-go-reflect2-dev did not provide $R2"
  rm -rf "$K/vendor/github.com/modern-go/reflect2"
  cp -a "$R2" "$K/vendor/github.com/modern-go/reflect2"
  say "step 3/5: vendor/github.com/modern-go/reflect2 replaced by Debian's (Go $GO_VER)"
fi
# hack/lib/golang.sh copies the built binaries with `rsync -pc SRC DST`; rsync may be absent.
SHIM="$DIR/shim"
mkdir -p "$SHIM"
cp "$REPO/scripts/kube/rsync-shim.sh" "$SHIM/rsync"
chmod +x "$SHIM/rsync"
say "step 3/5: tree ready ($(du -sh "$K" | cut -f1))"

# ----------------------------------------------------------------------------------------------
# 4. make WHAT=... in the background, with a progress line every $PROGRESS_EVERY seconds.
LOG="$DIR/make.log"
say "step 4/5: make WHAT=\"$TARGETS\" ($(nproc) cores; 4-13 min cold by machine load: code generators first, then the compile)"
say "step 4/5: full output in $LOG"
(
  cd "$K"
  export PATH="$GOROOT_DIR/bin:$SHIM:/usr/sbin:/usr/bin:/sbin:/bin"
  export GOPROXY=off GOFLAGS= CGO_ENABLED=0 GOTOOLCHAIN=local GOTELEMETRY=off
  export HOME="$DIR/home"
  mkdir -p "$HOME"
  exec make WHAT="$TARGETS"
) > "$LOG" 2>&1 &
MAKE_PID=$!
COMPILER="$GOROOT_DIR/pkg/tool/linux_amd64/compile"
while kill -0 "$MAKE_PID" 2>/dev/null; do
  for _ in $(seq "$PROGRESS_EVERY"); do
    kill -0 "$MAKE_PID" 2>/dev/null || break
    sleep 1
  done
  kill -0 "$MAKE_PID" 2>/dev/null || break
  # What is compiling now: the -p argument of our own toolchain's compile processes.
  pkg="$(ps -eo args= | awk -v c="$COMPILER" '$1 == c { for (i = 2; i < NF; i++) if ($i == "-p") print $(i + 1) }' \
         | sed 's#^k8s.io/kubernetes/vendor/##' | head -2 | paste -sd ' ' || true)"
  # upstream's phase lines look like "+++ [1124 12:18:14] Building go targets for linux/amd64:"
  # followed by the targets, one per line
  phase="$(awk '/^\+\+\+ /{p=$0; sub(/^\+\+\+ \[[0-9 :]*\] /, "", p); t=""; next}
                /^    /{t=t (t ? " " : "") $1; next} END{print p (t ? " " t : "")}' "$LOG" | cut -c1-110 || true)"
  say "step 4/5: still building: ${phase:-starting}${pkg:+; compiling $pkg}"
done
if ! wait "$MAKE_PID"; then
  tail -30 "$LOG" >&2
  fail "make failed after $((SECONDS - START)) s (last lines above, full log in $LOG)"
fi

# ----------------------------------------------------------------------------------------------
# 5. Install the binaries, stamp, clean up.
for b in $BINARIES; do
  [ -x "$K/_output/bin/$b" ] || fail "make succeeded but $K/_output/bin/$b is missing"
  cp -p "$K/_output/bin/$b" "$DIR/bin/$b.tmp"
  mv "$DIR/bin/$b.tmp" "$DIR/bin/$b"
  say "step 5/5: $b $("$DIR/bin/$b" --version 2>&1 | head -1) ($(du -h "$DIR/bin/$b" | cut -f1))"
done
{
  echo "recipe=$RECIPE"
  echo "go_series=$GO_VER"
  echo "kubernetes=$SRC_VER"
  echo "go=$GO_VERSION"
  echo "build_seconds=$((SECONDS - START))"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$STAMP"
if [ "${FHPA_KUBE_KEEP_TREE:-0}" != 1 ]; then
  # Only bin/ is needed to run; a rebuild downloads again (~10 s). FHPA_KUBE_KEEP_TREE=1 keeps all.
  say "step 5/5: removing the build tree ($(du -sh "$K" | cut -f1)), the toolchain and the downloads"
  rm -rf "$K" "$DIR/home" "$DIR/root" "$DIR/debs" "$DIR/src" "$APT/lists" "$APT/cache"
fi
etcd_ok || fail "no etcd on PATH and none unpacked in $DIR/bin"
printf 'ok %s\n' "$DIR/bin" > "$STATUS"
say "ready: $DIR/bin ($(du -sh "$DIR" | cut -f1) in $DIR)"
