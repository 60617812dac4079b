# Sourced by scripts/test.sh: runs test files from one queue in $SLOTS slots at once, longest expected first, each
# file as soon as a slot is free and the runtimes it needs are provisioned (test/README.md "What runs in parallel").
# Expects from test.sh: LOGS, T0, SLOTS, spec and the job_<name> functions of its named jobs. Each job's spec output goes to
# $LOGS/jobs/<n>.log, its per-file times to $LOGS/jobs/<n>.times, its CPU-seconds to $LOGS/jobs/<n>.cpu; $LOGS/schedule.tsv gets
# `start⇥end⇥exit⇥job` (seconds since T0) for every job, $LOGS/queue.log each start with the CPU pressure then.

# The runtimes a test file needs (provision names of test.sh), by folder; the files that need none run first.
job_needs() { # file-or-"cluster"
  case "$1" in
    cluster) echo "temporal n8n cluster-build" ;;
    checks) echo "" ;;
    test/unit/* | test/simulator/*) echo "" ;;
    test/temporal/observability.test.mts) echo "temporal chromium" ;;
    test/temporal/* | test/tenants/*) echo "temporal" ;;
    *) echo "temporal chromium n8n actionlint" ;;
  esac
}
# provision name -> exported variable
runtime_var() {
  case "$1" in
    temporal) echo TEMPORAL_BIN ;; chromium) echo CHROMIUM_BIN ;; n8n) echo N8N_RUNTIME ;;
    actionlint) echo ACTIONLINT_BIN ;; cluster-build) echo SECSVC_CLUSTER_BIN ;;
  esac
}
# 0: all ready; 1: some still provisioning; 2: one failed (its log printed once into the job's log)
runtimes_state() { # names...
  local n
  for n in "$@"; do
    [ -f "$LOGS/prov-$n.rc" ] || return 1
    [ "$(cat "$LOGS/prov-$n.rc")" = 0 ] || return 2
  done
  return 0
}
export_runtimes() { # names...: exports each runtime's variable from its provision output
  local n v
  for n in "$@"; do
    v="$(runtime_var "$n")"
    export "$v=$(cat "$LOGS/prov-$n.out")"
  done
}

# Expected seconds per file: this machine's last run (~/.cache/secsvc/test-file-times.tsv), else the committed
# figures (test/file-times.tsv), else 30 s. Lines `seconds⇥file` (a named job: its name); the cluster job is the sum
# of test/cluster's files.
TIMES_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/test-file-times.tsv"
expected_seconds() { # file-or-"cluster"
  local key="$1" f
  [ "$key" = cluster ] && key='test/cluster/'
  for f in "$TIMES_CACHE" test/file-times.tsv; do
    [ -s "$f" ] || continue
    awk -F'\t' -v k="$key" 'index($2, k) == 1 && (k ~ /\/$/ || $2 == k) { s += $1; n++ } END { if (n) printf "%d\n", s; else exit 1 }' "$f" && return 0
  done
  echo 30
}

# CPU pressure (the kernel's PSI "some avg10": % of the last 10 s in which a runnable task waited for a CPU); without
# PSI, the load average per core × 50. Above SECSVC_TEST_PRESSURE (default 40) the queue adds no job beyond
# SECSVC_TEST_MIN_SLOTS (default 2): on a machine that other work saturates, more files at once only make every
# file's waits and bounds slower (seen: load 35 on 2 cores, a 5-slot run failed its chaos files and an n8n migration
# took > 180 s).
cpu_pressure() {
  if [ -r /proc/pressure/cpu ]; then awk -F'[ =]' '/^some/ { printf "%d\n", $3 }' /proc/pressure/cpu
  else awk -v n="$(nproc)" '{ printf "%d\n", 50 * $1 / n }' /proc/loadavg; fi
}
room_for_more() { # running-count
  [ "$1" -lt "${SECSVC_TEST_MIN_SLOTS:-2}" ] && return 0
  [ "$1" -lt "$SLOTS" ] && [ "$(cpu_pressure)" -lt "${SECSVC_TEST_PRESSURE:-40}" ]
}

# Bounds (test/README.md "What runs in parallel"): a job still running after SECSVC_TEST_FILE_TIMEOUT seconds
# (default 1200) is stopped with its whole process group (set -m in test.sh gives each job its own) and counted as
# failed; after SECSVC_TEST_DEADLINE seconds since the start (0: none; .ci/run sets one inside CI's limit) no job
# starts and the running ones are stopped, so the summary is always printed. Each job's end is printed at once.
stop_job() { # pid reason: TERM to the job's group, KILL 10 s later; the reason and what was running into its log
  local pid="$1" log="$LOGS/jobs/${ids[${running[$1]}]}.log"
  { echo "✖ $2: stopped after $(( SECONDS - T0 - started[$pid] )) s; its processes then:"
    ps -o pid,etimes,args --no-headers -p "$(pgrep -d, -g "$pid")" 2>/dev/null | cut -c1-200 | sed 's/^/  /'; } >>"$log"
  group_cpu "$pid" "${running[$pid]}" >"${log%.log}.cpu"
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}
group_cpu() { # pgid job: `cpu⇥job (stopped)` for a job stopped at a bound — its live processes and what they reaped
  local stats
  stats="$(pgrep -g "$1" | sed 's|.*|/proc/&/stat|' | tr '\n' ' ')"
  # shellcheck disable=SC2086 # one path per process
  cat $stats 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" -v j="$2" '{ sub(/.*\) /, ""); s += $12 + $13 + $14 + $15 }
    END { printf "%.1f\t%s (stopped)\n", s / hz, j }'
}
stop_all_jobs() { local pid; for pid in "${!running[@]}"; do stop_job "$pid" "${1:-stopped}"; done; }
job_line() { # job exit: one line per finished job, printed as it ends
  local log="$LOGS/jobs/${ids[$1]}.log" p f
  p="$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$log" | tail -n1)"; f="$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$log" | tail -n1)"
  printf '[%5d s] %s %s: %s passed, %s failed (%d s)\n' "$(( SECONDS - T0 ))" "$([ "$2" = 0 ] && echo ok || echo FAILED)" \
    "$1" "${p:-0}" "${f:-0}" "$(( SECONDS - T0 - started_at[$1] ))"
}
reap_jobs() { # records every finished job; sets rc=1 when one failed
  local pid st job
  for pid in "${!running[@]}"; do
    job="${running[$pid]}"
    if kill -0 "$pid" 2>/dev/null; then
      [ $(( SECONDS - T0 - started[$pid] )) -ge "${SECSVC_TEST_FILE_TIMEOUT:-1200}" ] || continue
      stop_job "$pid" "file timeout (SECSVC_TEST_FILE_TIMEOUT=${SECSVC_TEST_FILE_TIMEOUT:-1200})"
    fi
    st=0; wait "$pid" 2>/dev/null || st=$?
    [ "$st" = 0 ] || rc=1
    printf '%d\t%d\t%d\t%s\n' "${started[$pid]}" "$(( SECONDS - T0 ))" "$st" "$job" >>"$LOGS/schedule.tsv"
    job_line "$job" "$st"
    unset "running[$pid]"
  done
}
past_deadline() { [ "${SECSVC_TEST_DEADLINE:-0}" -gt 0 ] && [ $(( SECONDS - T0 )) -ge "$SECSVC_TEST_DEADLINE" ]; }
heartbeat() { # each runtime when provisioned, and every 5 min what runs (a hang is visible in a CI log cut short)
  local f r
  for f in "$LOGS"/prov-*.rc; do
    [ -f "$f" ] || continue
    r="${f##*/prov-}"; r="${r%.rc}"
    [ -n "${announced[$r]:-}" ] && continue
    announced[$r]=1
    echo "[$(printf '%5d' $(( SECONDS - T0 ))) s] provisioned $r: exit $(cat "$f")"
    [ "$(cat "$f")" = 0 ] || tail -n 20 "$LOGS/prov-$r.log" | sed 's/^/  /'
  done
  [ "$SECONDS" -ge "$beat_at" ] || return 0
  beat_at=$(( SECONDS + 300 ))
  echo "[$(printf '%5d' $(( SECONDS - T0 ))) s] running: ${running[*]:-none}; queued: ${#queue[@]}; provisioned: $(cd "$LOGS" && ls prov-*.rc 2>/dev/null | sed 's/prov-\(.*\)\.rc/\1/' | tr '\n' ' ')"
}

job_body() { # job status-of-its-runtimes: its runtimes' variables, then the file or test.sh's function job_<name>
  local job="$1" r
  if [ "$2" = 2 ]; then
    for r in "${needs[@]}"; do
      [ "$(cat "$LOGS/prov-$r.rc")" = 0 ] && continue
      cat "$LOGS/prov-$r.log"
      echo "ERROR: provisioning $r failed (scripts/test.sh provision $r; its log is above); $job not run"
    done
    return 1
  fi
  export_runtimes "${needs[@]}"
  local st=0
  if declare -F "job_$job" >/dev/null; then SPEC_TIMES="$LOGS/jobs/$n.times" "job_$job" || st=$?
  else SPEC_TIMES="$LOGS/jobs/$n.times" spec "$job" || st=$?; fi
  job_cpu "$job" >"$LOGS/jobs/$n.cpu"
  return "$st"
}
# `cpu⇥job`: CPU-seconds (user + sys) of this job's subshell and every child it reaped, with theirs (bash's `times`).
# Not counted: a process nobody waits for (one its parent left behind: re-parented to init, reaped there).
job_cpu() { # job (`times` itself, not in a pipe: a forked shell starts with no children's times)
  times >"$LOGS/jobs/$n.times-raw"
  awk -v j="$1" '{ for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += 60 * t[1] + t[2] } }
    END { printf "%.1f\t%s\n", s, j }' "$LOGS/jobs/$n.times-raw"
}
launch_job() { # job status-of-its-runtimes: starts it in the background, its output into its own log
  local job="$1"
  n=$(( n + 1 )); ids[$job]=$n
  job_body "$job" "$2" </dev/null >"$LOGS/jobs/$n.log" 2>&1 &
  running[$!]="$job"; started[$!]=$(( SECONDS - T0 )); started_at[$job]=$(( SECONDS - T0 )); next_at=$(( SECONDS + 10 ))
  echo "$(( SECONDS - T0 ))s: start $job (${#running[@]} running, CPU pressure $(cpu_pressure)%)" >>"$LOGS/queue.log"
}

run_queue() { # jobs...: files, or names of test.sh's job_<name> functions; runs them in $SLOTS slots; 1 when any failed
  mkdir -p "$LOGS/jobs"
  : >"$LOGS/schedule.tsv"
  local queue=() job
  # longest expected first
  while IFS=$'\t' read -r _ job; do queue+=("$job"); done < <(
    for job in "$@"; do printf '%s\t%s\n' "$(expected_seconds "$job")" "$job"; done | sort -t$'\t' -k1,1 -rn
  )
  echo "== ${#queue[@]} jobs in $SLOTS slots, longest expected first: ${queue[*]:0:6} …"
  declare -A running=() started=() ids=() started_at=() announced=()
  local rc=0 n=0 i st needs next_at=0 beat_at=$(( SECONDS + 300 ))
  trap 'stop_all_jobs interrupted; exit 130' INT TERM
  while [ "${#queue[@]}" -gt 0 ] || [ "${#running[@]}" -gt 0 ]; do
    reap_jobs
    heartbeat
    if past_deadline; then
      echo "[$(( SECONDS - T0 )) s] SECSVC_TEST_DEADLINE=$SECSVC_TEST_DEADLINE reached: stopping ${#running[@]} jobs; not run: ${queue[*]:-none}"
      stop_all_jobs "deadline (SECSVC_TEST_DEADLINE=$SECSVC_TEST_DEADLINE s)"
      reap_jobs
      for job in "${queue[@]}"; do printf '%d\t%d\t%d\t%s\n' -1 -1 124 "not run: $job" >>"$LOGS/schedule.tsv"; done
      queue=(); rc=1
      break
    fi
    local launched=0
    # beyond the minimum, one more job at most every 10 s (PSI's window) and only while the CPUs have room
    if [ "${#running[@]}" -lt "${SECSVC_TEST_MIN_SLOTS:-2}" ] || { [ "$SECONDS" -ge "$next_at" ] && room_for_more "${#running[@]}"; }; then
      for i in "${!queue[@]}"; do
        job="${queue[$i]}"
        read -r -a needs <<<"$(job_needs "$job")"
        st=0; runtimes_state "${needs[@]}" || st=$?
        [ "$st" = 1 ] && continue
        launch_job "$job" "$st"
        unset "queue[$i]"; queue=("${queue[@]}")
        launched=1
        break
      done
    fi
    [ "$launched" = 1 ] || sleep 1
  done
  trap - INT TERM
  # one list in queue order for the summary: job number, name, log
  for job in "${!ids[@]}"; do printf '%d\t%s\n' "${ids[$job]}" "$job"; done | sort -n >"$LOGS/jobs.tsv"
  return "$rc"
}
