#!/usr/bin/env bash
# `npm run bench [-- --only 1,3,4,5,6 --sizes 50,500 --runs 3]`: benchmarks side by side, table + bench/results.json.
set -euo pipefail
cd "$(dirname "$0")/.."
TEMPORAL_BIN="$(bash scripts/temporal.sh path)"
export TEMPORAL_BIN
exec node --import tsx bench/run.mts "$@"
