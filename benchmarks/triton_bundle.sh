#!/usr/bin/env bash
# The Triton harness's packages for a lent GPU machine (CPython 3.12, torch and numpy 2 there, no
# PyTriton, no network), for benchmarks/resnet50/device/triton.sh. benchmarks/device_wheels.sh runs
# it (with every other wheel the device scripts carry), only when the bundle is missing or stale;
# by hand, on the build machine (pip and the package index reachable), from the repo root:
#
#   bash benchmarks/triton_bundle.sh           # -> .whl/triton/triton-cp312.tar.xz (ignored by git)
#
# TRITON_BUNDLE_DIR: another folder than .whl/triton (device_wheels.sh's, renamed into place whole).
# nvidia-pytriton (the tritonserver binary and its Python backend), tritonclient[grpc] and their
# whole closure, at the project's pins (3rdparty/python/constraints.txt: numpy 1.26.4, which
# PyTriton needs), as cp312 manylinux x86-64 wheels, installed here into a target directory for
# that platform (pip installs wheels of another platform by unpacking them) and packed as one
# tar.xz: the PyTriton wheel alone is 55 MB and a device call carries 64 MiB in all. Unpacked there
# it holds site/ (every package but numpy) and numpy1/ (numpy 1.26.4 alone: the server puts it
# before the host's numpy 2, the client and the direct harness keep the host's). Pruned for a
# CPython 3.12 host: the Python backend stubs of other versions and the libpython 3.13 that only
# the 3.13 stub links.
set -euo pipefail
python="${PYTHON:-python3}"
out="${TRITON_BUNDLE_DIR:-.whl/triton}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/cp312_wheel_target.sh"  # sets `target`
wanted=(nvidia-pytriton "tritonclient[grpc]")
constraints=3rdparty/python/constraints.txt

"$python" -m pip download -q "${target[@]}" -c "$constraints" -d "$work/wheels" "${wanted[@]}"
"$python" -m pip install -q --no-index --find-links "$work/wheels" --no-compile "${target[@]}" \
  -c "$constraints" --target "$work/site" "${wanted[@]}"
mkdir "$work/numpy1"
mv "$work/site"/numpy "$work/site"/numpy-*.dist-info "$work/site"/numpy.libs "$work/numpy1/"
stubs="$work/site/pytriton/tritonserver/python_backend_stubs"
find "$stubs" -mindepth 1 -maxdepth 1 ! -name 3.12 -exec rm -rf {} +
rm -f "$work/site"/nvidia_pytriton.libs/libpython3-*.13.so*
rm -rf "$work/site/bin"
find "$work" -name __pycache__ -prune -exec rm -rf {} +

mkdir -p "$out"
rm -f "$out"/triton-cp312.tar.xz
XZ_OPT="-9 -T0" tar -C "$work" -cJf "$out/triton-cp312.tar.xz.part" site numpy1
mv "$out/triton-cp312.tar.xz.part" "$out/triton-cp312.tar.xz"
(cd "$work/wheels" && ls -1) >"$out/wheels.txt"
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
wheels=$(du -cb "$work"/wheels/*.whl | tail -1 | cut -f1)
unpacked=$(du -sb "$work/site" "$work/numpy1" | awk '{s += $1} END {print s}')
packed=$(stat -c %s "$out/triton-cp312.tar.xz")
echo "wheels: $(ls "$work"/wheels/*.whl | wc -l) files, $(mib "$wheels") ($out/wheels.txt)"
echo "installed and pruned: $(mib "$unpacked"); packed: $out/triton-cp312.tar.xz, $(mib "$packed")"
