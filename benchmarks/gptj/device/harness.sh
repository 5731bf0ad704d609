#!/usr/bin/env bash
# GPT-J through the whole harness on a lent GPU machine (the `device` tool): the real-size stand-in
# (GPT-J 6B's shape, seeded random weights made on the GPU, output lengths FORCED to a seeded
# draw around 69 tokens: benchmarks/gptj/real_size.py) under LoadGen, on the serving loop, with the
# torch engine (engines/torch_gptj). Run from the repo root:
#   [PRECISIONS="fp16 fp8"] bash benchmarks/gptj/device/harness.sh [phase ...]
# phases (default: offline server singlestream), each run once per precision of PRECISIONS
# (default fp16; fp8: FP8 projection weights), labelled <phase>-<precision>: a table row each.
# Each run times its engine at start for its rates (no measured H200 rate is recorded yet).
# The engine alone: benchmarks/gptj/device/engine.sh. Our wheels travel in .whl/
# (`bash benchmarks/device_wheels.sh core` on the build machine; carry [".whl"]).
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(offline server singlestream)
source benchmarks/device_lib.sh  # install_wheels, harness
install_wheels
out="${OUT:-/tmp/out}"
scratch=/tmp/scratch results="$out/results" logs="$out/logs" real=/tmp/gptj_real_size
mkdir -p "$results" "$logs"
module=mlperf_harness.benchmarks.gptj
common=(--backend torch --scratch_path "$scratch" --model_path "$real")
read -r -a precisions <<<"${PRECISIONS:-fp16}"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
python3 -m $module.real_size --out "$real"
for precision in "${precisions[@]}"; do
  for phase in "${phases[@]}"; do
    case "$phase" in
    offline) harness "offline-$precision" --precision "$precision" --scenario Offline ;;
    server) harness "server-$precision" --precision "$precision" --scenario Server ;;
    singlestream)
      harness "singlestream-$precision" --precision "$precision" --scenario SingleStream \
        --batch_size 1 ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
    esac
  done
done
python3 - "$results" <<'PY'
import json, pathlib, sys
print(f"{'run':<20}{'verdict':<9}{'samples/s':>10}{'p50 ms':>10}{'p99 ms':>10}  measured at start")
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.load(open(path))
    lat = r.get("latency_ns", {})
    rate = r.get("samples_per_second") or r.get("completed_samples_per_second") or 0
    timing = r.get("measured_at_start", {}).get("timing", {})
    print(f"{path.stem:<20}{str(r['result_valid']):<9}{rate:>10.2f}{lat.get('p50', 0)/1e6:>10.1f}"
          f"{lat.get('p99', 0)/1e6:>10.1f}  {timing.get('samples_per_second')} samples/s, "
          f"{r.get('generation')}")
PY
