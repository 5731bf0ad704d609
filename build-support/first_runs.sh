#!/usr/bin/env bash
# Runs the first commands a user runs, with no flags, one after another, and prints a table of
# their verdicts: every ResNet-50 scenario target, BERT's Offline and SingleStream, 3D-UNet's
# Offline, and ResNet-50 Offline through a local Triton server. Each must be VALID on any machine
# (docs/rates.md).
#
#   build-support/first_runs.sh                # as the machine is
#   build-support/first_runs.sh --taskset 0    # on CPU 0 alone: a machine half as fast
#   build-support/first_runs.sh --taskset 0 benchmarks/resnet50:offline   # only the targets named
#
# The table goes to standard output; each run's output to build/first_runs/<n>.log.
set -uo pipefail
cd "$(dirname "$0")/.."

pin=()
if [[ ${1:-} == --taskset ]]; then
  [[ -n ${2:-} ]] || { echo "first_runs.sh: --taskset needs a CPU list, e.g. 0" >&2; exit 2; }
  pin=(taskset -c "$2")
  shift 2
fi
for target in "$@"; do
  [[ $target == benchmarks/*:* ]] || { echo "first_runs.sh: not a run target: $target" >&2; exit 2; }
done

runs=(
  "benchmarks/resnet50:offline"
  "benchmarks/resnet50:server"
  "benchmarks/resnet50:singlestream"
  "benchmarks/resnet50:multistream"
  "benchmarks/bert:offline"
  "benchmarks/bert:singlestream"
  "benchmarks/3d-unet:offline"
  "benchmarks/resnet50:offline -- --harness triton"
)
[[ $# -eq 0 ]] || runs=("$@")
logs=build/first_runs
mkdir -p "$logs"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) usable cores${pin:+ (${pin[*]})}"
printf '%-52s %-8s %-44s %s\n' "command" "verdict" "figure" "seconds"
failed=0
for i in "${!runs[@]}"; do
  log="$logs/$i.log"
  start=$(date +%s)
  # shellcheck disable=SC2086  # each entry is a target and its flags
  "${pin[@]}" ./pants run ${runs[$i]} >"$log" 2>&1
  status=$?
  seconds=$(($(date +%s) - start))
  verdict=$(sed -n 's/^  result: *\([A-Z/a-z()]*\).*/\1/p' "$log" | tail -1)
  figure=$(grep -E '^  (samples/s|completed samples/s|latency):' "$log" | head -1 | sed 's/^ *//')
  [[ $status -eq 0 && $verdict == VALID ]] || failed=1
  printf '%-52s %-8s %-44s %s\n' "${runs[$i]}" "${verdict:-exit $status}" "${figure:0:44}" "$seconds"
done
exit $failed
