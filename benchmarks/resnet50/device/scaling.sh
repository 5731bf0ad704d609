#!/usr/bin/env bash
# Issue 17: ResNet-50 on 1, 2, 4, ... N GPUs of one lent machine (N from `nvidia-smi -L`, not a
# constant), the same engines ($PRECISION, default fp16) and samples in GPU memory at every size,
# then one table of the scaling ratio against one GPU measured in the same call. Also, on this
# host's CPU: the null backend's issue/completion ceiling of one LoadGen process, and the harness
# over 1..64 simulated GPUs (the sim backend). Run from the repo root:
# `bash benchmarks/resnet50/device/scaling.sh [phase ...]`, phases (default: build offline server
# table):
#   build    stand-in, images and engines (gpu_scenarios.sh's build); the GPUs' NUMA placement
#   offline  Offline on each size, from GPU memory, batch 256, $STREAMS runners per GPU
#   server   Server on each size at N x $SERVER_QPS_PER_GPU queries/s (batch 128, 6 ms timeout)
#   ceiling  the null backend through the harness: Offline samples/s, Server's highest VALID q/s
#            ($ROUNDS rounds alternating the paths; with $CPP_WORKERS=1 also the native path with
#            C++ threads answering the batches: the harness minus its Python per batch)
#   sim      the harness over $SIM_GPUS simulated GPUs (Offline and Server) on this CPU
#   table    only the table of what this machine holds (printed after any phase)
# ceiling and sim run under each LoadGen path in $LOADGEN_PATHS ("python native" by default:
# mlperf_loadgen's Python binding, and LoadGen's C++ compiled into our native module; one name
# runs one). offline and server run under $LOADGEN_PATH (default python).
# Each call must end within 9 minutes: on an 8-GPU machine run `build offline`, then `server`,
# then `ceiling`, then `sim` (two LoadGen paths each take about twice one's time; state lives
# under /tmp: a warm machine reuses the engines). $GPU_SIZES
# overrides the sizes ("1 2 8"). Wheels travel in .whl/ as for gpu_scenarios.sh
# (`bash benchmarks/device_wheels.sh core` on the build machine).
# Figures and commands: docs/scaling.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build offline server table)
source benchmarks/device_lib.sh  # install_wheels, harness
install_wheels
scratch=/tmp/scratch results=/tmp/scaling_results logs=/tmp/scaling_logs out="${OUT:-/tmp/out}"
mkdir -p "$results" "$logs" "$out"
gpus=$(nvidia-smi -L | grep -c '^GPU ')
sizes="${GPU_SIZES:-$(python3 -c "
n = $gpus
sizes = [s for s in (1, 2, 4, 8, 16) if s <= n]
print(' '.join(map(str, sizes + ([n] if n not in sizes else []))))")}"
STREAMS="${STREAMS:-2}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}"
OFFLINE_QPS_PER_GPU="${OFFLINE_QPS_PER_GPU:-30000}" SERVER_QPS_PER_GPU="${SERVER_QPS_PER_GPU:-26500}"
SIM_GPUS="${SIM_GPUS:-1,2,4,8,16,32,64}"
LOADGEN_PATHS="${LOADGEN_PATHS:-python native}" ROUNDS="${ROUNDS:-1}"
paths_flag=(--loadgen_paths "$(echo $LOADGEN_PATHS | tr ' ' ',')")
common=(--backend torch --precision "${PRECISION:-fp16}" --scratch_path "$scratch" --start_from_device
  --gpu_inference_streams "$STREAMS" --loadgen_path "${LOADGEN_PATH:-python}")
module=mlperf_harness.benchmarks.resnet50
echo "$gpus GPUs; sizes: $sizes; $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

visible() { seq -s, 0 $(($1 - 1)); }  # CUDA_VISIBLE_DEVICES for the first $1 GPUs

for phase in "${phases[@]}"; do
  case "$phase" in
  build)
    gpu_build benchmarks/resnet50/device/gpu_scenarios.sh
    nvidia-smi topo -m 2>/dev/null | head -$((gpus + 3)) || true  # each GPU's CPU and NUMA affinity
    ;;
  offline)
    ms=$((SECONDS_PER_RUN * 1000))
    for n in $sizes; do
      CUDA_VISIBLE_DEVICES=$(visible "$n") harness "offline_gpus$n" --scenario Offline \
        --batch_size 256 --min_duration_ms "$ms" --offline_expected_qps $((n * OFFLINE_QPS_PER_GPU))
    done
    ;;
  server)
    ms=$((SECONDS_PER_RUN * 1000))
    for n in $sizes; do
      CUDA_VISIBLE_DEVICES=$(visible "$n") harness "server_gpus$n" --scenario Server \
        --batch_size 128 --server_batch_timeout_us 6000 --min_duration_ms "$ms" \
        --min_query_count 1000 --server_target_qps $((n * SERVER_QPS_PER_GPU))
    done
    ;;
  ceiling)
    extra=()
    [ "${CPP_WORKERS:-0}" = 1 ] && extra=(--cpp_workers)
    python3 -m mlperf_harness.benchmarks.harness_overhead.scaling --ceiling_only --seconds 5 \
      "${paths_flag[@]}" --rounds "$ROUNDS" "${extra[@]}" | tee "$results/ceiling.txt"
    ;;
  sim)
    python3 -m mlperf_harness.benchmarks.harness_overhead.scaling --gpus "$SIM_GPUS" --seconds 5 \
      "${paths_flag[@]}" | tee "$results/sim.txt"
    ;;
  table) ;;
  *) echo "unknown phase $phase"; exit 2 ;;
  esac
done
tar czf "$out/scaling_results.tgz" -C "$results" .
python3 -m mlperf_harness.benchmarks.scaling_table "$results"
