#!/usr/bin/env bash
# The project's test command (README: `npm test`; CI: .ci/run calls exactly this).
# Builds the n8n package, lints it in strict mode, provisions the real runtimes (Temporal CLI, n8n on
# Node 24) and runs every test with node's own test runner. A missing runtime fails the run loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s globstar nullglob

if [ ! -d node_modules/@temporalio/worker ] && [ ! -d worker/node_modules/@temporalio/worker ]; then
  echo "== installing packages (npm install --ignore-scripts)"
  npm install --ignore-scripts --no-audit --no-fund
fi

echo "== build (tsc)"
npm run -s build
echo "== typecheck (workflows/, worker/src/, simulator/: tsconfig.workers.json)"
npm run -s typecheck
echo "== n8n-node lint (strict)"
npx --no-install n8n-node lint

echo "== provisioning real runtimes"
TEMPORAL_BIN="$(bash scripts/temporal.sh path)"
export TEMPORAL_BIN
echo "temporal: $TEMPORAL_BIN"
CHROMIUM_BIN="$(bash scripts/chromium.sh path)"
export CHROMIUM_BIN
echo "chromium: $CHROMIUM_BIN"
if true; then
  N8N_RUNTIME="$(bash scripts/n8n.sh path)"
  export N8N_RUNTIME
  echo "n8n runtime: $N8N_RUNTIME"
fi

files=(test/**/*.test.mts)
if [ "${#files[@]}" -eq 0 ]; then echo "no test files found" >&2; exit 1; fi
echo "== ${#files[@]} test files"
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${files[@]}"
