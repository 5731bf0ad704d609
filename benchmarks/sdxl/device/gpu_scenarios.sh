#!/usr/bin/env bash
# SDXL on a lent GPU machine (the `device` tool), from the repo root: the torch engine alone
# (gpu_timing.py) and the whole harness under LoadGen, Offline, Server and SingleStream, on SDXL's
# real size with seeded random fp16 weights (benchmarks/sdxl/gpu_pipeline.py: diffusers' and
# transformers' model classes from SDXL base 1.0's configurations; 1024x1024 images, 20 steps,
# guidance 8 batched, the UNet under CUDA graphs, VAE decode and uint8 on the GPU). Prints a table:
# engine alone against the harness.
#   bash benchmarks/sdxl/device/gpu_scenarios.sh [phase ...]   phases (default: engine offline server singlestream;
#   also engine_fp8, offline_fp8)
# server: Server's highest VALID rate (device_lib.sh's server_search): from SERVER_SHARE (default
#   0.9) of this call's Offline rate (the run's own rate, timed at start, where Offline has not
#   run), a step of SERVER_STEP (default 0.1) of that down while INVALID, up while VALID, then the
#   midpoint; at most SERVER_RUNS (default 3) runs of at least 460 queries each (early stopping's
#   least: about 430 s at one H200's 1.07 queries/s) plus the pipeline's start-up, so one run takes
#   a call of its own: `SERVER_START=<0.9 x an earlier call's Offline samples/s> SERVER_RUNS=1
#   bash ... server` (results live under $OUT, empty at each call); no run starts that would end
#   past BUDGET_S (default 560) s into the call.
# FP8 (the UNet's linear layers, benchmarks/sdxl/unet_fp8.py): PRECISION (default fp16) is every
#   harness phase's --precision; the engine_fp8 phase times the engine alone in fp8 (engine.json's
#   fp16 beside it: the table says fp8 against fp16) and offline_fp8 runs Offline in fp8. One call
#   that says whether FP8 measures faster: `bash ... engine engine_fp8 offline_fp8`.
# Carry [".whl"] after, on the build machine: `bash benchmarks/device_wheels.sh core diffusers`.
# Every phase ran on one H200; its figures and commands: docs/performance.md#sdxl.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(engine offline server singlestream)
source benchmarks/device_lib.sh  # install_wheels, harness, server_search
install_wheels
if compgen -G '.whl/diffusers/*.whl' >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/diffusers/*.whl
fi
python3 -c "import diffusers, transformers, torch; print('diffusers', diffusers.__version__, 'transformers', transformers.__version__, 'torch', torch.__version__)"
out="${OUT:-/tmp/out}"
scratch=/tmp/scratch results="$out/results" logs="$out/logs"
mkdir -p "$results" "$logs"
module=mlperf_harness.benchmarks.sdxl
SERVER_STEP="${SERVER_STEP:-0.1}" SERVER_RUNS="${SERVER_RUNS:-3}"
# Short runs: a sample is seconds of GPU work; LoadGen's 600 s minimum is for submissions.
PRECISION="${PRECISION:-fp16}"
common=(--backend torch --precision "$PRECISION" --scratch_path "$scratch" --min_duration_ms 120000)
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  engine)  # engine.json only whole: the table reads its last line
    python3 -m $module.gpu_timing --batch_size 8 | tee "$results/engine.json.part"
    mv "$results/engine.json.part" "$results/engine.json" ;;
  engine_fp8)
    python3 -m $module.gpu_timing --batch_size 8 --precision fp8 | tee "$results/engine_fp8.json.part"
    mv "$results/engine_fp8.json.part" "$results/engine_fp8.json" ;;
  offline) harness offline --scenario Offline ;;
  offline_fp8) harness offline_fp8 --scenario Offline --precision fp8 ;;
  # The query counts are early stopping's least (LoadGen's results.cc, confidence 0.99): Server's
  # p99 with no query over the bound needs 459 queries, SingleStream's p90 64; fewer are INVALID
  # however fast (one H200's 100-query Server runs and 46-query SingleStream were).
  server) server_search server "$(server_start "$results/offline.json")" "$SERVER_STEP" "$SERVER_RUNS" \
            --scenario Server --min_query_count 460 ;;
  singlestream) harness singlestream --scenario SingleStream --min_query_count 64 ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
}

for phase in "${phases[@]}"; do
  run_phase "$phase" phase_steps "$phase"
done
python3 - "$results" <<'PY'
import json, pathlib, sys
results = pathlib.Path(sys.argv[1])
def last_line(name):
    path = results / name
    return json.loads(path.read_text().strip().splitlines()[-1]) if path.is_file() else {}
engines = {"fp16": last_line("engine.json"), "fp8": last_line("engine_fp8.json")}
engine = engines["fp16"]
print(f"{'run':<14}{'verdict':<9}{'samples/s':>10}{'p50 ms':>10}{'p99 ms':>10}  vs engine alone")
for precision, e in engines.items():
    if not e:
        continue
    label = "engine alone" if precision == "fp16" else "engine fp8"
    note = f"batch {e['batch_size']}, {e['gpu']}"
    if precision == "fp8":
        note += f", {e['fp8_layers']} FP8 layers, _scaled_mm {e['fp8_scaled_mm']}"
        if engine:
            note += (f"; {e['offline_samples_per_s'] / engine['offline_samples_per_s']:.3f}x fp16's"
                     f" samples/s, p50 {e['single_sample_ms_p50'] - engine['single_sample_ms_p50']:+.1f} ms")
    print(f"{label:<14}{'-':<9}{e['offline_samples_per_s']:>10.3f}"
          f"{e['single_sample_ms_p50']:>10.1f}{'':>10}  {note}")
for path in sorted(results.glob("*.json")):
    if path.name in ("engine.json", "engine_fp8.json"):
        continue
    r = json.load(open(path))
    lat = r.get("latency_ns", {})
    rate = r.get("samples_per_second") or r.get("completed_samples_per_second") or 0
    share = ""
    ran = r.get("provenance", {}).get("unet_precision", "fp16")
    base = engines.get(ran) or {}
    if base and path.stem.startswith("offline"):
        share = f"{100 * rate / base['offline_samples_per_s']:.1f}% of the {ran} engine's Offline"
    if base and path.stem == "singlestream":
        share = f"p50 {lat.get('p50', 0) / 1e6 - base['single_sample_ms_p50']:+.1f} ms against the {ran} engine's"
    print(f"{path.stem:<14}{str(r['result_valid']):<9}{rate:>10.3f}{lat.get('p50', 0)/1e6:>10.1f}"
          f"{lat.get('p99', 0)/1e6:>10.1f}  {share}")
PY
python3 -m mlperf_harness.benchmarks.server_search table "$results"
phases_summary
