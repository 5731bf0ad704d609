#!/usr/bin/env bash
# ResNet-50 on a lent GPU machine as a GPU the configs do not know: this machine registered as a
# custom system whose rates are null (the torch backend's fp16 engines, the batching of the H200
# configs), so that every scenario times its engine at start and derives LoadGen's rates from it
# (docs/rates.md). Run from the repo root: `bash benchmarks/resnet50/device/measured_rates.sh`.
# Builds the stand-in and fp16 engines (gpu_scenarios.sh's build phase), then Offline, Server,
# SingleStream and MultiStream of $SECONDS_PER_RUN (default 15) s each, and prints a table: each
# run's verdict and figure, and what was timed at start and set.
# Carries: `bash benchmarks/device_wheels.sh core` on the build machine (docs/deploy.md).
set -euo pipefail
source benchmarks/device_lib.sh  # install_wheels, harness, gpu_build, run_phase, phases_summary
install_wheels
scratch=/tmp/scratch results=/tmp/results/measured logs=/tmp/logs/measured
mkdir -p "$results" "$logs"
build() {  # the stand-in and the fp16 engines of the H200 configs' batching
  PRECISION=fp16 OFFLINE_BATCH=256 SERVER_BATCH=128 SERVER_TIMEOUT_US=4000 \
    gpu_build benchmarks/resnet50/device/gpu_scenarios.sh "^stand-in|^engine|NVIDIA"
}
# Each step a phase of its own (device_lib.sh's run_phase): one that fails does not stop the rest,
# and the table still prints.
run_phase build build
configs=/tmp/measured_systems
rm -rf "$configs"
python3 - "$configs" <<'PY'
import json, sys
from pathlib import Path
from mlperf_harness.systems.custom import add_custom_system
from mlperf_harness.systems.detect import detect_system

path = add_custom_system(detect_system(), "Unknown-GPU", Path(sys.argv[1]), ["resnet50"], allow_known=True)
document = json.loads(path.read_text())
every = {"backend": "torch", "precision": "fp16", "start_from_device": True, "end_on_device": True}
chosen = {  # the H200 configs' batching (benchmarks/resnet50/configs.py); no rate
    "Offline": {"batch_size": 256, "gpu_inference_streams": 2},
    "Server": {"batch_size": 128, "gpu_inference_streams": 2, "server_batch_timeout_us": 4000},
    "SingleStream": {"batch_size": 1, "gpu_inference_streams": 1},
    "MultiStream": {"batch_size": 8, "gpu_inference_streams": 1},
}
for scenario, values in chosen.items():
    document["settings"]["resnet50"][scenario].update(every, **values)
path.write_text(json.dumps(document, indent=2))
print(f"custom system {path}: every rate null")
PY
module=mlperf_harness.benchmarks.resnet50
common=(--config_dir "$configs" --scratch_path "$scratch" --min_duration_ms "$((${SECONDS_PER_RUN:-15} * 1000))")
for scenario in Offline Server SingleStream MultiStream; do
  run_phase "${scenario,,}" harness "measured_${scenario,,}" --scenario "$scenario"
done
python3 - "$results" <<'PY'
import json, sys
from pathlib import Path

print(f"{'run':<24} {'verdict':<8} {'figure':<22} timed at start -> set")
for scenario in ("offline", "server", "singlestream", "multistream"):
    path = Path(sys.argv[1]) / f"measured_{scenario}.json"
    if not path.is_file():
        print(f"measured_{scenario:<15} (no result)")
        continue
    record = json.loads(path.read_text())
    verdict = {True: "VALID", False: "INVALID"}.get(record["result_valid"], "n/a")
    if "completed_samples_per_second" in record:
        figure = f"{record['completed_samples_per_second']:,.0f} samples/s"
    elif scenario == "offline":
        figure = f"{record['samples_per_second']:,.0f} samples/s"
    else:
        percentile = "p90" if scenario == "singlestream" else "p99"
        figure = f"{percentile} {record['latency_ns'][percentile] / 1e6:.3f} ms"
    measured = record.get("measured_at_start") or {}
    timing = measured.get("timing", {})
    told = (
        f"{timing.get('calls')} calls of {timing.get('batch_size')} on {timing.get('runners')}"
        f" runners: {timing.get('samples_per_second')} samples/s (peak"
        f" {timing.get('peak_samples_per_second')}), fastest {timing.get('latency_ms', {}).get('min')} ms"
        f" -> {measured.get('set')}"
    )
    print(f"measured_{scenario:<15} {verdict:<8} {figure:<22} {told}")
PY
phases_summary
