#!/usr/bin/env bash
# BERT on a lent GPU machine (the `device` tool) through the whole harness with the torch backend
# (fp16 encoder per sequence-length bucket, CUDA graphs), against the raw speed of the same engine
# measured in the same call. Run from the repo root: `bash benchmarks/bert/device/gpu_scenarios.sh
# [phase ...]`, phases (default: build accuracy raw offline):
#   build     the CPU stand-in (questions, vocabulary, small fitted model) and the real-size
#             stand-in (BERT-Large's shape, seeded: what the timing runs use)
#   accuracy  the small stand-in on the GPU engine, AccuracyOnly: F1 against its CPU figure
#   raw       the real-size engine alone (bert.torch_raw), logits checked against ONNX Runtime
#   offline   Offline from GPU memory, real-size
#   server    Server's highest VALID rate (device_lib.sh's server_search): from SERVER_SHARE
#             (default 0.85) of the raw rate this machine measured, a step of SERVER_STEP (default
#             0.1) of that down while INVALID, up while VALID, then the midpoint; at most
#             SERVER_RUNS (default 4) runs of SECONDS_PER_RUN (20) s of queries each, plus each
#             run's start-up; no run starts that would end past BUDGET_S (default 560) s into the
#             call. SERVER_QPS ("3500 3700"): those targets instead, one run each, no search
#   streams   SingleStream and MultiStream, real-size
#   variants  the encoder with each fusion (none, gelu, gelu+residual: module.FUSIONS) at 384 and 192 x 256
#   table     only the table of every result this machine holds (printed after any phase)
# Our wheels travel in .whl/ (mlcommons-loadgen, tqdm, tokenizers, the native module, all cp312):
# on the build machine `bash benchmarks/device_wheels.sh core` makes them and prints the call's
# carry list (docs/deploy.md); the machine has torch, numpy, onnx and onnxruntime. Figures and
# commands: docs/performance.md.
# With SQUAD_DIR (a directory holding SQuAD v1.1's dev-v1.1.json and the official vocab.txt, both as
# download_data and download_model fetch them) the timing runs use the real dev set's 10,833
# features, so their real lengths: the real-size stand-in is given the official vocabulary (its
# answers stay noise). Without it they run on the generated questions.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build accuracy raw offline)
source benchmarks/device_lib.sh  # install_wheels, harness, server_search
install_wheels
scratch=/tmp/scratch results=/tmp/results logs=/tmp/logs out="${OUT:-/tmp/out}" large=/tmp/bert_large
mkdir -p "$results" "$logs" "$out"
OFFLINE_BATCH="${OFFLINE_BATCH:-1024}" SERVER_BATCH="${SERVER_BATCH:-64}" SERVER_TIMEOUT_US="${SERVER_TIMEOUT_US:-2000}"
STREAMS="${STREAMS:-2}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}" RAW_SECONDS="${RAW_SECONDS:-10}"
SERVER_SHARE="${SERVER_SHARE:-0.85}" SERVER_STEP="${SERVER_STEP:-0.1}" SERVER_RUNS="${SERVER_RUNS:-4}"
common=(--backend torch --precision fp16 --scratch_path "$scratch")
timed=(--model_path "$large/model.onnx")  # what the timing runs read
if [ -n "${SQUAD_DIR:-}" ]; then
  timed=(--model_path "$large/squad/model.onnx" --data_dir "$SQUAD_DIR")
fi
module=mlperf_harness.benchmarks.bert

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch; print('torch', torch.__version__)"
    start=$SECONDS
    python3 -m $module.stand_in --scratch_path "$scratch" | grep -E '"heldout_f1"|seconds' || true
    python3 -m $module.real_size_stand_in --scratch_path "$scratch" --out "$large"
    if [ -n "${SQUAD_DIR:-}" ]; then  # the same model beside the official vocabulary
      mkdir -p "$large/squad" && ln -sf "$large/model.onnx" "$large/squad/model.onnx"
      cp "$SQUAD_DIR/vocab.txt" "$large/squad/vocab.txt"
    fi
    echo "build: $((SECONDS - start)) s"
    ;;
  accuracy)
    harness accuracy_small --scenario Offline --batch_size 256 --gpu_inference_streams 1 \
      --start_from_device --test_mode AccuracyOnly
    ;;
  raw)
    monitored raw python3 -m $module.torch_raw "${common[@]}" "${timed[@]}" --scenario Offline \
      --batch_size "$OFFLINE_BATCH" --gpu_inference_streams "$STREAMS" --start_from_device \
      --seconds "$RAW_SECONDS" --onnx "$large/model.onnx" --check_samples 4 --out "$results/raw.json"
    ;;
  offline)
    harness offline_device "${timed[@]}" --scenario Offline --batch_size "$OFFLINE_BATCH" \
      --gpu_inference_streams "$STREAMS" --start_from_device --min_duration_ms $((SECONDS_PER_RUN * 1000)) \
      $(offline_rate_flags "$results/raw.json")
    ;;
  server)
    server_flags=("${timed[@]}" --scenario Server --batch_size "$SERVER_BATCH"
      --server_batch_timeout_us "$SERVER_TIMEOUT_US" --gpu_inference_streams "$STREAMS"
      --start_from_device --min_duration_ms $((SECONDS_PER_RUN * 1000)) --min_query_count 1000)
    if [ -z "${SERVER_QPS:-}" ]; then
      server_search "server_b$SERVER_BATCH" "$(server_start "$results/raw.json")" \
        "$SERVER_STEP" "$SERVER_RUNS" "${server_flags[@]}"
    fi
    for q in ${SERVER_QPS:-}; do
      harness "server_b${SERVER_BATCH}_q$q" "${server_flags[@]}" --server_target_qps "$q"
    done
    ;;
  streams)
    harness singlestream "${timed[@]}" --scenario SingleStream --batch_size 1 \
      --gpu_inference_streams 1 --start_from_device --min_duration_ms 10000
    harness multistream "${timed[@]}" --scenario MultiStream --batch_size 8 \
      --gpu_inference_streams 1 --start_from_device --min_duration_ms 10000
    ;;
  variants)
    engine=$(find "$scratch/engines/bert" -name bert_weights.npz -size +100M 2>/dev/null | head -1 || true)
    [ -n "$engine" ] || { echo "variants: no real-size engine yet (run raw first)"; exit 1; }
    for shape in "384 256" "192 256"; do
      set -- $shape
      python3 -m $module.encoder_variants "$engine" --seq "$1" --batch "$2"
    done
    ;;
  table) ;;
  *) echo "unknown phase $phase"; exit 2 ;;
  esac
}

for phase in "${phases[@]}"; do
  run_phase "$phase" phase_steps "$phase"
done
tar czf "$out/results.tgz" -C "$results" .
python3 -m mlperf_harness.benchmarks.gpu_table "$results"
phases_summary
