#!/usr/bin/env bash
# DLRM-v2 on a lent GPU machine (the `device` tool) through the whole harness with the torch backend
# (fp16 stacked tables pooled by our Triton kernel, fp16 dense part under CUDA graphs),
# against the raw speed of the same runners measured in the same call. Run from the repo root:
# `bash benchmarks/dlrm-v2/device/gpu_scenarios.sh [phase ...]`, phases (default: all but table):
#   build     the CPU stand-in (generated click logs, 1/16-width DLRM-DCNv2 fitted to them), the
#             real-size model's description and a timing set spread over the real tables
#   accuracy  the small stand-in on the GPU runners, AccuracyOnly: AUC against its CPU figure
#   raw       the real-size runners alone (dlrm_v2.torch_raw)
#   profile   where a batch's GPU time goes: the costliest kernels of PROFILE_BATCHES (default 10)
#             eager batches (torch_raw --profile)
#   pooling   the ways of pooling the lookups side by side on the real-size tables, over
#             POOLING_BATCHES (default 10) batches: torch's embedding_bag (the default), our Triton
#             kernel in each launch form, the kernel over int8 rows (torch_raw --pooling_ab; its
#             record in $OUT/pooling_ab.json). Runs with the fp16 tables (--embedding torch,
#             whatever EMBEDDING says); the int8 copy is made beside them (33 GB more)
#   grid      the real-size runners in every --embedding (torch, kernel, kernel-int8) x
#             --precision (fp16, fp8), GRID_SECONDS (default 8) s each after a warm-up, in one
#             process: the fp16 tables made once, the int8 copy quantized from them last
#             (torch_raw --grid; one table printed, its record in $OUT/grid.json)
#   cross     the cross layers' update by torch (addmm, addcmul) against our Triton kernel
#             (--cross torch, kernel), fp16, batch 256, in one process: the real-size runners whole,
#             CROSS_SECONDS (default 8) s each after a warm-up, then one cross layer's update alone
#             on a batch's pairs in each way and launch form over CROSS_UPDATES (default 20)
#             updates (torch_raw --cross_ab; two tables printed, its record in $OUT/cross.json)
#   offline   Offline, real-size (tables made in GPU memory: 52 GB fp16)
#   server    Server's highest VALID rate, real-size (device_lib.sh's server_search): from
#             SERVER_SHARE (default 0.9) of the raw rate, a step of SERVER_STEP (default 0.1) of
#             that down while INVALID, up while VALID, then the midpoint; at most SERVER_RUNS
#             (default 4) runs of SECONDS_PER_RUN (20) s of queries each, plus each run's start-up
#             (the tables made in GPU memory); no run starts that would end past BUDGET_S (default
#             560) s into the call
#   table     only the table of every result this machine holds (printed after any phase)
# Our wheels travel in .whl/ (mlcommons-loadgen, tqdm, the native module, all cp312), scipy in
# .whl/optional/ and scikit-learn with joblib and threadpoolctl in .whl/dlrm/, each installed only
# where the machine lacks it (the stand-in's fit and the AUC need them). On the build machine
# `bash benchmarks/device_wheels.sh core scipy` makes the first two; .whl/dlrm/ comes from
# `pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64
# -d .whl/dlrm scikit-learn==<pin> joblib==<pin> threadpoolctl==<pin>` (constraints.txt's pins).
# RESULTS (default /tmp/dlrm/results) keeps one layout's results apart from another's (one GPU
# and two, say: CUDA_VISIBLE_DEVICES picks the GPUs). EMBEDDING (torch, kernel or kernel-int8;
# unset: the config's, kernel: docs/dlrm-v2.md) and PRECISION (fp16 or fp8; unset: the config's,
# fp8 on the H200s) become every phase's --embedding and --precision (the pooling and grid phases
# choose their own, the cross phase its precision), BATCH (unset: the config's, 256 samples on an
# H200) and STREAMS (default 2) every phase's --batch_size and --gpu_inference_streams; give a
# RESULTS of its own to a call that changes them. Figures and commands: docs/performance.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build accuracy raw offline server)
source benchmarks/device_lib.sh  # install_wheels, harness, server_search
install_wheels
python3 -c "import scipy" 2>/dev/null || python3 -m pip install -q --no-index --no-deps \
  --no-compile --no-cache-dir --target /tmp/site .whl/optional/scipy-*.whl
python3 -c "import sklearn" 2>/dev/null || python3 -m pip install -q --no-index --no-deps \
  --no-compile --no-cache-dir --target /tmp/site .whl/dlrm/*.whl
scratch=/tmp/scratch results=${RESULTS:-/tmp/dlrm/results} logs=/tmp/dlrm/logs out="${OUT:-/tmp/out}"
real=/tmp/dlrm_real/model.json data=/tmp/dlrm_real/timing_set
mkdir -p "$results" "$logs" "$out"
STREAMS="${STREAMS:-2}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}" RAW_SECONDS="${RAW_SECONDS:-10}"
SAMPLES="${SAMPLES:-8192}" SERVER_SHARE="${SERVER_SHARE:-0.9}" SERVER_STEP="${SERVER_STEP:-0.1}"
SERVER_RUNS="${SERVER_RUNS:-4}"
common=(--backend torch ${PRECISION:+--precision "$PRECISION"} ${EMBEDDING:+--embedding "$EMBEDDING"}
  ${BATCH:+--batch_size "$BATCH"}
  --scratch_path "$scratch" --round v5.1)
module=mlperf_harness.benchmarks.dlrm_v2
real_flags=(--model_path "$real" --preprocessed_dir "$data" --gpu_inference_streams "$STREAMS")

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch; print('torch', torch.__version__)"
    start=$SECONDS
    python3 -m $module.stand_in --scratch_path "$scratch" | grep -E "heldout_auc|build_seconds"
    python3 -m $module.real_size --model "$real" --data "$data" --samples "$SAMPLES"
    echo "build: $((SECONDS - start)) s"
    ;;
  accuracy)
    harness accuracy_small --scenario Offline --gpu_inference_streams 1 --test_mode AccuracyOnly
    ;;
  raw)
    monitored raw python3 -m $module.torch_raw "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --seconds "$RAW_SECONDS" --out "$results/raw.json"
    ;;
  profile)
    python3 -m $module.torch_raw "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --seconds 3 --profile "${PROFILE_BATCHES:-10}"
    ;;
  pooling)
    python3 -m $module.torch_raw "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --seconds 3 --pooling_ab "${POOLING_BATCHES:-10}" --out "$out/pooling_ab.json" \
      --embedding torch
    ;;
  grid)
    python3 -m $module.torch_raw "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --seconds "${GRID_SECONDS:-8}" --grid --out "$out/grid.json" --embedding torch \
      --precision fp16
    ;;
  cross)
    python3 -m $module.torch_raw "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --seconds "${CROSS_SECONDS:-8}" --cross_ab "${CROSS_UPDATES:-20}" --out "$out/cross.json" \
      --precision fp16 --batch_size 256
    ;;
  offline)
    harness offline "${real_flags[@]}" --scenario Offline \
      --min_duration_ms $((SECONDS_PER_RUN * 1000)) $(offline_rate_flags "$results/raw.json")
    ;;
  server)
    server_search server "$(server_start "$results/raw.json")" "$SERVER_STEP" "$SERVER_RUNS" \
      "${real_flags[@]}" --scenario Server --min_duration_ms $((SECONDS_PER_RUN * 1000))
    ;;
  table) ;;
  *) echo "unknown phase $phase"; exit 2 ;;
  esac
}

for phase in "${phases[@]}"; do
  run_phase "$phase" phase_steps "$phase"
  tar czf "$out/results.tgz" -C "$results" .  # after each phase: a call cut short keeps the rest
done
python3 -m mlperf_harness.benchmarks.gpu_table "$results"
phases_summary
