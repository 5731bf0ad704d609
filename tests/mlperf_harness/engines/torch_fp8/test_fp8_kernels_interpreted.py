"""The FP8 engine's Triton kernels on the CPU, under Triton's interpreter: the TMA GEMM of the 1x1
layers and the TMA implicit GEMM of the 3x3 layers against the pointer kernel and the CPU reference,
the input pass plain and gathering, and the fused stem against its reference and the unfused path
(fp8_interpreted_kernels.py, in a process of its own with TRITON_INTERPRET=1). Skipped where torch or
triton is not installed (CI); device_check kernels runs the same forms compiled, on a GPU host."""

from __future__ import annotations

import os
import subprocess
import sys

from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton


def test_the_kernels_compute_what_their_references_do() -> None:
    import fp8_interpreted_kernels

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, fp8_interpreted_kernels.__file__],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("equal") == 71 and "DIFFER" not in result.stdout
