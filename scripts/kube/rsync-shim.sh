#!/usr/bin/env bash
# Stand-in for `rsync -pc SRC... DST`, the one form Kubernetes' hack/lib/golang.sh uses to copy
# built binaries; the build machine need not have rsync. Options are dropped, `cp -p` copies.
args=()
for a in "$@"; do
  case "$a" in -*) ;; *) args+=("$a") ;; esac
done
exec cp -p "${args[@]}"
