"""The FP8 convolution kernel on the layer forms RetinaNet's plan adds (heads of 36 and 72 output
channels, the FPN's fp16 residual, 32-channel inputs, a strided 3x3 quantizing fp16 as it loads),
under Triton's interpreter against the CPU reference (fp8_retinanet_interpreted_kernels.py, in a
process of its own with TRITON_INTERPRET=1). Skipped where torch or triton is not installed (CI)."""

from __future__ import annotations

from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton


def test_retinanet_s_layer_forms_compute_what_the_reference_does() -> None:
    import fp8_retinanet_interpreted_kernels

    stdout = run_interpreted(fp8_retinanet_interpreted_kernels.__file__, timeout=300)
    # 3 tilings on each 64-channel layer (2 narrow, 1 base), the 2 narrow ones on the 32-channel.
    assert stdout.count("fp16 equal to the reference, e4m3 equal across tilings") == 14
    assert "DIFFER" not in stdout
