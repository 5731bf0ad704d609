#!/usr/bin/env bash
# RetinaNet on a lent GPU machine (the `device` tool) through the whole harness with the torch backend
# (fp16 AOTInductor engine of the ONNX network with decoding, top-k and per-class NMS on the GPU),
# against the raw speed of the same engine measured in the same call. The first `raw` phase compiles
# the real-size engine (about three minutes; cached under /tmp/scratch after).
# Run from the repo root: `bash benchmarks/retinanet/device/gpu_scenarios.sh [phase ...]`, phases
# (default: all but table):
#   build     the CPU stand-in and the real-size stand-in (full width, 264 classes, seeded weights)
#   accuracy  the small stand-in on the GPU engine, AccuracyOnly: mAP against its CPU figure, in
#             fp32 and in fp16 (the difference is the precision's; the postprocessing is the same)
#   raw       the real-size engine alone, and the GPU postprocessing's share (retinanet.torch_raw)
#   profile   the real-size engine's CUDA graph under torch's profiler (torch_raw --profile): its
#             kernels' GPU ms a batch by kind (convolutions and GEMMs, Inductor's fusions, copies,
#             the rest) and the costliest, in PRECISION (default fp16; fp8 builds its engine, about
#             five minutes) over PROFILE_REPLAYS (default 10) replays; not in the default phases
#   postprocess  the GPU postprocessing's NMS ways A/B (retinanet.postprocess_ab; no engine, no
#             model): detections checked equal bit for bit on random heads, then each way's ms a
#             batch of POST_BATCH (default 8), eager and compiled; not in the default phases
#   convfuse  the real-size network's convolutions with their bias and ReLU (and residual Add) in
#             cuDNN's epilogue against Inductor's way (engines/conv_epilogue_ab; no engine): each
#             distinct convolution's ms both ways at batch CONV_BATCH (default 8), and the totals
#             a batch; not in the default phases
#   cudnnbench  the raw phase again with cuDNN timing its algorithms (torch_raw --cudnn_benchmark:
#             raw_cudnn_benchmark.json; the harness takes cuDNN's heuristics' choice); runs the
#             raw phase first where raw.json is absent; not in the default phases
#   batch     the raw phase at other batch sizes: for each of RAW_BATCHES (default "8 16") an engine
#             of that batch built and timed alone (raw_batch<N>.json; each a compile of about two
#             minutes); not in the default phases
#   offline   Offline, images in GPU memory, real-size
#   server    Server's highest VALID rate, real-size (device_lib.sh's server_search): from
#             SERVER_SHARE (default 0.9) of the raw rate, a step of SERVER_STEP (default 0.1) of
#             that down while INVALID, up while VALID, then the midpoint; at most SERVER_RUNS
#             (default 4) runs of SECONDS_PER_RUN (20) s of queries each (and at least 1,000
#             queries, as BERT's), plus each run's start-up; no run starts that would end past
#             BUDGET_S (default 560) s into the call
#   fp8       the FP8 engine (engines/torch_fp8's network, the postprocessing eager after it:
#             engines/torch_retinanet/build.py) beside fp16, real-size: fp16's raw record (raw.json,
#             the raw phase's, run here when absent), then fp8's build (calibration on the
#             stand-in's calibration pictures, each convolution's tiling timed) and raw record
#             (raw_fp8.json: runners, engine alone, eager postprocessing), Offline through the
#             harness (offline_fp8), and the small stand-in's AccuracyOnly in fp8
#             (accuracy_small_fp8) where the budget allows; not in the default phases
#   table     only the table of every result this machine holds (printed after any phase)
# Our wheels travel in .whl/ (`bash benchmarks/device_wheels.sh core` on the build machine; carry
# .whl), and pycocotools in .whl/retinanet/ for the accuracy phase where the machine lacks it: `pip
# download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d
# .whl/retinanet pycocotools==<pin>` (constraints.txt's pin). Figures and commands, once measured:
# docs/performance.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build accuracy raw offline server)
source benchmarks/device_lib.sh  # install_wheels, harness, server_search
install_wheels
python3 -c "import pycocotools" 2>/dev/null || python3 -m pip install -q --no-index --no-deps \
  --no-compile --no-cache-dir --target /tmp/site .whl/retinanet/*.whl  # the mAP's COCOeval
scratch=/tmp/scratch results=/tmp/retinanet/results logs=/tmp/retinanet/logs out="${OUT:-/tmp/out}" real=/tmp/retinanet_real/model.onnx
mkdir -p "$results" "$logs" "$out" "$(dirname "$real")"
STREAMS="${STREAMS:-2}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}" RAW_SECONDS="${RAW_SECONDS:-15}"
SERVER_SHARE="${SERVER_SHARE:-0.9}" SERVER_STEP="${SERVER_STEP:-0.1}" SERVER_RUNS="${SERVER_RUNS:-4}"
common=(--backend torch --precision fp16 --scratch_path "$scratch")
module=mlperf_harness.benchmarks.retinanet

raw_record() {  # $1: the record's name under $results; the rest: more torch_raw flags. The
  # real-size engine alone, as the raw phase times it (the fp8 and cudnnbench phases beside it).
  local name="$1"
  shift
  python3 -m $module.torch_raw "${common[@]}" --model_path "$real" --scenario Offline \
    --gpu_inference_streams "$STREAMS" --start_from_device --seconds "$RAW_SECONDS" \
    --out "$results/$name.json" "$@"
}

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch; print('torch', torch.__version__)"
    start=$SECONDS
    python3 -m $module.stand_in --scratch_path "$scratch" | tail -3
    python3 -m $module.stand_in --scratch_path "$scratch" --real_size_model "$real" | tail -1
    echo "build: $((SECONDS - start)) s"
    ;;
  accuracy)
    for precision in fp32 fp16; do
      harness "accuracy_small_$precision" --scenario Offline --precision $precision \
        --gpu_inference_streams 1 --start_from_device --test_mode AccuracyOnly || true
    done
    ;;
  raw)
    monitored raw raw_record raw
    ;;
  profile)
    python3 -m $module.torch_raw "${common[@]}" --precision "${PRECISION:-fp16}" \
      --model_path "$real" --scenario Offline --gpu_inference_streams "$STREAMS" \
      --start_from_device --seconds 2 --profile "${PROFILE_REPLAYS:-10}"
    ;;
  postprocess)
    python3 -m $module.postprocess_ab --batch "${POST_BATCH:-8}" --out "$results/postprocess_ab.json"
    ;;
  cudnnbench)
    [ -f "$results/raw.json" ] || raw_record raw
    raw_record raw_cudnn_benchmark --cudnn_benchmark
    ;;
  batch)
    for size in ${RAW_BATCHES:-8 16}; do  # a build and a timing: about 200 s
      if [ $((SECONDS + 200)) -gt "${BUDGET_S:-560}" ]; then
        echo "raw_batch$size: not run: ${SECONDS} s into the call, budget ${BUDGET_S:-560} s"
        continue
      fi
      raw_record "raw_batch$size" --batch_size "$size"
    done
    ;;
  convfuse)
    python3 -m mlperf_harness.engines.conv_epilogue_ab --model_path "$real" \
      --batch "${CONV_BATCH:-8}" --out "$results/conv_epilogue_ab.json"
    ;;
  offline)
    harness offline_device --model_path "$real" --scenario Offline --gpu_inference_streams "$STREAMS" \
      --start_from_device --min_duration_ms $((SECONDS_PER_RUN * 1000)) \
      $(offline_rate_flags "$results/raw.json")
    ;;
  server)
    server_search server_device "$(server_start "$results/raw.json")" "$SERVER_STEP" \
      "$SERVER_RUNS" --model_path "$real" --scenario Server --gpu_inference_streams "$STREAMS" \
      --start_from_device --min_duration_ms $((SECONDS_PER_RUN * 1000)) --min_query_count 1000
    ;;
  fp8)
    [ -f "$results/raw.json" ] || raw_record raw
    start=$SECONDS
    raw_record raw_fp8 --precision fp8
    echo "fp8 build and raw: $((SECONDS - start)) s"
    harness offline_fp8 --precision fp8 --model_path "$real" --scenario Offline \
      --gpu_inference_streams "$STREAMS" --start_from_device \
      --min_duration_ms $((SECONDS_PER_RUN * 1000)) $(offline_rate_flags "$results/raw_fp8.json")
    if fits accuracy_small_fp8; then
      harness accuracy_small_fp8 --scenario Offline --precision fp8 --gpu_inference_streams 1 \
        --start_from_device --test_mode AccuracyOnly || true
    fi
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
for raw in raw raw_fp8 raw_cudnn_benchmark $(cd "$results" && ls raw_batch*.json 2>/dev/null | sed 's/.json$//'); do  # each engine's graph alone and its postprocessing's share of it
  python3 -c "import json; r = json.load(open('$results/$raw.json')); g, p = r['graph'], r['postprocess']; print(f\"$raw, {r['engines'][0]['precision']}: {r['engines'][0]['samples_per_second']:,.1f} images/s raw, engine alone {g['ms']:.2f} ms per batch of {g['batch']} ({g['samples_per_second']:,.1f} images/s); postprocessing ({'compiled' if p.get('compiled', True) else 'eager'}) {p['ms']:.2f} ms, {p['share']:.1%} of it\")" 2>/dev/null || true
done
python3 -c "import json; from mlperf_harness.benchmarks.retinanet.postprocess_ab import summary; print(summary(json.load(open('$results/postprocess_ab.json'))))" 2>/dev/null || true
python3 -c "import json; from mlperf_harness.engines.conv_epilogue_ab import summary; print(summary(json.load(open('$results/conv_epilogue_ab.json'))))" 2>/dev/null || true
phases_summary
