#!/usr/bin/env bash
# Issues 17 and 46: ResNet-50 on 1, 2, 4, ... N GPUs of one lent machine (N from `nvidia-smi -L`,
# not a constant), each size with the settings of its own config: the known system of that many of
# this machine's GPUs (H100-SXM-80GBx4 on four of an eight-H100 host; benchmarks/resnet50/
# configs.py), so its precision, LoadGen path (C++ for four and eight GPUs), batching and rates;
# the same engines and samples in GPU memory at every size; then one table of each size against
# one GPU measured on the same machine. Also, on this host's CPU: the null backend's
# issue/completion ceiling of one LoadGen process, and the harness over 1..64 simulated GPUs (the
# sim backend). Run from the repo root: `bash benchmarks/resnet50/device/scaling.sh [phase ...]`,
# phases (default: build offline server table):
#   clean    first of the phases: forget the results and logs of earlier calls on this machine
#            (the engines stay)
#   build    stand-in, images and the engines of every size's precision, for its Offline batch and
#            Server ladder (gpu_scenarios.sh's build); the GPUs' NUMA placement
#   offline  Offline on each size, from GPU memory, at its config's expected rate
#   server   Server's highest VALID rate on each size (p99 <= 15 ms): from the config's target, one
#            step ($SERVER_STEP of it, default 0.04) up while VALID or down while INVALID, then the
#            midpoint once a VALID and an INVALID target lie more than half a step apart; at most
#            $SERVER_RUNS runs a size (default 3; device_lib.sh's server_search, the search every
#            device script shares: server_search.search_next)
#   ceiling  the null backend through the harness: Offline samples/s, Server's highest VALID q/s
#            ($ROUNDS rounds alternating the paths; with $CPP_WORKERS=1 also the native path with
#            C++ threads answering the batches: the harness minus its Python per batch)
#   sim      the harness over $SIM_GPUS simulated GPUs (Offline and Server) on this CPU
#   table    only the table of what this machine holds (printed after any phase)
# Each size's settings (printed at the start; mlperf_harness.benchmarks.scaling_plan): its
# config's, or for every size $PRECISION, $LOADGEN_PATH (python or native), $OFFLINE_QPS_PER_GPU
# and $SERVER_QPS_PER_GPU (times the size), $STREAMS where set. ceiling and sim run under each
# LoadGen path in $LOADGEN_PATHS ("python native" by default: mlperf_loadgen's Python binding, and
# LoadGen's C++ compiled into our native module; one name runs one).
# A call ends within 10 minutes: no run starts that would end past $BUDGET_S (default 560) seconds
# after the script started, at the length of the longest run so far (the phase says what it
# skipped), so the table still prints. On an 8-GPU machine: `clean build`, then `offline` and
# `server` at 1 and 2 GPUs, then `server` at 4 and 8 with the table (docs/scaling.md, the
# plan); state lives under /tmp, so a warm machine reuses the engines and keeps the results.
# $GPU_SIZES overrides the sizes ("1 2 8"). Wheels travel in .whl/ as for gpu_scenarios.sh
# (`bash benchmarks/device_wheels.sh core` on the build machine).
# A CPU rehearsal (this script's logic without a GPU): BACKEND=sim PYTHON=<a Python with the
# project's packages and our native module> runs every size on the sim backend (`--sim_gpus n`,
# latency table $SIM_TABLE, default resnet50-h100-fp8) as a host of $SIM_HOST_GPUS (default 8)
# GPUs named $SIM_GPU_NAME (default NVML's H100 SXM name), so with the H100 configs; RESULTS,
# LOGS and SCRATCH move its state (docs/scaling.md).
# Figures and commands: docs/scaling.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build offline server table)
case " ${phases[*]:1} " in *" clean "*) echo "scaling: clean must be the first phase" >&2; exit 2 ;; esac
source benchmarks/device_lib.sh  # install_wheels, harness, gpu_build, fits, server_search
BACKEND="${BACKEND:-torch}" PYTHON="${PYTHON:-python3}"
scratch="${SCRATCH:-/tmp/scratch}" results="${RESULTS:-/tmp/scaling_results}"
logs="${LOGS:-/tmp/scaling_logs}" out="${OUT:-/tmp/out}"
if [ "$BACKEND" = torch ]; then
  install_wheels  # PYTHONPATH=src/python:/tmp/site
  gpus=$(nvidia-smi -L | grep -c '^GPU ')
  gpu_name=()  # the plan detects them
else  # the CPU rehearsal: simulated GPUs
  export PYTHONPATH="src/python" PYTHONUNBUFFERED=1
  gpus="${SIM_HOST_GPUS:-8}"
  gpu_name=(--gpu_name "${SIM_GPU_NAME:-NVIDIA H100 80GB HBM3}")
  SIM_TABLE="${SIM_TABLE:-resnet50-h100-fp8}"
fi
if [ "${phases[0]}" = clean ]; then rm -rf "$results" "$logs"; fi
mkdir -p "$results" "$logs" "$out"
sizes="${GPU_SIZES:-$("$PYTHON" -c "
n = $gpus
sizes = [s for s in (1, 2, 4, 8, 16) if s <= n]
print(' '.join(map(str, sizes + ([n] if n not in sizes else []))))")}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}" SERVER_STEP="${SERVER_STEP:-0.04}"
SERVER_RUNS="${SERVER_RUNS:-3}" BUDGET_S="${BUDGET_S:-560}"  # fits (device_lib.sh) reads it
SIM_GPUS="${SIM_GPUS:-1,2,4,8,16,32,64}"
LOADGEN_PATHS="${LOADGEN_PATHS:-python native}" ROUNDS="${ROUNDS:-1}"
paths_flag=(--loadgen_paths "$(echo $LOADGEN_PATHS | tr ' ' ',')")
module=mlperf_harness.benchmarks.resnet50
plan_module=mlperf_harness.benchmarks.scaling_plan
echo "$gpus GPUs; sizes: $sizes; $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
# Each size's settings: its config's, the overrides on top. A size without a config of its own
# stops the script here (scaling_plan says which values to set instead).
plan=$("$PYTHON" -m $plan_module plan --gpus "$sizes" ${gpu_name[@]+"${gpu_name[@]}"} \
  --precision "${PRECISION:-}" --loadgen_path "${LOADGEN_PATH:-}" \
  --offline_qps_per_gpu "${OFFLINE_QPS_PER_GPU:-}" --server_qps_per_gpu "${SERVER_QPS_PER_GPU:-}" \
  --streams "${STREAMS:-}")
{
  echo "GPUs system precision loadgen_path offline_batch offline_qps server_batch server_timeout_us server_qps streams"
  echo "$plan"
} | tee "$results/plan.txt"

size_plan() {  # $1 GPUs: that size's settings into system, precision, path, offline_batch, ...
  read -r _ system precision path offline_batch offline_qps server_batch server_timeout_us \
    server_qps streams <<<"$(awk -v n="$1" '$1 == n' <<<"$plan")"
}
visible() { seq -s, 0 $(($1 - 1)); }  # CUDA_VISIBLE_DEVICES for the first $1 GPUs
run_size() {  # $1 GPUs, $2 label, the rest: flags. One harness run on the first $1 GPUs with that
  # size's plan (size_plan first). harness notes how long it took (fits).
  local n="$1" label="$2"; shift 2
  local -a flags=(--system_name "$system" --precision "$precision" --loadgen_path "$path"
    --gpu_inference_streams "$streams" --min_duration_ms $((SECONDS_PER_RUN * 1000)))
  if [ "$BACKEND" = torch ]; then
    CUDA_VISIBLE_DEVICES=$(visible "$n") harness "$label" "${flags[@]}" --start_from_device "$@"
  else
    harness "$label" "${flags[@]}" --sim_gpus "$n" --sim_latency_table "$SIM_TABLE" "$@"
  fi
}
server_run() { run_size "$n" "$@"; }  # a Server search's run (server_search), on the size $n
common=(--backend "$BACKEND" --scratch_path "$scratch")  # every harness run's (device_lib.sh)

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    if [ "$BACKEND" != torch ]; then echo "build: the $BACKEND backend needs no engines"; return 0; fi
    # Each precision the sizes run, for the Offline batch and the Server ladder their configs use.
    for p in $(awk '{print $3}' <<<"$plan" | sort -u); do
      offline_batches=$(awk -v p="$p" '$3 == p {print $5}' <<<"$plan" | sort -u | tr '\n' ' ')
      server_batches=$(awk -v p="$p" '$3 == p {print $7}' <<<"$plan" | sort -u | tr '\n' ' ')
      batches="${ENGINE_BATCHES:-$("$PYTHON" -c "
from mlperf_harness.benchmarks.resnet50.engines import engine_batch_sizes
from mlperf_harness.loadgen.settings import Scenario
sizes = {int(b) for b in '$offline_batches'.split()}
for batch in '$server_batches'.split():
    sizes.update(engine_batch_sizes('torch', Scenario.SERVER, int(batch)))
print(' '.join(map(str, sorted(sizes))))")}"
      echo "build: $p engines for batch sizes $batches"
      PRECISION="$p" ENGINE_BATCHES="$batches" gpu_build benchmarks/resnet50/device/gpu_scenarios.sh
    done
    nvidia-smi topo -m 2>/dev/null | head -$((gpus + 3)) || true  # each GPU's CPU and NUMA affinity
    ;;
  offline)
    for n in $sizes; do
      size_plan "$n"
      fits "offline_gpus$n" || continue
      run_size "$n" "offline_gpus$n" --scenario Offline --batch_size "$offline_batch" \
        --offline_expected_qps "$offline_qps"
    done
    ;;
  server)
    for n in $sizes; do
      size_plan "$n"
      SERVER_P99_MS=15 server_search "server_gpus$n" "$server_qps" "$SERVER_STEP" "$SERVER_RUNS" \
        --scenario Server --batch_size "$server_batch" --server_batch_timeout_us "$server_timeout_us" \
        --min_query_count 1000
    done
    ;;
  ceiling)
    extra=()
    [ "${CPP_WORKERS:-0}" = 1 ] && extra=(--cpp_workers)
    "$PYTHON" -m mlperf_harness.benchmarks.harness_overhead.scaling --ceiling_only --seconds 5 \
      "${paths_flag[@]}" --rounds "$ROUNDS" "${extra[@]}" | tee "$results/ceiling.txt"
    ;;
  sim)
    "$PYTHON" -m mlperf_harness.benchmarks.harness_overhead.scaling --gpus "$SIM_GPUS" --seconds 5 \
      "${paths_flag[@]}" | tee "$results/sim.txt"
    ;;
  table | clean) ;;
  *) echo "unknown phase $phase"; exit 2 ;;
  esac
}

for phase in "${phases[@]}"; do
  run_phase "$phase" phase_steps "$phase"
done
tar czf "$out/scaling_results.tgz" -C "$results" .
"$PYTHON" -m mlperf_harness.benchmarks.scaling_table "$results"
phases_summary
