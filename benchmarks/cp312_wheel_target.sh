# pip's flags for wheels that install on a lent GPU machine: CPython 3.12 on Linux x86-64, binary
# only. Sourced by device_wheels.sh and triton_bundle.sh; sets the array `target`.
target=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none)
# pip matches a manylinux_2_N tag exactly: name each the wheels use (glibc 2.35 at most: Ubuntu 22.04).
for tag in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 \
  manylinux_2_17 manylinux2014 manylinux1; do
  target+=(--platform "${tag}_x86_64")
done
target+=(--platform any)
