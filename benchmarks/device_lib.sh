# What every benchmark's device script (benchmarks/*/device/gpu_scenarios.sh) shares; sourced, from
# the repo root. A script sets, before calling `harness`: module (the benchmark's Python package),
# common (an array of flags every run gets), logs and results (directories).

install_wheels() {  # our cp312 wheels from .whl/ into /tmp/site, and PYTHONPATH to match
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH="src/python:/tmp/site" PYTHONUNBUFFERED=1
}

harness() {  # $1: label; the rest: flags of the run. Prints its result line and each GPU's mean
  # SM busy % and SM clock range (over the samples taken while it was busy), and keeps result.json
  # as $results/<label>.json and the harness's timeline as $results/timelines/<label>.json
  # (gpu_table: where the slow samples were), <label> being $1$LABEL_SUFFIX.
  # GPU_MONITOR=0: no nvidia-smi sampling beside the run (its queries of the driver every 500 ms
  # are a suspect in Server's latency tail on some hosts). HARNESS_FLAGS: more flags for every run
  # (say --loadgen_path native), LABEL_SUFFIX after every label: variants of one phase, side by side.
  local label="$1${LABEL_SUFFIX:-}" monitor=""; shift
  local -a extra
  read -r -a extra <<<"${HARNESS_FLAGS:-}"
  rm -rf "${logs:?}/$label"
  : >"$logs/$label.gpu"
  if [ "${GPU_MONITOR:-1}" != 0 ]; then
    nvidia-smi --query-gpu=index,utilization.gpu,clocks.sm --format=csv,noheader,nounits -lms 500 \
      >"$logs/$label.gpu" 2>/dev/null & monitor=$!
  fi
  # ${PYTHON:-python3}: a device script's CPU rehearsal runs another Python; without nvidia-smi
  # (the same rehearsal) the monitor has ended by itself.
  if ! "${PYTHON:-python3}" -m "$module.main" "${common[@]}" --log_dir "$logs/$label" "$@" "${extra[@]}" >"$logs/$label.txt" 2>&1; then
    [ -z "$monitor" ] || kill "$monitor" 2>/dev/null || true; echo "$label failed:"; tr '\r' '\n' <"$logs/$label.txt" | tail -15; return 1
  fi
  [ -z "$monitor" ] || kill "$monitor" 2>/dev/null || true
  printf '%-24s' "$label"
  grep -E "result:|samples/s:|latency:|accuracy:" "$logs/$label.txt" | tr -s ' ' | tr '\n' ' '
  # Each GPU's SM clock range while busy: latency that moves between runs may be the GPU's clock.
  awk -F', ' '{n[$1]++; s[$1]+=$2; if ($2 > 0) {busy[$1]++; if (!($1 in lo) || $3 < lo[$1]) lo[$1] = $3; if ($3 > hi[$1]) hi[$1] = $3}}
    END {for (g in n) if (busy[g]) printf " gpu%s %.0f%% %s-%s MHz", g, s[g] / busy[g], lo[g], hi[g]}' "$logs/$label.gpu"; echo
  cp "$logs/$label/result.json" "$results/$label.json"
  if [ -f "$logs/$label/harness_timeline.json" ]; then
    mkdir -p "$results/timelines" && cp "$logs/$label/harness_timeline.json" "$results/timelines/$label.json"
  fi
}

gpu_build() {  # $1: a benchmark's gpu_scenarios.sh. Its build phase, logged to $logs/build.txt;
  # prints the build's summary lines, or its last lines and exits when it failed.
  OUT="$logs" bash "$1" build >"$logs/build.txt" 2>&1 || { tail -30 "$logs/build.txt"; exit 1; }
  grep -E "^build:|stand-in:" "$logs/build.txt"
}
