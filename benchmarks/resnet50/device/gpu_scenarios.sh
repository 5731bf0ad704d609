#!/usr/bin/env bash
# ResNet-50 on a lent GPU machine (the `device` tool) through the whole harness with the torch
# backend, against the raw speed of the same engines measured in the same call. Run from the repo
# root: `bash benchmarks/resnet50/device/gpu_scenarios.sh [phase ...]`, phases (default: all):
#   build    stand-in model and images, the torch engines ($PRECISION, default fp16; fp16 ones in
#            parallel, fp8 ones one after another: their build times kernels on the GPU)
#   kernels  fp8 only, before anything else: every FP8 kernel form tuning may choose against its
#            CPU reference (engines/torch_fp8/device_check.py kernels; half a minute, no engine)
#   check    fp8 only: the kernels as above, then the engine against fp16 and ONNX Runtime fp32 on
#            the stand-in's images (preprocessed first if no harness run has yet)
#   offline  Offline from GPU memory (start_from_device) and from pinned host memory; accuracy
#   profile  the $PRECISION engine of the Offline batch: its GPU kernels by time per call
#   raw      the engines alone (torch_raw): graph replays on GPU-resident samples, for each of
#            $RAW_PRECISIONS (default $PRECISION) and $RAW_BATCHES (default 1 8 server offline);
#            latency over $RAW_LATENCY_CALLS calls each (torch_raw's default 2000)
#   streams  SingleStream (batch 1) and MultiStream (batch 8); SingleStream's engine, and its batch-1
#            figures in stream_series and breakdown, are $SINGLESTREAM_PRECISION's (default
#            $PRECISION: the GPU configs run it in fp16, the rest in fp8)
#   server   Server at each $SERVER_QPS target
#   series   $SERIES_RUNS (default 3) rounds of: the Offline batch's engine alone, then Offline from
#            GPU memory; each run against the raw figure taken just before it (gpu_table). Rounds
#            are numbered from $SERIES_START (default 1): calls that number theirs apart add up, so
#            variants (PYTHON, HARNESS_FLAGS) can take turns round by round
#   stream_series  the same for the latency scenarios: rounds of the batch-1 engine's latency over
#            $RAW_LATENCY_CALLS calls (default 20000, about as long as a 10 s run), SingleStream,
#            the batch-8 engine's, MultiStream: latency drifts by several % between minutes
#            $STREAM_BATCHES (default "1 8") picks the scenarios by batch size; INLINE_AB=1 runs
#            each scenario twice a round: its queries answered in C++ (native_round_trips, the
#            default) and in the harness's Python (<name>-python), in turns
#   stream_accuracy  SingleStream and MultiStream (as $STREAM_BATCHES picks) in AccuracyOnly
#   breakdown  where a latency query's time goes in the harness's Python path (query_breakdown.py,
#            which runs the harness with --no-native_round_trips): the b1 engine alone over
#            $RAW_LATENCY_CALLS calls (default 20000), then SingleStream, the same for b8 and
#            MultiStream; each cut into segments (staging, launch, waiting for the GPU, completion,
#            the GPU's own time) and printed tenth by tenth of the run (HARNESS_FLAGS and
#            LABEL_SUFFIX as for every harness run)
#   sweep    Offline from GPU memory with each of $STREAMS_SWEEP runners per GPU
#   table    only the table of every result this machine holds (printed after any phase)
#   clean    first of the phases: forget the results and logs of earlier calls (a machine may keep
#            /tmp from a session before this one, warm or not, and their runs would join the
#            table); the engines stay, keyed by their inputs
# Each harness run's result, timeline and stall probe's record are kept in the results (device_lib.sh's
# harness; the table says when a Server run's slow samples were, where LoadGen's arrivals stopped and
# whether the host held the probe up then); GPU_MONITOR=0 runs them without nvidia-smi sampling;
# HARNESS_FLAGS adds flags to every run and LABEL_SUFFIX names them apart (device_lib.sh).
# Our wheels travel in .whl/ (mlcommons-loadgen, tqdm, the native module, all cp312): on the build
# machine `bash benchmarks/device_wheels.sh core` makes them and prints the call's carry list
# (docs/deploy.md); the machine has torch, numpy, onnx and opencv. State lives under /tmp, so a
# later call on the same (warm) machine reuses the engines. Figures and commands: docs/performance.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build offline raw streams server)
case " ${phases[*]:1} " in *" clean "*) echo "gpu_scenarios: clean must be the first phase" >&2; exit 2 ;; esac
source benchmarks/device_lib.sh  # install_wheels, harness
install_wheels
scratch=/tmp/scratch results=/tmp/results logs=/tmp/logs out="${OUT:-/tmp/out}"
if [ "${phases[0]}" = clean ]; then rm -rf "$results" "$logs"; fi
mkdir -p "$results" "$logs" "$out"
# Results this call did not make join its table: say so once, with the oldest one's time.
earlier=$(find "$results" -name '*.json' -printf '%TY-%Tm-%Td %TH:%TM\n' | sort)
if [ -n "$earlier" ]; then
  echo "gpu_scenarios: $results already holds $(wc -l <<<"$earlier") results, the oldest from" \
    "$(head -1 <<<"$earlier") (earlier calls on this machine; the clean phase first forgets them)"
fi
OFFLINE_BATCH="${OFFLINE_BATCH:-256}" SERVER_BATCH="${SERVER_BATCH:-128}"
SERVER_TIMEOUT_US="${SERVER_TIMEOUT_US:-6000}" SERVER_QPS="${SERVER_QPS:-25500 26500}"
PRECISION="${PRECISION:-fp16}" STREAMS="${STREAMS:-2}" STREAMS_SWEEP="${STREAMS_SWEEP:-1 3}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-15}" OFFLINE_QPS="${OFFLINE_QPS:-30000}"
# build makes the Server ladder of every batch size in $SERVER_BATCHES (for sweeps; default the one).
SERVER_BATCHES="${SERVER_BATCHES:-$SERVER_BATCH}"
engine_batches=${ENGINE_BATCHES:-$(python3 -c "
from mlperf_harness.benchmarks.resnet50.engines import engine_batch_sizes
from mlperf_harness.loadgen.settings import Scenario
sizes = {1, 8, $OFFLINE_BATCH}
for batch in '$SERVER_BATCHES'.split():
    sizes.update(engine_batch_sizes('torch', Scenario.SERVER, int(batch)))
print(' '.join(map(str, sorted(sizes))))")}
common=(--backend torch --precision "$PRECISION" --scratch_path "$scratch")
module=mlperf_harness.benchmarks.resnet50

engine_paths() {  # the cached $PRECISION engine of each batch size given
  for b in "$@"; do engine_path "$PRECISION" "$b"; done
}
engine_path() {  # $1 precision, $2 batch size
  python3 -m $module.generate_engines --backend torch --precision "$1" --batch_size "$2" \
    --scratch_path "$scratch" | sed -n "s/^generate_engines: torch $1: \(.*\) \[.*$/\1/p"
}
# The latency scenarios as their phases run them: "batch size, result name, LoadGen scenario".
latency_scenarios=("1 singlestream SingleStream" "8 multistream MultiStream")
latency_precision() {  # $1 batch size: the precision of that latency scenario's engine
  if [ "$1" = 1 ]; then echo "${SINGLESTREAM_PRECISION:-$PRECISION}"; else echo "$PRECISION"; fi
}
stream_batch_wanted() {  # $1 batch size: whether $STREAM_BATCHES (default "1 8") holds it
  case " ${STREAM_BATCHES:-1 8} " in *" $1 "*) return 0 ;; *) return 1 ;; esac
}
inline_variants() {  # $1 round: who answers the latency queries, in the order they run. Default
  # one run, the config's way ("config": C++ round trips where they apply); INLINE_AB=1: that,
  # labelled as ever, and the harness's Python ("python": --no-native_round_trips, labelled
  # <name>-python), which of the two goes first changing round by round so that a drift of the
  # machine favours neither.
  if [ "${INLINE_AB:-0}" != 1 ]; then echo config
  elif [ $(($1 % 2)) = 1 ]; then echo config python
  else echo python config; fi
}
series_rounds() {  # the round numbers of a series: $SERIES_RUNS (default 3) from $SERIES_START (1)
  local first="${SERIES_START:-1}"
  seq "$first" $((first + ${SERIES_RUNS:-3} - 1))
}
preprocessed_dir() {  # the stand-in's preprocessed images, where every harness run reads them;
  # preprocessed here first (preprocess_data, seconds) when no run has yet, so that raw, series and
  # check may come before any harness phase. One line and exit 2 without the stand-in (build first).
  # (Call it as an assignment of its own: a failed substitution inside arguments would not stop us.)
  local manifest images
  manifest=$(find "$scratch/preprocessed" -name manifest.json 2>/dev/null | head -1)
  if [ -z "$manifest" ]; then
    images=$(find "$scratch/stand_in" -type d -name validation 2>/dev/null | head -1)
    [ -n "$images" ] || { echo "$phase: no stand-in images yet: run the build phase first" >&2; exit 2; }
    python3 -c 'import sys; from mlperf_harness.benchmarks.resnet50.actions import main_preprocess_data as m; sys.exit(m(sys.argv[1:]))' \
      --scratch_path "$scratch" --data_dir "$images" --formats fp32 >&2 || exit 1
    manifest=$(find "$scratch/preprocessed" -name manifest.json | head -1)
  fi
  dirname "$manifest"
}

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    start=$SECONDS
    # The stand-in first (every later step reads it), then the engines side by side. The first
    # harness run preprocesses the images (before LoadGen starts).
    python3 -m $module.generate_engines --backend onnxruntime --precision fp32 --scratch_path "$scratch" | tail -1
    echo "stand-in: $((SECONDS - start)) s; engines for batch sizes: $engine_batches"
    pids=()
    for b in $engine_batches; do
      engine_start=$SECONDS
      python3 -m $module.generate_engines --backend torch --precision "$PRECISION" --batch_size "$b" \
        --scratch_path "$scratch" >"$logs/engine_b$b.txt" 2>&1 & pids+=($!)
      if [ "$PRECISION" = fp8 ]; then  # one after another: each build's own time
        wait "${pids[-1]}" || { tail -30 "$logs/engine_b$b.txt"; exit 1; }
        echo "engine b$b: $((SECONDS - engine_start)) s"
      fi
    done
    for pid in "${pids[@]}"; do wait "$pid" || { cat "$logs"/engine_b*.txt | tail -30; exit 1; }; done
    grep -h "FP8 engine" "$logs"/engine_b*.txt || true
    mkdir -p "$out/tuning"  # each FP8 layer's tiling and timings (not a run result: not in $results)
    for tuned in $(find "$scratch/engines" -name tuning.json); do
      cp "$tuned" "$out/tuning/$(basename "$(dirname "$tuned")").json"
    done
    cat "$logs"/engine_b*.txt | grep generate_engines
    echo "build: $((SECONDS - start)) s"
    ;;
  kernels)
    python3 -m mlperf_harness.engines.torch_fp8.device_check kernels
    ;;
  check)
    images=$(preprocessed_dir)
    python3 -m mlperf_harness.engines.torch_fp8.device_check kernels
    python3 -m mlperf_harness.engines.torch_fp8.device_check engines \
      --fp8 "$(engine_path fp8 "$OFFLINE_BATCH")" --fp16 "$(engine_path fp16 "$OFFLINE_BATCH")" \
      --model "$(find "$scratch" -name 'resnet50_v1_stand_in.onnx' | head -1)" \
      --preprocessed_dir "$images"
    ;;
  profile)
    python3 -m mlperf_harness.engines.torch_fp8.device_check profile "$(engine_path "$PRECISION" "$OFFLINE_BATCH")"
    ;;
  raw)
    images=$(preprocessed_dir)
    raw_engines=()
    for precision in ${RAW_PRECISIONS:-$PRECISION}; do
      for b in ${RAW_BATCHES:-1 8 $SERVER_BATCH $OFFLINE_BATCH}; do raw_engines+=("$(engine_path "$precision" "$b")"); done
    done
    monitored raw python3 -m $module.torch_raw "${raw_engines[@]}" ${RAW_LATENCY_CALLS:+--latency_calls "$RAW_LATENCY_CALLS"} \
      --preprocessed_dir "$images" --out "$results/raw.json"
    ;;
  offline)
    ms=$((SECONDS_PER_RUN * 1000))
    harness offline_device --scenario Offline --batch_size "$OFFLINE_BATCH" --gpu_inference_streams "$STREAMS" \
      --start_from_device --min_duration_ms "$ms" --offline_expected_qps "$OFFLINE_QPS"
    harness offline_host --scenario Offline --batch_size "$OFFLINE_BATCH" --gpu_inference_streams "$STREAMS" \
      --no-start_from_device --min_duration_ms "$ms" --offline_expected_qps "$OFFLINE_QPS"
    harness accuracy --scenario Offline --batch_size "$OFFLINE_BATCH" --gpu_inference_streams "$STREAMS" \
      --start_from_device --test_mode AccuracyOnly
    ;;
  streams)
    ms=$((SECONDS_PER_RUN * 1000))
    harness singlestream --scenario SingleStream --batch_size 1 --gpu_inference_streams 1 \
      --start_from_device --min_duration_ms "$ms" --precision "$(latency_precision 1)"
    harness multistream --scenario MultiStream --batch_size 8 --gpu_inference_streams 1 \
      --start_from_device --min_duration_ms "$ms"
    ;;
  server)
    ms=$((SECONDS_PER_RUN * 1000))
    for qps in $SERVER_QPS; do
      harness "server_b${SERVER_BATCH}_t${SERVER_TIMEOUT_US}_q$qps" --scenario Server \
        --batch_size "$SERVER_BATCH" --server_batch_timeout_us "$SERVER_TIMEOUT_US" \
        --gpu_inference_streams "$STREAMS" --start_from_device --server_target_qps "$qps" \
        --min_duration_ms "$ms" --min_query_count 1000
    done
    ;;
  series)
    images=$(preprocessed_dir)
    ms=$((SECONDS_PER_RUN * 1000))
    mkdir -p "$results/series"
    for i in $(series_rounds); do
      python3 -m $module.torch_raw "$(engine_path "$PRECISION" "$OFFLINE_BATCH")" --seconds 5 --latency_calls 100 \
        --preprocessed_dir "$images" --out "$results/series/raw_$i.json" | tail -1
      harness "series_offline_$i" --scenario Offline --batch_size "$OFFLINE_BATCH" \
        --gpu_inference_streams "$STREAMS" --start_from_device --min_duration_ms "$ms" \
        --offline_expected_qps "$OFFLINE_QPS"
      mv "$results/series_offline_$i${LABEL_SUFFIX:-}.json" "$results/series/offline_$i.json"
    done
    ;;
  stream_series)
    images=$(preprocessed_dir)
    ms=$((SECONDS_PER_RUN * 1000))
    mkdir -p "$results/series"
    for i in $(series_rounds); do
      for pair in "${latency_scenarios[@]}"; do
        read -r b name scenario <<<"$pair"
        stream_batch_wanted "$b" || continue
        precision=$(latency_precision "$b")
        python3 -m $module.torch_raw "$(engine_path "$precision" "$b")" --seconds 1 \
          --latency_calls "${RAW_LATENCY_CALLS:-20000}" --preprocessed_dir "$images" \
          --out "$results/series/raw_${name}_$i.json" | tail -1
        for answers in $(inline_variants "$i"); do
          flags=() variant=""
          if [ "$answers" = python ]; then flags=(--no-native_round_trips) variant=-python; fi
          harness "series_${name}${variant}_$i" --scenario "$scenario" --batch_size "$b" \
            --gpu_inference_streams 1 --start_from_device --min_duration_ms "$ms" --precision "$precision" \
            ${flags[@]+"${flags[@]}"}
          mv "$results/series_${name}${variant}_$i${LABEL_SUFFIX:-}.json" "$results/series/${name}${variant}_$i.json"
        done
      done
    done
    ;;
  stream_accuracy)
    for pair in "${latency_scenarios[@]}"; do
      read -r b name scenario <<<"$pair"
      stream_batch_wanted "$b" || continue
      harness "accuracy_$name" --scenario "$scenario" --batch_size "$b" --gpu_inference_streams 1 \
        --start_from_device --precision "$(latency_precision "$b")" --test_mode AccuracyOnly
    done
    ;;
  breakdown)
    images=$(preprocessed_dir)
    ms=$((SECONDS_PER_RUN * 1000))
    mkdir -p "$results/breakdown"
    read -r -a extra <<<"${HARNESS_FLAGS:-}"
    suffix="${LABEL_SUFFIX:-}"
    for pair in "${latency_scenarios[@]}"; do
      read -r b name scenario <<<"$pair"
      precision=$(latency_precision "$b")
      python3 -m $module.query_breakdown --out "$results/breakdown/raw_$name$suffix.json" --title "raw b$b" \
        raw "$(engine_path "$precision" "$b")" --calls "${RAW_LATENCY_CALLS:-20000}" \
        --preprocessed_dir "$images"
      python3 -m $module.query_breakdown --out "$results/breakdown/$name$suffix.json" --title "$scenario$suffix" \
        harness -- "${common[@]}" --precision "$precision" --log_dir "$logs/breakdown_$name$suffix" --scenario "$scenario" \
        --batch_size "$b" --gpu_inference_streams 1 --start_from_device --min_duration_ms "$ms" \
        ${extra[@]+"${extra[@]}"} >"$logs/breakdown_$name$suffix.txt" 2>&1 \
        || { tail -15 "$logs/breakdown_$name$suffix.txt"; exit 1; }
      grep -E "result:|latency:" "$logs/breakdown_$name$suffix.txt" | tr -s ' '
      tail -11 "$logs/breakdown_$name$suffix.txt"
    done
    ;;
  sweep)
    ms=$((SECONDS_PER_RUN * 1000))
    for streams in $STREAMS_SWEEP; do
      harness "offline_streams$streams" --scenario Offline --batch_size "$OFFLINE_BATCH" \
        --gpu_inference_streams "$streams" --start_from_device --min_duration_ms "$ms" \
        --offline_expected_qps "$OFFLINE_QPS"
    done
    ;;
  table | clean) ;;
  *) echo "unknown phase $phase"; exit 2 ;;
  esac
}

for phase in "${phases[@]}"; do
  run_phase "$phase" phase_steps "$phase"
done
tar czf "$out/results.tgz" -C "$results" .  # what comes back is limited to 8 files
python3 -m mlperf_harness.benchmarks.gpu_table "$results"
phases_summary
