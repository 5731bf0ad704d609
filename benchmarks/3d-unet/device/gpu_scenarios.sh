#!/usr/bin/env bash
# 3D-UNet on a lent GPU machine (the `device` tool) through the whole harness with the torch backend
# (fp16 AOTInductor engine of the ONNX model, channels-last 3D; windows, blending and argmax on the
# GPU), against the raw speed of the same engine measured in the same call. Run from the repo root:
# `bash benchmarks/3d-unet/device/gpu_scenarios.sh [phase ...]`, phases (default: all but table):
#   build     the CPU stand-in (generated volumes, reduced-width U-Net fitted to them) and the
#             real-width stand-in (the KiTS19 U-Net's full width, seeded: what timing runs use)
#   accuracy  the small stand-in on the GPU engine, AccuracyOnly: DICE against its CPU figure
#   raw       the real-width engine alone (unet3d.torch_raw)
#   offline   Offline, volumes in GPU memory, real-width
#   streams   SingleStream, real-width
#   table     only the table of every result this machine holds (printed after any phase)
# Our wheels travel in .whl/ (mlcommons-loadgen, tqdm, nibabel, the native module, all cp312); the
# machine has torch, numpy, onnx and onnxruntime (scipy from .whl/optional/ where it lacks it). On
# the build machine `bash benchmarks/device_wheels.sh core scipy` makes both and prints the call's
# carry list (docs/deploy.md).
# Figures and commands: docs/performance.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build accuracy raw offline streams)
source benchmarks/device_lib.sh  # install_wheels, harness
install_wheels
# scipy (resampling) only where the machine lacks it: its own build matches its own numpy.
python3 -c "import scipy" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --target /tmp/site .whl/optional/scipy-*.whl
scratch=/tmp/scratch results=/tmp/results logs=/tmp/logs out="${OUT:-/tmp/out}" real=/tmp/unet_real/model.onnx
mkdir -p "$results" "$logs" "$out" "$(dirname "$real")"
STREAMS="${STREAMS:-2}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}" RAW_SECONDS="${RAW_SECONDS:-15}"
common=(--backend torch --precision fp16 --scratch_path "$scratch")
module=mlperf_harness.benchmarks.unet3d

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch; print('torch', torch.__version__)"
    start=$SECONDS
    python3 -m $module.stand_in --scratch_path "$scratch" | tail -3
    python3 -m $module.stand_in --scratch_path "$scratch" --real_width_model "$real" | tail -1
    echo "build: $((SECONDS - start)) s"
    ;;
  accuracy)
    harness accuracy_small --scenario Offline --gpu_inference_streams 1 --start_from_device \
      --test_mode AccuracyOnly
    ;;
  raw)
    monitored raw python3 -m $module.torch_raw "${common[@]}" --model_path "$real" --scenario Offline \
      --gpu_inference_streams "$STREAMS" --start_from_device --seconds "$RAW_SECONDS" \
      --out "$results/raw.json"
    ;;
  offline)
    harness offline_device --model_path "$real" --scenario Offline --gpu_inference_streams "$STREAMS" \
      --start_from_device --min_duration_ms $((SECONDS_PER_RUN * 1000)) \
      $(offline_rate_flags "$results/raw.json")
    ;;
  streams)
    harness singlestream --model_path "$real" --scenario SingleStream --gpu_inference_streams 1 \
      --start_from_device --min_duration_ms $((SECONDS_PER_RUN * 1000))
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
