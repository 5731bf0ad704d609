#!/usr/bin/env bash
# ResNet-50 through the whole harness with the torch backend, on a lent GPU machine (the `device`
# tool): stand-in model and images built there, fp16 AOTInductor engine, Offline performance and
# AccuracyOnly under LoadGen. Our wheels travel in .whl/ (see the device README); run from the repo
# root as `bash benchmarks/resnet50/device/torch_offline.sh`. Prints a table at the end.
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH="src/python:/tmp/site" PYTHONUNBUFFERED=1
scratch=/tmp/scratch logs=/tmp/logs out="${OUT:-/tmp/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
run() {  # $1: label; the rest: flags
  local label="$1"; shift
  /usr/bin/time -f "$label wall %e s" python3 -m mlperf_harness.benchmarks.resnet50.main \
    --backend torch --precision fp16 --batch_size 256 --scratch_path "$scratch" \
    --log_dir "$logs/$label" "$@" 2>&1 | tr '\r' '\n' | grep -v -E 'img/s|pass/s|^\s*$' | tail -12
  cp "$logs/$label/result.json" "$out/$label.result.json"
}
run offline --scenario Offline --min_duration_ms 20000 --offline_expected_qps 25000
run accuracy --scenario Offline --test_mode AccuracyOnly
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
perf = json.loads((out / "offline.result.json").read_text())
acc = json.loads((out / "accuracy.result.json").read_text())["accuracy"]
print(f"{'run':<34}{'figure':>24}")
print(f"{'Offline samples/s (' + str(perf['result_valid']) + ')':<34}{perf['samples_per_second']:>24,.0f}")
print(f"{'Offline latency p99 (ms)':<34}{perf['latency_ns']['p99'] / 1e6:>24,.1f}")
print(f"{'AccuracyOnly top-1':<34}{str(acc['good']) + '/' + str(acc['total']) + ' = ' + str(acc['top1_percent']) + '%':>24}")
print(f"engine: {perf['provenance']['engine']}")
PY
