#!/usr/bin/env bash
# GPT-J's torch engine alone on a lent GPU machine (the `device` tool), from the repo root:
#   bash benchmarks/gptj/device/engine.sh
# prints a table: the small fitted stand-in decoded by the engine in fp32, fp16 and fp8 against the
# reference beam search on ONNX Runtime (same tokens per prompt), then GPT-J 6B's shape with seeded
# random weights on one GPU in each of PRECISIONS (default fp16,fp8,fp8-static: a row each; fp8-static
# is fp8 with static activation scales, calibrated first on the real-size stand-in's own seeded
# prompts, since random weights have no calibration set; 0.95x fp16 on one H200, 2026-11-30),
# slots sized to fill its memory: samples/s, tokens/s (samples x 69), weights' GiB, whether FP8 ran on
# torch._scaled_mm, where the time went, the decode step per slot count, prefill
# (engines/torch_gptj/device_check.py).
# PROFILE=1 runs the profile instead (engines/torch_gptj/device_profile.py; no inputs to carry, a
# few minutes for two precisions): per precision a timed run of SAMPLES with its GPU time split by
# call on CUDA events, then under torch.profiler one prefill call of a typical batch, the decode
# step over every slot (its CUDA graph, and eager by part: prompt attention, generated attention,
# merge, projections, lm_head...), the beams' top k: one table of GPU ms, top kernels, host ms.
# The timing run's output lengths are FORCED to a seeded draw around 69 tokens (random weights never
# choose EOS) and its prompt lengths are a seeded CNN-DailyMail-like draw (timing_workload.py).
#
# Its inputs, made on the build machine (any CPU host with this repo's dependencies; ~30 s):
#   python -m mlperf_harness.engines.torch_gptj.check_inputs --out dist/gptj_check
# and carried (the device tool's carry: ["dist/gptj_check"]). The GPU machine needs nothing else of
# ours: it has torch, numpy, onnx and onnxruntime. SAMPLES (default 1024), EQUALITY_PROMPTS (8),
# SLOTS (default: as many as fill the GPU), PRECISIONS (fp16,fp8,fp8-static; PROFILE=1: fp16,fp8,
# the profile takes no fp8-static), CHECK_DIR, OUT.
set -euo pipefail
source benchmarks/device_lib.sh  # run_phase, phases_summary
check_dir="${CHECK_DIR:-dist/gptj_check}" out="${OUT:-/tmp/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
export PYTHONPATH=src/python PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
# One phase (device_lib.sh's run_phase), whose command prints the table: a failure gets the same
# closing lines and exit status as every device script's.
if [[ "${PROFILE:-0}" == 1 ]]; then
  run_phase profile python3 -m mlperf_harness.engines.torch_gptj.device_profile --samples "${SAMPLES:-1024}" \
    --precisions "${PRECISIONS:-fp16,fp8}" ${SLOTS:+--slots "$SLOTS"} --out "$out/gptj_profile.json"
else
  run_phase engine python3 -m mlperf_harness.engines.torch_gptj.device_check --check_dir "$check_dir" \
    --samples "${SAMPLES:-1024}" --equality_prompts "${EQUALITY_PROMPTS:-8}" \
    --precisions "${PRECISIONS:-fp16,fp8,fp8-static}" \
    ${SLOTS:+--slots "$SLOTS"} --out "$out/gptj_engine.json"
fi
phases_summary
