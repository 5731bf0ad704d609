# What every benchmark's device script (benchmarks/*/device/*.sh) shares; sourced, from the repo
# root. A script sets, before calling `harness`: module (the benchmark's Python package), common (an
# array of flags every run gets), logs and results (directories). Each phase a script runs goes
# through run_phase (a phase that fails does not stop the ones after it) and the script ends with
# its table, then phases_summary (the failed phases; the script's exit status).
longest=0  # the longest harness run of this call so far, in seconds (fits)
failed_phases=()  # "<phase> (exit <status>)" for each phase of this call that failed (run_phase)

run_phase() {  # $1: a phase's name, the rest: the command that does it (a script's phase_steps).
  # Runs it in a subshell under set -e: a command that fails, or an `exit`, ends that phase, not the
  # script, so that the later phases still run and the script's table still prints. A phase that
  # fails gets one line, naming it and its exit status, and is remembered for phases_summary. The
  # longest harness run carries over to the phases after (fits); nothing else a phase sets does
  # (what a later phase needs of it lives in files, and that phase says so when they are missing).
  # A script that must undo something however a phase ends (triton.sh: its servers) defines
  # phase_cleanup. Call it as a command of its own, never in a condition (`if`, `||`, `&&`), where
  # bash would ignore set -e inside the phase.
  local name="$1" status carried errexit=""
  shift
  case $- in *e*) errexit=1 ;; esac
  carried=$(mktemp)
  set +e
  (
    set -e
    # shellcheck disable=SC2030  # the phase's own: phase_exit runs in this subshell
    phase_shell=$BASHPID
    # shellcheck disable=SC2064  # where the longest run goes: this phase's file, expanded now
    trap "phase_exit '$carried'" EXIT
    "$@"
  )
  status=$?
  [ -z "$errexit" ] || set -e
  if [ -s "$carried" ]; then longest=$(<"$carried"); fi
  rm -f "$carried"
  if [ "$status" -ne 0 ]; then
    echo "phase $name FAILED (exit status $status); the phases after it still run"
    failed_phases+=("$name (exit $status)")
  fi
}

phase_exit() {  # $1: where the longest run goes. A phase's last step in its subshell, however it
  # ended (run_phase): the script's phase_cleanup where it has one, then the longest run so far.
  # Only there: a background job of the phase (harness's monitors) killed as soon as it started,
  # before bash reset its traps, runs this too, and must not stop the phase's servers.
  # shellcheck disable=SC2031  # set in this same subshell (run_phase)
  [ "$BASHPID" = "$phase_shell" ] || return 0
  if declare -F phase_cleanup >/dev/null; then phase_cleanup || true; fi
  echo "$longest" >"$1"
}

phases_summary() {  # after a script's table, its last command: one line naming the phases that
  # failed (run_phase), and status 1 (the script's) where any did; nothing where none did.
  [ ${#failed_phases[@]} -gt 0 ] || return 0
  local joined="" failed
  for failed in "${failed_phases[@]}"; do joined+="${joined:+, }$failed"; done
  echo "failed phases: $joined"
  return 1
}

install_wheels() {  # our cp312 wheels from .whl/ into /tmp/site, and PYTHONPATH to match
  # (benchmarks/device_wheels.sh makes them on the build machine)
  if ! compgen -G '.whl/*.whl' >/dev/null; then
    echo "install_wheels: no wheels in .whl/: run 'bash benchmarks/device_wheels.sh' on the build" \
      "machine and carry what it lists (docs/deploy.md)" >&2
    return 1
  fi
  # Installed once a machine: a script run after another (or beside it, on other GPUs) finds the
  # same wheels there, which pip's --upgrade would replace under a process importing them.
  local stamp=/tmp/site/.installed_wheels
  if ! sha256sum .whl/*.whl | cmp -s - "$stamp" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl
    sha256sum .whl/*.whl >"$stamp"
  fi
  export PYTHONPATH="src/python:/tmp/site" PYTHONUNBUFFERED=1
  describe_host
}

describe_host() {  # one line: the CPU a call's figures came from (the docs name it beside each
  # figure), and its topology: threads a core (hyperthreads share their core's time between the
  # engines' host threads), sockets and NUMA nodes (affinity.py pins only across several nodes)
  lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\)):' \
    | sed -E 's/: +/: /' | paste -sd ';' - | sed 's/^/host: /; s/;/; /g' || true
}

harness() {  # $1: label; the rest: flags of the run. Prints its result line and each GPU's mean
  # SM busy % and SM clock range (over the samples taken while it was busy), and keeps result.json
  # as $results/<label>.json and the harness's timeline as $results/timelines/<label>.json
  # (gpu_table: where the slow samples were), <label> being $1$LABEL_SUFFIX.
  # GPU_MONITOR=0: no nvidia-smi sampling beside the run (its queries of the driver every 500 ms
  # are a suspect in Server's latency tail on some hosts). HARNESS_FLAGS: more flags for every run
  # (say --loadgen_path native), LABEL_SUFFIX after every label: variants of one phase, side by side.
  # The host is sampled too (host_monitor): the CPU time the hypervisor stole and the interrupts
  # served while the run went on, kept as $results/host/<label>.txt. And a process of its own
  # (stall_probe.py) notes when the host held it up, kept as $results/stalls/<label>.json: gpu_table
  # says whether a Server run's stops were the host's or its own process's.
  local label="$1${LABEL_SUFFIX:-}" monitor="" host probe started=$SECONDS; shift
  local -a extra
  read -r -a extra <<<"${HARNESS_FLAGS:-}"
  rm -rf "${logs:?}/$label"
  : >"$logs/$label.gpu"
  monitor=$(gpu_monitor "$logs/$label.gpu")
  host_monitor >"$logs/$label.host" & host=$!
  rm -f "$logs/$label.stalls.json"
  "${PYTHON:-python3}" -m mlperf_harness.benchmarks.stall_probe --out "$logs/$label.stalls.json" \
    >/dev/null & probe=$!
  # ${PYTHON:-python3}: a device script's CPU rehearsal runs another Python; without nvidia-smi
  # (the same rehearsal) the monitor has ended by itself.
  if ! "${PYTHON:-python3}" -m "$module.main" "${common[@]}" --log_dir "$logs/$label" "$@" "${extra[@]}" >"$logs/$label.txt" 2>&1; then
    kill ${monitor:+"$monitor"} "$host" "$probe" 2>/dev/null || true; echo "$label failed:"; tr '\r' '\n' <"$logs/$label.txt" | tail -15; return 1
  fi
  kill ${monitor:+"$monitor"} "$host" "$probe" 2>/dev/null || true
  wait "$probe" || true  # it writes its record as it ends
  printf '%-24s' "$label"
  grep -E "result:|samples/s:|latency:|accuracy:" "$logs/$label.txt" | tr -s ' ' | tr '\n' ' '
  gpu_clocks "$logs/$label.gpu"
  host_summary "$logs/$label.host"; echo
  mkdir -p "$results/host" && cp "$logs/$label.host" "$results/host/$label.txt"
  if [ -f "$logs/$label.stalls.json" ]; then
    mkdir -p "$results/stalls" && cp "$logs/$label.stalls.json" "$results/stalls/$label.json"
  fi
  cp "$logs/$label/result.json" "$results/$label.json"
  if [ -f "$logs/$label/harness_timeline.json" ]; then
    mkdir -p "$results/timelines" && cp "$logs/$label/harness_timeline.json" "$results/timelines/$label.json"
  fi
  if [ $((SECONDS - started)) -gt "$longest" ]; then longest=$((SECONDS - started)); fi
}

gpu_monitor() {  # $1: a file. Samples each GPU's SM busy % and SM clock into it every 500 ms, in
  # the background, and prints the sampler's pid (nothing where GPU_MONITOR=0: its queries of the
  # driver are a suspect in Server's latency tail on some hosts)
  if [ "${GPU_MONITOR:-1}" != 0 ]; then
    nvidia-smi --query-gpu=index,utilization.gpu,clocks.sm --format=csv,noheader,nounits -lms 500 \
      >"$1" 2>/dev/null &
    echo $!
  fi
}

gpu_clocks() {  # $1: gpu_monitor's samples. Prints each GPU's mean SM busy % and SM clock range over
  # the samples taken while it was busy: a rate or latency that moves between runs may be the clock
  awk -F', ' '{n[$1]++; s[$1]+=$2; if ($2 > 0) {busy[$1]++; if (!($1 in lo) || $3 < lo[$1]) lo[$1] = $3; if ($3 > hi[$1]) hi[$1] = $3}}
    END {for (g in n) if (busy[g]) printf " gpu%s %.0f%% %s-%s MHz", g, s[g] / busy[g], lo[g], hi[g]}' "$1"
}

monitored() {  # $1: a label, the rest: a command (a raw timing). Runs it with the GPUs sampled, then
  # prints "<label>: GPUs while it ran: gpu0 <busy>% <low>-<high> MHz" (nothing where
  # GPU_MONITOR=0) and returns the command's status, so that the engine alone
  # and the harness runs compared with it say at which clocks each ran (a short raw timing may hold
  # boost clocks that a longer run does not)
  local label="$1" samples pid rc=0
  shift
  samples=$(mktemp)
  pid=$(gpu_monitor "$samples")
  "$@" || rc=$?
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    echo "$label: GPUs while it ran:$(gpu_clocks "$samples")"
  fi
  rm -f "$samples"
  return "$rc"
}

fits() {  # $1: what would run. Whether a run as long as the longest so far ends within $BUDGET_S
  # (default 560) seconds of the script's start: a call ends within its 10 minutes, and a phase
  # cut short says what it skipped, so that the table still prints.
  if [ $((SECONDS + longest)) -le "${BUDGET_S:-560}" ]; then return 0; fi
  echo "$1: not run: ${SECONDS} s into the call, runs of up to ${longest} s, budget ${BUDGET_S:-560} s"
  return 1
}

passes_fit() {  # $1: a search's label, $2: its first target (queries/s; empty: the run's own rate,
  # not known here), $3: the samples a run loads (its --count). Where LoadGen's
  # sample_concatenate_permutation is set (the LLMs' mlperf.conf), a Server-type run issues whole
  # passes over them, so it lasts at least $3 / $2 seconds: a search whose first run would end past
  # BUDGET_S (default 560) is refused at once, instead of being cut off by the call's limit with
  # nothing measured.
  [ -n "$2" ] || return 0
  local need
  need=$("${PYTHON:-python3}" -c "import math, sys; print(math.ceil(int(sys.argv[1]) / float(sys.argv[2])))" "$3" "$2")
  if [ $((SECONDS + need)) -le "${BUDGET_S:-560}" ]; then return 0; fi
  echo "$1: not run: its $3 queries (COUNT) at $2 queries/s take ${need} s, past the budget" \
    "(${BUDGET_S:-560} s, ${SECONDS} s gone): set a COUNT that fits, of at least 460 (the" \
    "queries LoadGen's early stopping needs for a p99 with none over the bound; more where" \
    "some are: its summary says how many)" >&2
  return 1
}

server_start() {  # $1: a raw.json (its first engine) or an Offline result.json. Prints
  # SERVER_SHARE (default 0.9) of its rate, or nothing where it is absent (the search's first run
  # then takes its own rate: its config's or timed at start); SERVER_START, where set, instead (a
  # call of its own: the results of an earlier one are gone where they lived under $OUT).
  local start="${SERVER_START:-}"
  if [ -n "$start" ]; then echo "$start"; return 0; fi
  "${PYTHON:-python3}" -m mlperf_harness.benchmarks.server_search start \
    --share "${SERVER_SHARE:-0.9}" "$1"
}

server_run() {  # $1: label, the rest: flags. One run of a Server search (server_search): a harness
  # run; a script whose runs need more (scaling.sh: the size's GPUs) defines its own after sourcing.
  harness "$@"
}

server_search() {  # $1 label, $2 start (queries/s; empty: the first run takes its own rate, its
  # config's or timed at start, and the search steps from what it recorded), $3 step (a share of the
  # start), $4 most runs, the rest: flags of every run. Server's highest VALID rate: each run at the
  # target mlperf_harness.benchmarks.server_search names from the verdicts so far (one step up while
  # VALID, down while INVALID, then the midpoint), labelled $1_q<target> ($1_own for a run at its
  # own rate), while a run as long as the longest so far fits the budget (fits). One line a run (the
  # harness's, then its verdict), then the best VALID one. SERVER_P99_MS: VALID also needs p99
  # within that bound. A run that fails ends the search (1); so does a --server_target_qps in
  # HARNESS_FLAGS, which would override the targets.
  local label="$1" start="$2" step="$3" runs="$4" target name file
  shift 4
  local -a done_runs=() start_flag=() bound=() target_flag=()
  case " ${HARNESS_FLAGS:-} " in *" --server_target_qps "*)
    echo "server search $label: HARNESS_FLAGS sets --server_target_qps, which would override every" \
      "target searched: give the start instead" >&2
    return 1 ;;
  esac
  [ -z "$start" ] || start_flag=(--start "$start")
  [ -z "${SERVER_P99_MS:-}" ] || bound=(--p99_ms "$SERVER_P99_MS")
  while :; do
    target=$("${PYTHON:-python3}" -m mlperf_harness.benchmarks.server_search next \
      ${start_flag[@]+"${start_flag[@]}"} --step "$step" --runs "$runs" \
      ${bound[@]+"${bound[@]}"} ${done_runs[@]+"${done_runs[@]}"}) || return 1
    [ -n "$target" ] || break
    name="${label}_q$target" target_flag=(--server_target_qps "$target")
    if [ "$target" = own ]; then name="${label}_own" target_flag=(); fi
    fits "$name" || break
    server_run "$name" "$@" ${target_flag[@]+"${target_flag[@]}"} \
      || { echo "server search $label: $name failed: the search ends"; return 1; }
    file="$results/$name${LABEL_SUFFIX:-}.json"
    done_runs+=("$file")
    "${PYTHON:-python3}" -m mlperf_harness.benchmarks.server_search attempt --label "$label" \
      --run "${#done_runs[@]}" ${bound[@]+"${bound[@]}"} "$file"
  done
  "${PYTHON:-python3}" -m mlperf_harness.benchmarks.server_search summary --label "$label" \
    ${bound[@]+"${bound[@]}"} ${done_runs[@]+"${done_runs[@]}"}
}

host_monitor() {  # every 0.5 s, one line: seconds since the epoch, then from /proc/stat the
  # jiffies stolen by the hypervisor, all jiffies, interrupts and context switches so far (counts
  # since boot, all CPUs). A latency that drifts for seconds at a constant GPU clock may be the host:
  # a neighbour on the VM taking CPU time (steal) or a storm of interrupts.
  while :; do
    awk -v now="$(date +%s.%N)" '/^cpu /{for (i = 2; i <= 9; i++) all += $i; steal = $9}
      /^intr /{intr = $2} /^ctxt /{ctxt = $2} END {print now, steal, all, intr, ctxt}' /proc/stat
    sleep 0.5
  done
}

host_summary() {  # $1: host_monitor's lines. Prints the share of CPU time stolen over the run and
  # in its worst interval, and the interrupts per second, mean and most.
  awk 'NR > 1 {dt = $1 - t; da = $3 - a; if (dt > 0) {r = ($4 - n) / dt; if (r > rmax) rmax = r}
      if (da > 0 && ($2 - s) / da > smax) smax = ($2 - s) / da}
    NR == 1 {t0 = $1; s0 = $2; a0 = $3; n0 = $4}
    {t = $1; s = $2; a = $3; n = $4}
    END {if (NR > 1 && a > a0 && t > t0) printf " host steal %.1f%% (most %.1f%%) intr %.0f/s (most %.0f)",
      100 * (s - s0) / (a - a0), 100 * smax, (n - n0) / (t - t0), rmax}' "$1"
}

describe_gpus() {  # a build phase's first lines: each GPU (name, driver, memory) and torch's version
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__)"
}

offline_rate_flags() {  # $1: a raw.json (what a torch_raw --out wrote) or an Offline result.json.
  # Prints `--offline_expected_qps <its samples/s>`, or nothing where it is absent: the run then
  # takes its config's rate or times its engine at start, and runs again at the pace it showed if it
  # ends before its minimum duration (docs/rates.md). No guessed rate: one below the engine's ends
  # the run early (INVALID), one far below issues too few samples to count.
  local rate
  rate=$("${PYTHON:-python3}" -m mlperf_harness.benchmarks.server_search start --share 1 "$1")
  if [ -n "$rate" ]; then echo "--offline_expected_qps $rate"; fi
}

gpu_build() {  # $1: a benchmark's gpu_scenarios.sh, $2: the lines of its output to print (an
  # extended regular expression; default its summary's). Its build phase, logged to
  # $logs/build.txt; prints those lines, or its last lines and exits when it failed.
  OUT="$logs" bash "$1" build >"$logs/build.txt" 2>&1 || { tail -30 "$logs/build.txt"; exit 1; }
  grep -E "${2:-^build:|stand-in:}" "$logs/build.txt" || true
}
