#!/usr/bin/env bash
# Temporal CLI provisioning and dev server.
#
#   bash scripts/temporal.sh path                 print the path of a working `temporal` binary (only that, on stdout)
#   bash scripts/temporal.sh start [--ui] [--db FILE] [--port N] [--ui-port N] [--namespace NS]
#                                                 run `temporal server start-dev` on 127.0.0.1 (headless by default)
#
# Lookup order for `path`: $TEMPORAL_BIN → `temporal` on PATH → the cache
# ${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/temporal/bin/temporal → `go install` of the pinned CLI into the cache →
# the TypeScript SDK's own download (@temporalio/testing, needs internet) into the cache. Fails loudly otherwise.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail

TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/temporal"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

log() { echo "temporal.sh: $*" >&2; }

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
    if ! p="$(find_temporal)"; then
      log "ERROR: no working temporal CLI. Set TEMPORAL_BIN, put 'temporal' on PATH, install Go (for go install"
      log "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION) or allow the SDK download (internet)."
      exit 1
    fi
    echo "$p"
    ;;
  start)
    ui=0; db=""; port=7233; uiport=""; ns="default"
    while [ $# -gt 0 ]; do
      case "$1" in
        --ui) ui=1 ;;
        --db) db="$2"; shift ;;
        --port) port="$2"; shift ;;
        --ui-port) uiport="$2"; shift ;;
        --namespace) ns="$2"; shift ;;
        *) log "unknown option $1"; exit 2 ;;
      esac
      shift
    done
    bin="$(bash "$0" path)"
    # eager activity dispatch, as in demo/stack.mts (DEV_SERVER_DYNAMIC_CONFIG)
    args=(server start-dev --ip 127.0.0.1 --port "$port" --namespace "$ns" --log-level error
      --dynamic-config-value system.enableActivityEagerExecution=true
      # the runbooks' custom search attributes (workflows/attackResponse/searchAttributes.mts; test/unit/observability.test.mts checks this list)
      --search-attribute SecsvcSite=Keyword --search-attribute SecsvcPhase=Keyword --search-attribute SecsvcOutcome=Keyword
      --search-attribute SecsvcEventId=Keyword --search-attribute SecsvcDryRun=Bool)
    if [ "$ui" = 1 ]; then
      args+=(--ui-ip 127.0.0.1)
      [ -n "$uiport" ] && args+=(--ui-port "$uiport")
    else
      args+=(--headless)
    fi
    [ -n "$db" ] && args+=(--db-filename "$db")
    log "exec $bin ${args[*]}"
    exec "$bin" "${args[@]}"
    ;;
  *)
    echo "usage: bash scripts/temporal.sh path | start [--ui] [--db FILE] [--port N] [--ui-port N] [--namespace NS]" >&2
    exit 2
    ;;
esac
