#!/usr/bin/env bash
# Prints the path of `actionlint` (lints .github/workflows/). Built once with `go install` from the Go module proxy
# into ${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/actionlint/bin (outside the clone), like scripts/temporal.sh.
#
#   bash scripts/actionlint.sh path   # only the path on stdout; progress on stderr; fails loudly when impossible
set -euo pipefail
VERSION="${ACTIONLINT_VERSION:-v1.7.7}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/actionlint"
log() { echo "[actionlint.sh] $*" >&2; }
works() { [ -n "${1:-}" ] && [ -x "$1" ] && "$1" -version >/dev/null 2>&1; }

if [ -n "${ACTIONLINT_BIN:-}" ] && works "$ACTIONLINT_BIN"; then echo "$ACTIONLINT_BIN"; exit 0; fi
if works "$CACHE/bin/actionlint"; then echo "$CACHE/bin/actionlint"; exit 0; fi
command -v go >/dev/null 2>&1 || { log "ERROR: go not found (needed to build actionlint $VERSION); set ACTIONLINT_BIN"; exit 1; }
mkdir -p "$CACHE/bin"
exec 9>"$CACHE/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if ! works "$CACHE/bin/actionlint"; then
  log "building github.com/rhysd/actionlint/cmd/actionlint@$VERSION with go install"
  GOBIN="$CACHE/bin" GOFLAGS="${GOFLAGS:-} -mod=mod" go install "github.com/rhysd/actionlint/cmd/actionlint@$VERSION" >&2
fi
works "$CACHE/bin/actionlint" || { log "ERROR: actionlint not built"; exit 1; }
echo "$CACHE/bin/actionlint"
