#!/usr/bin/env bash
# GPT-J through the whole harness on a lent GPU machine (the `device` tool): the real-size stand-in
# (GPT-J 6B's shape, seeded random weights made on the GPU, output lengths FORCED to a seeded
# draw around 69 tokens: benchmarks/gptj/real_size.py) under LoadGen, on the serving loop, with the
# torch engine (engines/torch_gptj). Run from the repo root:
#   [PRECISIONS="fp16 fp8"] bash benchmarks/gptj/device/harness.sh [phase ...]
# phases (default: offline server singlestream), each run once per precision of PRECISIONS
# (default fp16; fp8: FP8 projection weights; fp8-static: the same with static activation scales,
# --fp8_activations static, calibrated at the first run on the real-size stand-in's own seeded
# prompts and kept in the scratch's engine cache), labelled <phase>-<precision>: a table row each.
# Each run takes its rates from its config (one H200's are recorded, in fp16) or times its engine
# at start.
# server: Server's highest VALID rate (device_lib.sh's server_search): from SERVER_SHARE (default
#   0.9) of this call's Offline rate at that precision (the run's own rate where Offline has not
#   run), a step of SERVER_STEP (default 0.1) of that down while INVALID, up while VALID, then the
#   midpoint; at most SERVER_RUNS (default 3) runs, each the minimum duration (HARNESS_FLAGS'
#   --min_duration_ms, e.g. 15000) plus its drain and the engine's start-up (one H200's Offline run
#   of 920 samples at a 15 s minimum lasted 48 s: docs/performance.md); no run starts that would
#   end past BUDGET_S (default 560) s into the call; SERVER_START (queries/s) sets the first target
#   (results live under $OUT, empty at each call). HARNESS_FLAGS must not set --server_target_qps
#   (it would override the search).
# Two GPUs: each engine in a process of its own, as the configs of several GPUs say (on two H200s
# 45.47 samples/s against 44.56 in one process, one call: docs/performance.md#gpt-j); one
# process: HARNESS_FLAGS="--no-engine_processes ...".
# The engine alone: benchmarks/gptj/device/engine.sh. Our wheels travel in .whl/
# (`bash benchmarks/device_wheels.sh core` on the build machine; carry [".whl"]).
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(offline server singlestream)
source benchmarks/device_lib.sh  # install_wheels, harness, server_search
install_wheels
out="${OUT:-/tmp/out}"
scratch=/tmp/scratch results="$out/results" logs="$out/logs" real=/tmp/gptj_real_size
mkdir -p "$results" "$logs"
module=mlperf_harness.benchmarks.gptj
SERVER_STEP="${SERVER_STEP:-0.1}" SERVER_RUNS="${SERVER_RUNS:-3}"
common=(--backend torch --scratch_path "$scratch" --model_path "$real")
read -r -a precisions <<<"${PRECISIONS:-fp16}"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
python3 -m $module.real_size --out "$real"
phase_steps() {  # $1: one phase, $2: its precision, as run_phase runs it (device_lib.sh: in a
  # subshell of its own; a command that fails ends the phase, and the phases after it still run)
  local phase="$1" precision="$2" flags=(--precision "$2")
  [[ "$precision" != fp8-static ]] || flags=(--precision fp8 --fp8_activations static)
  case "$phase" in
  offline) harness "offline-$precision" "${flags[@]}" --scenario Offline ;;
  server)
    server_search "server-$precision" "$(server_start "$results/offline-$precision.json")" \
      "$SERVER_STEP" "$SERVER_RUNS" "${flags[@]}" --scenario Server ;;
  singlestream)
    harness "singlestream-$precision" "${flags[@]}" --scenario SingleStream \
      --batch_size 1 ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
}

for precision in "${precisions[@]}"; do
  for phase in "${phases[@]}"; do
    run_phase "$phase-$precision" phase_steps "$phase" "$precision"
  done
done
python3 - "$results" <<'PY'
import json, pathlib, sys
print(f"{'run':<20}{'verdict':<9}{'samples/s':>10}{'p50 ms':>10}{'p99 ms':>10}  measured at start")
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.load(open(path))
    if "result_valid" not in r:  # not a run's result (another script's record in the same $OUT)
        continue
    lat = r.get("latency_ns", {})
    rate = r.get("samples_per_second") or r.get("completed_samples_per_second") or 0
    timing = r.get("measured_at_start", {}).get("timing", {})
    print(f"{path.stem:<20}{str(r['result_valid']):<9}{rate:>10.2f}{lat.get('p50', 0)/1e6:>10.1f}"
          f"{lat.get('p99', 0)/1e6:>10.1f}  {timing.get('samples_per_second')} samples/s, "
          f"{r.get('generation')}")
PY
python3 -m mlperf_harness.benchmarks.server_search table "$results"
phases_summary
