#!/usr/bin/env bash
# ResNet-50 through the Triton harness on a lent GPU machine (issue 16): one Triton server per GPU
# (torch backend, fp16, the engines gpu_scenarios.sh builds), LoadGen in one process driving them
# over gRPC, against the direct harness measured in the same call (the ratio is the figure). Run
# from the repo root: `bash benchmarks/resnet50/device/triton.sh [phase ...]`, phases (default:
# check offline server failover):
#   build     the stand-in and the torch engines (gpu_scenarios.sh's build; skip on a warm machine)
#   check     the Triton packages unpacked; the servers' Python (numpy 1.26 before the host's
#             numpy 2) imports torch and opencv and runs torch on the GPU with it
#   offline   Offline: the direct harness on one GPU (from GPU memory and from host memory) and on
#             all; through Triton, one server (GPU 0), then one server per GPU
#   server    Server: the direct harness at $SERVER_QPS on one GPU; through Triton, one server per
#             GPU at $TRITON_SERVER_QPS (default: 85% of $SERVER_QPS, at most 90% of the Triton
#             Offline rate this machine measured)
#   failover  the failover soak on the GPUs: 2 servers (one per GPU where there are two), an
#             AccuracyOnly and an Offline run, a server SIGKILLed in each and started again; every
#             sample checked against the direct harness (mlperf_harness/triton/failover_soak.py)
#   table     only the table of what this machine holds (printed after any phase)
# The servers' runtime: $RUNTIME (default python_backend: one Triton Python backend process per GPU
# running that GPU's runners; pytriton: the runners in the serve process, behind PyTriton's proxy),
# given to serve as --triton_runtime. $GPUS: use only the first $GPUS GPUs (default: all), for
# one-server runs on a machine of two.
# The Triton runs' samples: $TRITON_SAMPLES (default staged: each server holds LoadGen's loaded set
# from its own preprocessed copy, on its GPU, and requests carry indices; wire: the fp32 arrays
# travel in every request, which at GPU rates gRPC cannot carry: docs/triton.md).
# Carried (device tool `carry`): the core wheels of .whl/ (mlcommons-loadgen, the native module,
# tqdm: as for gpu_scenarios.sh) and .whl/triton (benchmarks/triton_bundle.sh: PyTriton,
# tritonclient and their closure for CPython 3.12, and numpy 1.26.4, as one tar.xz), unpacked under
# /tmp/triton. On the build machine `bash benchmarks/device_wheels.sh core triton` makes both and
# prints this script's carry list (not all of .whl/: a call carries 64 MiB; docs/deploy.md). The servers run with numpy 1.26 first on their path (PyTriton needs numpy < 2);
# the LoadGen process and the direct harness keep the host's numpy.
# A CPU rehearsal (this script's logic without a GPU): BACKEND=onnxruntime TRITON_BUNDLE=none
# PYTHON=<a Python with the project's packages and PyTriton> (docs/triton.md).
# Figures and commands: docs/triton.md, docs/multihost.md.
set -euo pipefail
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(check offline server failover)
source benchmarks/device_lib.sh  # install_wheels, harness
BACKEND="${BACKEND:-torch}" PYTHON="${PYTHON:-python3}"
TRITON_BUNDLE="${TRITON_BUNDLE:-.whl/triton/triton-cp312.tar.xz}"
scratch="${SCRATCH:-/tmp/scratch}" results="${RESULTS:-/tmp/triton_results}" logs=/tmp/triton_logs
out="${OUT:-/tmp/out}"
mkdir -p "$results" "$logs" "$out"
if [ "$BACKEND" = torch ]; then
  install_wheels  # PYTHONPATH=src/python:/tmp/site
  host_site=/tmp/site
  gpus=$(nvidia-smi -L | grep -c '^GPU ')
  if [ -n "${GPUS:-}" ]; then
    gpus=$GPUS
    export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((GPUS - 1)))
  fi
  SERVERS=$gpus  # one server per GPU
  PRECISION="${PRECISION:-fp16}"
  # Runners per GPU (runner threads of the server's instance process) and 12 batches in flight:
  # 2 by default, as the direct harness's GPU settings (docs/triton.md). The direct harness runs
  # with the same runners.
  streams=(--gpu_inference_streams "${STREAMS:-2}")
  device_run=(--start_from_device "${streams[@]}") host_run=(--no-start_from_device "${streams[@]}")
else  # the CPU rehearsal: servers of one thread each, as if on hosts of their own
  export PYTHONPATH="src/python" PYTHONUNBUFFERED=1
  host_site=""
  gpus=0 SERVERS="${SERVERS:-2}"
  PRECISION="${PRECISION:-fp32}"
  streams=(--intra_op_threads 1) device_run=() host_run=()
fi
OFFLINE_BATCH="${OFFLINE_BATCH:-256}" SERVER_BATCH="${SERVER_BATCH:-128}"
SERVER_TIMEOUT_US="${SERVER_TIMEOUT_US:-6000}" SERVER_QPS="${SERVER_QPS:-26500}"
OFFLINE_QPS="${OFFLINE_QPS:-30000}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-15}"
TRITON_INFLIGHT="${TRITON_INFLIGHT:-12}" PORT0="${PORT0:-18601}"
TRITON_SAMPLES="${TRITON_SAMPLES:-staged}" RUNTIME="${RUNTIME:-python_backend}"
triton_run=(--harness triton --triton_inflight "$TRITON_INFLIGHT" --triton_samples "$TRITON_SAMPLES")
common=(--backend "$BACKEND" --precision "$PRECISION" --scratch_path "$scratch")
module=mlperf_harness.benchmarks.resnet50
# The LoadGen process and the direct harness: the host's numpy; the servers: numpy 1.26 first.
client_path="src/python${host_site:+:$host_site}:/tmp/triton/site"
server_path="src/python:/tmp/triton/numpy1${host_site:+:$host_site}:/tmp/triton/site"
[ "$TRITON_BUNDLE" = none ] && client_path="$PYTHONPATH" server_path="$PYTHONPATH"
export PYTHONPATH="$client_path"
ms=$((SECONDS_PER_RUN * 1000))
echo "$gpus GPU(s); Triton runs over 1 and $SERVERS server(s) (one per GPU); $(nproc) CPUs:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

unpack_triton() {  # the bundle, once per machine
  [ "$TRITON_BUNDLE" = none ] || [ -d /tmp/triton/site ] && return 0
  mkdir -p /tmp/triton.part && tar -C /tmp/triton.part -xJf "$TRITON_BUNDLE"
  mv /tmp/triton.part /tmp/triton
}
pids=()
stop_servers() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
phase_cleanup() { stop_servers; }  # however a phase ends, the servers it started stop (run_phase)
start_servers() {  # $1 servers (server i on GPU i mod $gpus, port $PORT0 + i); the rest: their flags
  local count=$1 i port started; shift
  stop_servers
  for ((i = 0; i < count; i++)); do
    port=$((PORT0 + i))
    (
      [ "$gpus" -gt 0 ] && export CUDA_VISIBLE_DEVICES=$((i % gpus))
      PYTHONPATH="$server_path" exec "$PYTHON" -m mlperf_harness.triton.serve \
        --benchmark_module $module.benchmark "${common[@]}" "${streams[@]}" "$@" \
        --triton_runtime "$RUNTIME" --grpc_port "$port" >"$logs/serve_$port.txt" 2>&1
    ) & pids+=($!)
  done
  for ((i = 0; i < count; i++)); do
    port=$((PORT0 + i)) started=$SECONDS
    until grep -q "triton server ready" "$logs/serve_$port.txt" 2>/dev/null; do
      if ! kill -0 "${pids[$i]}" 2>/dev/null || ((SECONDS - started > 600)); then
        echo "the server on port $port did not start:"; tail -15 "$logs/serve_$port.txt"; exit 1
      fi
      sleep 1
    done
    grep -h "triton server ready" "$logs/serve_$port.txt" | cut -c1-200
  done
}
servers() { seq -s, -f "127.0.0.1:%g" "$PORT0" $((PORT0 + $1 - 1)); }  # the first $1 servers
rate_of() {  # samples/s of the run $1 (0 where it is not there)
  "$PYTHON" -c "import json, sys; r = json.load(open(sys.argv[1])); print(int(r.get('samples_per_second') or r.get('completed_samples_per_second') or 0))" \
    "$results/$1.json" 2>/dev/null || echo 0
}
triton_offline() {  # $1 servers: a short probe for the rate, then the run expecting 5/4 of it (the
  # 3 s probe came out slower than the run: at the probe's own rate the query ended before the
  # minimum duration on two H100s, and the run was INVALID)
  local label="triton_offline_s$1" probe
  harness "probe_$label" --scenario Offline --batch_size "$OFFLINE_BATCH" --min_duration_ms 3000 \
    --offline_expected_qps $((OFFLINE_QPS / 10)) --triton_servers "$(servers "$1")" "${triton_run[@]}" \
    >/dev/null
  probe=$(rate_of "probe_$label"); rm -f "$results/probe_$label.json"
  harness "$label" --scenario Offline --batch_size "$OFFLINE_BATCH" --min_duration_ms "$ms" \
    --offline_expected_qps $((probe > 0 ? probe * 5 / 4 : 1000)) --triton_servers "$(servers "$1")" \
    "${triton_run[@]}"
}
table() {
  tar czf "$out/triton_results.tgz" -C "$results" .
  "$PYTHON" -m mlperf_harness.triton.device_table "$results"
}

phase_steps() {  # $1: one phase, as run_phase runs it (device_lib.sh: in a subshell of its own;
  # a command that fails ends the phase, and the phases after it still run)
  local phase="$1"
  case "$phase" in
  build)
    gpu_build benchmarks/resnet50/device/gpu_scenarios.sh
    ;;
  check)
    unpack_triton
    PYTHONPATH="$server_path" "$PYTHON" -c "
import numpy, cv2, pytriton, tritonclient
line = f'servers: numpy {numpy.__version__}, opencv {cv2.__version__}, pytriton {pytriton.__version__}'
if '$BACKEND' == 'torch':
    import torch
    total = torch.from_numpy(numpy.ones(8, dtype=numpy.float32)).cuda().sum().item()
    assert total == 8.0, total
    line += f', torch {torch.__version__} on {torch.cuda.get_device_name(0)}: numpy <-> CUDA ok'
print(line)"
    "$PYTHON" -c "
import numpy, tritonclient.grpc, grpc, google.protobuf as p
print(f'client: numpy {numpy.__version__}, grpcio {grpc.__version__}, protobuf {p.__version__}')"
    ;;
  offline)
    unpack_triton
    CUDA_VISIBLE_DEVICES=0 harness direct_offline_g1 --scenario Offline --batch_size "$OFFLINE_BATCH" \
      "${device_run[@]}" --min_duration_ms "$ms" --offline_expected_qps "$OFFLINE_QPS"
    CUDA_VISIBLE_DEVICES=0 harness direct_offline_host_g1 --scenario Offline --batch_size "$OFFLINE_BATCH" \
      "${host_run[@]}" --min_duration_ms "$ms" --offline_expected_qps "$OFFLINE_QPS"
    if [ "$gpus" -gt 1 ]; then
      harness "direct_offline_g$gpus" --scenario Offline --batch_size "$OFFLINE_BATCH" \
        "${device_run[@]}" --min_duration_ms "$ms" --offline_expected_qps $((gpus * OFFLINE_QPS))
    fi
    # Offline servers: batch $OFFLINE_BATCH, no queue delay (requests arrive full).
    start_servers "$SERVERS" --scenario Offline --batch_size "$OFFLINE_BATCH"
    triton_offline 1
    if [ "$SERVERS" -gt 1 ]; then triton_offline "$SERVERS"; fi
    stop_servers
    ;;
  server)
    unpack_triton
    n=$((gpus > 0 ? gpus : 1))
    harness "direct_server_g${n}_q$((n * SERVER_QPS))" --scenario Server \
      --batch_size "$SERVER_BATCH" --server_batch_timeout_us "$SERVER_TIMEOUT_US" "${device_run[@]}" \
      --server_target_qps $((n * SERVER_QPS)) --min_duration_ms "$ms" --min_query_count 1000
    offline=$(rate_of "triton_offline_s$SERVERS")
    qps="${TRITON_SERVER_QPS:-$((n * SERVER_QPS * 85 / 100))}"
    if [ -z "${TRITON_SERVER_QPS:-}" ] && [ "$offline" -gt 0 ] && [ $((offline * 9 / 10)) -lt "$qps" ]; then
      qps=$((offline * 9 / 10))
    fi
    # Server servers: the Server batch's engines; the client batches, so no queue delay there.
    start_servers "$SERVERS" --scenario Server --batch_size "$SERVER_BATCH" --server_batch_timeout_us 0
    harness "triton_server_s${SERVERS}_q$qps" --scenario Server --batch_size "$SERVER_BATCH" \
      --server_batch_timeout_us "$SERVER_TIMEOUT_US" --server_target_qps "$qps" \
      --min_duration_ms "$ms" --min_query_count 1000 --triton_servers "$(servers "$SERVERS")" \
      "${triton_run[@]}"
    stop_servers
    ;;
  failover)
    unpack_triton
    offline=$(rate_of triton_offline_s1)
    soak=(--servers 2 --gpus "$gpus" --scenarios Offline --seconds 10 --first_kill_s 3
      --kill_every_s 600 --down_s 1 --batch_size "$OFFLINE_BATCH"
      --offline_expected_qps "${FAILOVER_QPS:-$((offline > 0 ? offline : 2000))}"
      --server_threads 0 --work_dir "$logs/failover")
    rm -rf "$logs/failover"
    # On the servers' path (numpy 1.26): the soak's runs and servers inherit it.
    PYTHONPATH="$server_path" "$PYTHON" -m mlperf_harness.triton.failover_soak "${soak[@]}" -- \
      "${common[@]}" "${streams[@]}" --triton_samples "$TRITON_SAMPLES" 2>"$logs/failover.txt" || tail -20 "$logs/failover.txt"
    cp "$logs/failover/soak.json" "$results/failover_soak.json" 2>/dev/null || true
    ;;
  table) ;;
  *) echo "unknown phase $phase"; exit 2 ;;
  esac
}

for phase in "${phases[@]}"; do
  run_phase "$phase" phase_steps "$phase"
done
table
phases_summary
