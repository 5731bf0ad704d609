"""The FP8 engine's Triton kernels on the CPU, under Triton's interpreter: the TMA GEMM of the 1x1
layers and the TMA implicit GEMM of the 3x3 layers against the pointer kernel and the CPU reference
(output channels no multiple of a tile included, as RetinaNet's class logits; the TMA GEMM on an
fp16 input too), the input pass plain and gathering, and the fused stem against its reference and the unfused path
(fp8_interpreted_kernels.py, in a process of its own with TRITON_INTERPRET=1). Skipped where torch or
triton is not installed (CI); device_check kernels runs the same forms compiled, on a GPU host."""

from __future__ import annotations

from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton


def test_the_kernels_compute_what_their_references_do() -> None:
    import fp8_interpreted_kernels

    stdout = run_interpreted(fp8_interpreted_kernels.__file__, timeout=300)
    assert stdout.count("equal") == 89 and "DIFFER" not in stdout
