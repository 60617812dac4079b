#!/usr/bin/env bash
# `npm run demo [-- --keep] [-- --attack-seconds N --cooldown N --every N --ephemeral]`
# Builds/obtains what the demo needs (the Temporal CLI via scripts/temporal.sh; the workflow bundle is built by the
# worker at start), then runs scripts/demo.mts: simulator + Temporal dev server (Web UI) + worker + a simulated attack.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules/@temporalio/worker ] || [ ! -d node_modules/tsx ]; then
  echo "demo: installing the project's packages (npm install --ignore-scripts)" >&2
  npm install --ignore-scripts --no-audit --no-fund >&2
fi
TEMPORAL_BIN="$(bash scripts/temporal.sh path)"
export TEMPORAL_BIN
exec node --import tsx scripts/demo.mts "$@"
