# Sourced by scripts/test.sh: runs test files from one queue in $SLOTS slots at once, longest expected first, each
# file as soon as a slot is free and the runtimes it needs are provisioned (test/README.md "What runs in parallel").
# Expects from test.sh: LOGS, T0, SLOTS, spec, the job_<name> functions of its named jobs and job_group. Each job's spec output goes to
# $LOGS/jobs/<n>.log, its per-file times to $LOGS/jobs/<n>.times, its CPU-seconds to $LOGS/jobs/<n>.cpu; $LOGS/schedule.tsv gets
# `start⇥end⇥exit⇥job` (seconds since T0) for every job, $LOGS/queue.log each start with the CPU pressure then.

# The runtimes a test file needs (provision names of test.sh), by folder; the files that need none run first.
job_needs() { # file-or-"cluster"
  case "$1" in
    cluster) echo "temporal n8n cluster-build" ;;
    checks | unit | simulator) echo "" ;;
    test/unit/* | test/simulator/*) echo "" ;;
    test/temporal/observability.test.mts) echo "temporal chromium" ;;
    test/temporal/* | test/tenants/* | temporal-group-*) echo "temporal" ;;
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
runtimes_state() { # names... (no process forked: the queue asks every second)
  local n c
  for n in "$@"; do
    [ -f "$LOGS/prov-$n.rc" ] || return 1
    read -r c <"$LOGS/prov-$n.rc"; [ "$c" = 0 ] || return 2
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

# Expected figures per job, `seconds⇥job⇥CPU-seconds` lines: this machine's last whole run
# (~/.cache/secsvc/test-file-times.tsv, written by test.sh), else the committed ones (test/file-times.tsv), else 30 s
# and half a core. They order the queue (longest first) and give each job its CPU rate (cores it keeps busy on
# average, at most 1): the higher of the two files' rates, as a run on a loaded machine stretches walls, not CPU-s.
TIMES_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/test-file-times.tsv"
expected() { # job: "seconds millicores"
  local files=() f
  for f in "$TIMES_CACHE" test/file-times.tsv; do [ -s "$f" ] && files+=("$f"); done
  awk -F'\t' -v k="$1" '$2 != k || $3 !~ /^[0-9.]+$/ { next } { w = $1 < 1 ? 1 : $1; r = 1000 * $3 / w; if (!s) s = w; if (r > m) m = r }
    END { if (!s) print "30 500"; else printf "%d %d\n", s, (m > 1000 ? 1000 : m) }' "${files[@]}" /dev/null
}

# The jobs of files run in one process (scripts/test.sh temporal-group-N): `temporal-group-N⇥file` for each file, N in
# 1..groups, longest expected first (a file's seconds from the files above, also its lines with no CPU figure: the
# grouped files' own times), each into the group with the least expected seconds so far.
group_of() { # groups files...
  local n="$1" f srcs=()
  shift
  for f in "$TIMES_CACHE" test/file-times.tsv; do [ -s "$f" ] && srcs+=("$f"); done
  awk -F'\t' -v list="$*" '!($2 in s) { s[$2] = $1 } END { k = split(list, fs, " "); for (i = 1; i <= k; i++) printf "%d\t%s\n", (fs[i] in s ? s[fs[i]] : 30), fs[i] }' \
    "${srcs[@]}" /dev/null | sort -t$'\t' -k1,1rn -k2,2 |
    awk -F'\t' -v n="$n" '{ b = 1; for (g = 2; g <= n; g++) if (t[g] < t[b]) b = g; t[b] += $1; printf "temporal-group-%d\t%s\n", b, $2 }'
}

# Admission. Up to SECSVC_TEST_MIN_SLOTS (default 2) jobs run whatever the load. Beyond that, up to $SLOTS, a job
# starts when (1) the running jobs' expected CPU rates plus its own stay within SECSVC_TEST_CPU_BUDGET millicores
# (default 1000 per core: the rates are whole-run averages, and runs at 900 kept the 2 cores ~60 % busy; a rate is
# known at once, unlike a pressure figure, so jobs start without waiting for one), the first job in queue order that
# fits, and (2) the machine's CPU pressure (the kernel's PSI "some avg10": % of the last 10 s in which a runnable task
# waited for a CPU; without PSI, the load average per core × 50) is below SECSVC_TEST_PRESSURE (default 90): a machine
# that work saturates all the time — on it more files at once only make every file's waits and bounds slower (seen:
# load 35 on 2 cores, PSI 99 %, a 5-slot run failed its chaos files and an n8n migration took > 180 s). Not lower:
# our own files alone keep "some" at 35–80 % while the cores are only ~65 % busy (bursts of many threads), and a
# limit of 40 held the queue at 2 jobs for minutes with a core idle (test/README.md "What runs in parallel").
cpu_pressure() {
  if [ -r /proc/pressure/cpu ]; then awk -F'[ =]' '/^some/ { printf "%d\n", $3 }' /proc/pressure/cpu
  else awk -v n="$(nproc)" '{ printf "%d\n", 50 * $1 / n }' /proc/loadavg; fi
}
CPU_BUDGET="${SECSVC_TEST_CPU_BUDGET:-$(( 1000 * $(nproc) ))}"
admits() { # job running-count demand pressure: 0 when the job may start now
  [ "$2" -lt "${SECSVC_TEST_MIN_SLOTS:-2}" ] && return 0
  [ "$2" -lt "$SLOTS" ] && [ "$4" -lt "${SECSVC_TEST_PRESSURE:-90}" ] && [ $(( $3 + rate[$1] )) -le "$CPU_BUDGET" ]
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
    unset "running[$pid]"; demand=$(( demand - rate[$job] ))
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
  elif [[ "$job" == temporal-group-* ]]; then SPEC_TIMES="$LOGS/jobs/$n.times" job_group "$job" || st=$?
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
  running[$!]="$job"; started[$!]=$(( SECONDS - T0 )); started_at[$job]=$(( SECONDS - T0 )); demand=$(( demand + rate[$job] ))
  echo "$(( SECONDS - T0 ))s: start $job (${#running[@]} running, expected $demand millicores, CPU pressure $(cpu_pressure)%)" >>"$LOGS/queue.log"
}

run_queue() { # jobs...: files, or names of test.sh's job_<name> functions; runs them in $SLOTS slots; 1 when any failed
  mkdir -p "$LOGS/jobs"
  : >"$LOGS/schedule.tsv"
  local queue=() job secs millis
  declare -A running=() started=() ids=() started_at=() announced=() rate=() need=()
  # longest expected first
  while IFS=$'\t' read -r secs millis job; do queue+=("$job"); rate[$job]=$millis; need[$job]="$(job_needs "$job")"; done < <(
    for job in "$@"; do read -r secs millis < <(expected "$job"); printf '%s\t%s\t%s\n' "$secs" "$millis" "$job"; done | sort -t$'\t' -k1,1 -rn
  )
  echo "== ${#queue[@]} jobs in $SLOTS slots (CPU budget $CPU_BUDGET millicores), longest expected first: ${queue[*]:0:6} …"
  local rc=0 n=0 i st needs demand=0 pressure held='' held_at=0 beat_at=$(( SECONDS + 300 ))
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
    local launched=0 first=1
    pressure="$(cpu_pressure)"
    # the first job in queue order whose runtimes are there and that admits allows; once the first ready job has waited
    # 30 s for room, no other starts before it (lighter jobs would otherwise take each freed share: starvation)
    for i in "${!queue[@]}"; do
      job="${queue[$i]}"
      read -r -a needs <<<"${need[$job]}"
      st=0; runtimes_state "${needs[@]}" || st=$?
      [ "$st" = 1 ] && continue
      if ! admits "$job" "${#running[@]}" "$demand" "$pressure"; then
        [ "$first" = 1 ] || continue
        first=0
        [ "$held" = "$job" ] || { held="$job"; held_at=$SECONDS; }
        [ $(( SECONDS - held_at )) -lt 30 ] && continue
        break
      fi
      launch_job "$job" "$st"
      unset "queue[$i]"; queue=("${queue[@]}")
      launched=1
      break
    done
    [ "$launched" = 1 ] || sleep 1
  done
  trap - INT TERM
  # one list in queue order for the summary: job number, name, log
  for job in "${!ids[@]}"; do printf '%d\t%s\n' "${ids[$job]}" "$job"; done | sort -n >"$LOGS/jobs.tsv"
  return "$rc"
}
