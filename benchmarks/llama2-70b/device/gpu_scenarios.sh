#!/usr/bin/env bash
# Llama2-70B on a lent GPU machine (the `device` tool), from the repo root:
#   bash benchmarks/llama2-70b/device/gpu_scenarios.sh [phase ...]
#     phases (default: engine offline server interactive; `profile` only when named)
# engine: the torch engine alone (engines/torch_llama/device_check.py): a tiny Llama decoded on the
#   GPU against the NumPy model (same tokens), then Llama-2-70B's shape with seeded random weights
#   drawn on the GPU (FP8 per-channel where torch._scaled_mm runs), slots filling the GPU.
# profile: where the engine's time goes and what its options change (engines/torch_llama/
#   device_profile.py): the model built once; per engine variant (options.py: prefill serial or
#   packed, decode attention gqa, folded, packed or fp8kernel, CUDA graphs or not, FP8 activations
#   scaled per row or per tensor) every slot prefilled (timed), decode steps of all slots (timed),
#   the top kernels and host ms of a step, then one prompt admitted alone at 64 to 1,024 tokens
#   (wall, kernel and host-issue ms: Interactive's admissions); one table. VARIANTS
#   ('prefill=packed,attention=folded,graphs=1;...') picks them; the default: device_profile.py's
#   VARIANTS (thirteen; more than one call's 600 s: name the ones wanted). PROFILE_SLOTS ("173 48
#   32", say): the profile once per slot count (profile_s<N>.json), where a step's time against
#   its slots is wanted (Interactive's TPOT bound of 40 ms); unset: as many slots as fill the GPU.
# offline, server, interactive: the same real-size stand-in through the whole harness (serving loop,
#   LoadGen with token latencies; Interactive = LoadGen's Server under llama2-70b-interactive).
#   server and interactive each search their highest VALID rate (device_lib.sh's server_search;
#   LoadGen's verdict holds the TTFT and TPOT bounds): from SERVER_SHARE (default 0.9; Interactive:
#   INTERACTIVE_SHARE, default SERVER_SHARE) of this call's Offline samples/s (the run's own rate,
#   timed at start, where Offline has not run), a step of SERVER_STEP (default 0.1) of that down
#   while INVALID, up while VALID, then the midpoint; at most SERVER_RUNS (default 3) runs each of
#   the stand-in's minimum duration (60 s; HARNESS_FLAGS' --min_duration_ms) plus its drain and
#   the model's start-up; no run starts that would end past BUDGET_S (default 560) s into the call,
#   so each searched scenario wants a call of its own, its start given as SERVER_START (Interactive:
#   INTERACTIVE_START; queries/s: results live under $OUT, empty at each call). INTERACTIVE_SLOTS:
#   Interactive's slots (its --batch_size; unset: the config's, 32 on GPUs: a 46 ms step at 173
#   slots is over the 40 ms TPOT bound before any prefill). PREFILL: Interactive's --prefill
#   (packed, static, chunked), or auto: the way this call's profile phase admitted one prompt
#   fastest (device_profile.py --faster_prefill; for chunked, the ms an admission adds to the steps
#   it joins); unset: the config's (static on GPUs).
# Tensor parallel: HARNESS_FLAGS="--tensor_parallel 2" runs each engine over two GPUs (the H100
#   configs set it; on a host of two H200s it compares one engine over both with one per GPU);
#   TENSOR_PARALLEL=2 the engine phase's (its equality and its timing, one engine over GPUs 0-1).
# Output lengths are FORCED to a seeded draw of mean about 294 tokens (random weights never choose
# EOS: benchmarks/llama2_70b/real_size.py); every figure is a stand-in's. Prints one table.
# Our wheels travel in .whl/ (`bash benchmarks/device_wheels.sh core`; carry [".whl"]).
# SAMPLES (engine alone, default 2048), OPTIONS (the engine phase's options.py string),
# COUNT (harness runs' samples, default 4096; Server and Interactive issue whole passes over them,
# so a run lasts at least COUNT / target seconds, and early stopping wants at least 460 of them:
# device_lib.sh's passes_fit refuses a search that cannot end within the call),
# ADMIT_BATCH (the engine phase's scheduler; the
# harness runs take --admit_batch through HARNESS_FLAGS), OUT.
# Ran on one H200 (2026-11-28 and -29): the engine phase (equality 16 of 16 prompts; with the
# fused inputs, the default since, 1,536 samples in 249 s at 1,792 tokens/s: SAMPLES=2048 wants
# more than a call's 420 s) and profile (eleven variants in two calls, the fused pair in 33 s;
# docs/llama2-70b.md); offline (COUNT=1536 HARNESS_FLAGS="--min_duration_ms 60000
# --offline_expected_qps 23": about 1,520 samples in 300 s) and server (SERVER_START=5.4
# SERVER_RUNS=1 HARNESS_FLAGS="--min_duration_ms 60000": one run in 356 s), each in a call of
# its own. On one H200 (2026-11-30), admitting up to 8 prompts a prefill (--admit_batch 8, the
# GPU configs' since): ADMIT_BATCH=8 SAMPLES=1280 engine (2,048 tokens/s); offline COUNT=1280
# HARNESS_FLAGS="--admit_batch 8 --min_duration_ms 60000 --offline_expected_qps 19" (1,254
# samples, 2,031 tokens/s, 232 s with the install); server COUNT=1200 SERVER_START=6.3
# SERVER_RUNS=1 (VALID, 274 s); interactive COUNT=470 INTERACTIVE_START=1.8 INTERACTIVE_SLOTS=32
# SERVER_RUNS=1 (342 s: both bounds met, INVALID on early stopping, which wanted 368 more
# queries: a few were just over the TPOT bound). Then (2026-11-30, the static prefill): PREFILL=static
# COUNT=1010 INTERACTIVE_START=1.9 SERVER_RUNS=1 BUDGET_S=598 interactive, VALID in 578 s (880
# queries were 121 short of early stopping's count). On two H200s
# (2026-11-29): TENSOR_PARALLEL=2 SAMPLES=3072 engine (equality 16 of 16 over NCCL with graphs;
# 626 slots, stopped at 195 s by its limit: docs/llama2-70b.md#tensor-parallelism); offline with
# COUNT=3072 HARNESS_FLAGS="--min_duration_ms 60000 --offline_expected_qps 12", an engine a GPU
# and with --tensor_parallel 2 added, each about 315-350 s in a call of its own.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(engine offline server interactive)
source benchmarks/device_lib.sh  # install_wheels, harness, server_search
install_wheels
out="${OUT:-/tmp/out}"
scratch=/tmp/scratch results="$out/results" logs="$out/logs" real=/tmp/llama2_real_size
mkdir -p "$results" "$logs"
module=mlperf_harness.benchmarks.llama2_70b
SERVER_SHARE="${SERVER_SHARE:-0.9}" SERVER_STEP="${SERVER_STEP:-0.1}" SERVER_RUNS="${SERVER_RUNS:-3}"
count="${COUNT:-4096}"
common=(--backend torch --precision fp8 --scratch_path "$scratch" --model_path "$real" --count "$count")
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
python3 -m $module.real_size --out "$real"
phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  engine) python3 -m mlperf_harness.engines.torch_llama.device_check --samples "${SAMPLES:-2048}" \
            --out "$results/engine.json" ${OPTIONS:+--options "$OPTIONS"} \
            ${ADMIT_BATCH:+--admit_batch "$ADMIT_BATCH"} \
            ${TENSOR_PARALLEL:+--tensor_parallel "$TENSOR_PARALLEL"} ;;
  profile)
    if [ -z "${PROFILE_SLOTS:-}" ]; then
      python3 -m mlperf_harness.engines.torch_llama.device_profile --out "$results/profile.json" \
        ${VARIANTS:+--variants "$VARIANTS"}
    fi
    for n in ${PROFILE_SLOTS:-}; do
      python3 -m mlperf_harness.engines.torch_llama.device_profile --slots "$n" \
        --out "$results/profile_s$n.json" ${VARIANTS:+--variants "$VARIANTS"}
    done ;;
  offline) harness offline --scenario Offline ;;
  server)
    start=$(server_start "$results/offline.json")
    passes_fit server "$start" "$count"
    server_search server "$start" "$SERVER_STEP" "$SERVER_RUNS" --scenario Server ;;
  interactive)
    start=$(SERVER_START="${INTERACTIVE_START:-}" SERVER_SHARE="${INTERACTIVE_SHARE:-$SERVER_SHARE}" \
      server_start "$results/offline.json")
    passes_fit interactive "$start" "$count"
    prefill="${PREFILL:-}"
    if [ "$prefill" = auto ]; then
      prefill=$(python3 -m mlperf_harness.engines.torch_llama.device_profile --faster_prefill \
        "$results"/profile*.json 2>/dev/null || true)
      if [ -n "$prefill" ]; then echo "interactive: prefill $prefill, the profile's faster"
      else echo "interactive: no profile timed admissions here: the config's prefill"; fi
    fi
    server_search interactive "$start" "$SERVER_STEP" "$SERVER_RUNS" \
      --scenario Interactive ${INTERACTIVE_SLOTS:+--batch_size "$INTERACTIVE_SLOTS"} \
      ${prefill:+--prefill "$prefill"} ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
}

for phase in "${phases[@]}"; do
  run_phase "$phase" phase_steps "$phase"
done
python3 - "$results" <<'PY'
import json, pathlib, sys
results = pathlib.Path(sys.argv[1])
print(f"\n{'run':<20}{'verdict':<9}{'tokens/s':>10}{'TTFT p99 ms':>13}{'TPOT p99 ms':>13}  notes")
engine = results / "engine.json"
if engine.is_file():
    t = json.load(open(engine))["timing"]
    print(f"{'engine alone':<20}{'-':<9}{t['tokens_per_second']:>10.1f}{'-':>13}{'-':>13}  "
          f"{t['slots']} slots {t['precision']}")
for path in sorted(results.glob("*.json")):  # offline, each search's server_q<rate>, interactive_q<rate>
    if path.stem == "engine" or path.stem.startswith("profile"):
        continue
    name, r = path.stem, json.load(open(path))
    lg = r.get("loadgen", {})
    ttft, tpot = lg.get("first_token_ns", {}), lg.get("time_per_output_token_ns", {})
    print(f"{name:<20}{str(r['result_valid']):<9}{r.get('tokens_per_second') or 0:>10.1f}"
          f"{ttft.get('p99', 0) / 1e6:>13.1f}{tpot.get('p99', 0) / 1e6:>13.1f}  "
          f"{r.get('generation')}")
PY
python3 -m mlperf_harness.benchmarks.server_search table "$results"
phases_summary
