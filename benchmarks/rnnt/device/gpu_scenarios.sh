#!/usr/bin/env bash
# RNN-T on a lent GPU machine (the `device` tool) through the whole harness with the torch backend
# (fp16 cuDNN LSTM encoder, the whole batch's greedy decoding on the GPU under CUDA graphs, the
# loaded utterances in GPU memory), against the raw speed of the same runners measured in the same
# call. Run from the repo root: `bash benchmarks/rnnt/device/gpu_scenarios.sh [phase ...]`, phases
# (default: all but singlestream, orders, mix, profile and table):
#   build         the CPU stand-in (generated speech, reduced-width RNN-T, its held-out WER on the
#                 CPU) and the real-size stand-in's marker (the reference's shapes, seeded weights,
#                 drawn utterances, FORCED emissions: benchmarks/rnnt/real_size.py)
#   accuracy      the small stand-in on the GPU runners, AccuracyOnly: its WER against the CPU's
#   raw           the real-size runners alone (rnnt.torch_raw): Offline's batches as the harness cuts
#                 them (in length order, RAW_SECONDS of them shuffled), then the whole query an
#                 Offline run of SECONDS_PER_RUN s gets, in the run's order, and one utterance
#   orders        the real-size runners alone, Offline's batches in arrival order and in length
#                 order, each with the encoder's input auto, padded and packed (torch_raw
#                 --order_table): ORDER_SECONDS (default 5) s each, one table, kept as orders.json
#   mix           the real-size runners alone, one runner's calls against batch size and length
#                 mix (rnnt.batch_mix): batches of MIX_BATCHES (default "256 1024") drawn at
#                 random (Server's arrival order), from one of MIX_BUCKETS (default 8) equal shares
#                 by length (Server's length queues), and in Offline's length order; MIX_SECONDS
#                 (default 4) s each; one table, kept as mix.json
#   offline       Offline, real-size
#   server        Server's highest VALID rate, real-size (the system's config: batch 1,024 from
#                 length-range queues, 350 ms timeout; device_lib.sh's server_search): from
#                 SERVER_SHARE (default 0.9) of the raw rate, a step of SERVER_STEP (default 0.1)
#                 of that down while INVALID, up while VALID, then the midpoint; at most
#                 SERVER_RUNS (default 4) runs of SECONDS_PER_RUN (20) s of queries each (at least
#                 1,000 queries, as BERT's), plus each run's start-up; no run starts
#                 that would end past BUDGET_S (default 560) s into the call
#   singlestream  SingleStream, real-size
#   profile       where one call's time goes (rnnt.torch_raw --profile: rnnt/call_profile.py),
#                 one runner, the real-size stand-in at Offline's batch (1,024) and 256 (or the
#                 batch sizes of PROFILE_BATCHES, space-separated), each an arrival-order batch, a
#                 length-ordered one, and that one again with the packed encoder: GPU ms on CUDA
#                 events of the upload, each part of the encoder and of the decode (each replay of
#                 the captured steps, each host check between them), the steps run and needed, the
#                 top kernels of each stage under torch.profiler; printed as one table, kept as
#                 profile.json beside the runs. Needs no other phase (it writes the real-size
#                 marker where build has not); loading, capturing, then a few calls a batch (one
#                 batch a size took well under 3 minutes; this profiles three a size)
#   table         only the table of every result this machine holds (printed after any phase)
# Runners a GPU: STREAMS (default 4, Offline's config) for raw, orders, mix and offline,
# SERVER_STREAMS (default 4, Server's config) for server.
# Our wheels travel in .whl/ (`bash benchmarks/device_wheels.sh core` on the build machine; carry
# .whl). RESULTS (default /tmp/rnnt/results) keeps one layout's results apart from another's
# (CUDA_VISIBLE_DEVICES picks the GPUs). Figures and commands, once measured: docs/performance.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build accuracy raw offline server)
source benchmarks/device_lib.sh  # install_wheels, harness, describe_gpus, offline_rate_flags, server_search
install_wheels
scratch=/tmp/scratch results=${RESULTS:-/tmp/rnnt/results} logs=/tmp/rnnt/logs out="${OUT:-/tmp/out}"
real=/tmp/rnnt_real
mkdir -p "$results" "$logs" "$out"
STREAMS="${STREAMS:-4}" SERVER_STREAMS="${SERVER_STREAMS:-4}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}" RAW_SECONDS="${RAW_SECONDS:-10}"
SERVER_SHARE="${SERVER_SHARE:-0.9}" SERVER_STEP="${SERVER_STEP:-0.1}" SERVER_RUNS="${SERVER_RUNS:-4}"
common=(--backend torch --precision fp16 --scratch_path "$scratch")
module=mlperf_harness.benchmarks.rnnt
real_flags=(--model_path "$real" --gpu_inference_streams "$STREAMS")

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    describe_gpus
    start=$SECONDS
    python3 -m $module.stand_in --scratch_path "$scratch" | grep -E "heldout_wer_percent|build_seconds"
    python3 -m $module.real_size --out "$real"
    echo "build: $((SECONDS - start)) s"
    ;;
  accuracy)
    echo "CPU (ONNX Runtime, fp32): $(python3 -m $module.stand_in --scratch_path "$scratch" | grep heldout_wer_percent)"
    harness accuracy_small --scenario Offline --gpu_inference_streams 1 --test_mode AccuracyOnly
    ;;
  raw)
    monitored raw python3 -m $module.torch_raw "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --seconds "$RAW_SECONDS" --whole_query_seconds "$SECONDS_PER_RUN" --out "$results/raw.json"
    ;;
  orders)
    python3 -m $module.torch_raw "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --seconds "${ORDER_SECONDS:-5}" --order_table --out "$results/orders.json"
    ;;
  mix)
    local -a mix_batches=()
    read -r -a mix_batches <<<"${MIX_BATCHES:-256 1024}"
    python3 -m $module.batch_mix "${common[@]}" "${real_flags[@]}" --scenario Offline \
      --batches "${mix_batches[@]}" --buckets "${MIX_BUCKETS:-8}" \
      --seconds "${MIX_SECONDS:-4}" --out "$results/mix.json"
    ;;
  offline)
    harness offline "${real_flags[@]}" --scenario Offline \
      --min_duration_ms $((SECONDS_PER_RUN * 1000)) $(offline_rate_flags "$results/raw.json")
    ;;
  server)
    server_search server "$(server_start "$results/raw.json")" "$SERVER_STEP" "$SERVER_RUNS" \
      "${real_flags[@]}" --gpu_inference_streams "$SERVER_STREAMS" --scenario Server \
      --min_duration_ms $((SECONDS_PER_RUN * 1000)) --min_query_count 1000
    ;;
  profile)
    [ -f "$real/real_size_stand_in.json" ] || python3 -m $module.real_size --out "$real"
    local -a batches=()
    read -r -a batches <<<"${PROFILE_BATCHES:-}"
    python3 -m $module.torch_raw "${common[@]}" --model_path "$real" --gpu_inference_streams 1 \
      --scenario Offline --profile ${batches[@]+--profile_batches "${batches[@]}"} \
      --out "$results/profile.json"
    ;;
  singlestream)
    harness singlestream "${real_flags[@]}" --scenario SingleStream --gpu_inference_streams 1 \
      --min_duration_ms $((SECONDS_PER_RUN * 1000))
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
