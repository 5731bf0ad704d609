"""How DLRM-v2's FP8 dense part quantizes each product's input (e4m3 with one scale per row, as
engines/fp8_linear.row_quantized does), in as few passes as the model allows: the previous
product's bias and ReLU are taken in the same pass (engines/fp8_row_kernels.quantized), and each
cross layer's update writes its output in fp16 and in e4m3 at once (update_quant.py).

One arithmetic, two ways: Triton kernels where Triton runs (a GPU, or the CPU under
TRITON_INTERPRET=1, the tests'), else torch (the reference: the CPU's accuracy figures, and what
the kernels are checked against bit for bit). Torch in eager kernels took about 11 ms of a real-size
batch on an H200 where the FP8 products saved 1.3 (docs/dlrm-v2.md).

Imports torch (passed in): GPU hosts and the development environment only.
"""

from __future__ import annotations

from typing import Any

from mlperf_harness.engines.fp8_linear import row_quantized
from mlperf_harness.engines.torch_aot.torch_host import triton_runs_on
from mlperf_harness.errors import HarnessError


def reference_quantized(
    torch: Any, x: Any, bias: Any = None, relu: bool = False
) -> tuple[Any, Any]:
    """(e4m3 [rows, width], float32 scales [rows, 1]) of relu(x + bias), summed in float32."""
    y = x.float()
    if bias is not None:
        y = y + bias.float()
    if relu:
        y = torch.relu(y)
    return row_quantized(torch, y)


def reference_update_quantized(
    torch: Any, x: Any, x0: Any, c: Any, bias: Any
) -> tuple[Any, Any, Any]:
    """(x' fp16, its e4m3 bytes, float32 row scales) for x' = x + x0 * (c + bias): each operation in
    float32, x' rounded to fp16 once, then quantized."""
    updated = (x.float() + x0.float() * (c.float() + bias.float())).half()
    return (updated, *row_quantized(torch, updated))


class RowQuantizer:
    """The quantizations of one device's FP8 dense part: kernels or torch, as the device allows."""

    def __init__(self, torch: Any, device: Any, kernels: bool | None = None) -> None:
        """`kernels`: the Triton kernels (True) or torch (False); None: the kernels where Triton
        runs for `device`."""
        self._torch = torch
        self.kernels = triton_runs_on(device) if kernels is None else kernels
        if self.kernels:
            try:
                from mlperf_harness.benchmarks.dlrm_v2 import update_quant
                from mlperf_harness.engines import fp8_row_kernels
            except ImportError as error:
                raise HarnessError(
                    f"dlrm-v2: the FP8 dense part's kernels need triton, which is missing ({error})"
                ) from None
            self._rows, self._update = fp8_row_kernels.quantized, update_quant.update_quantized
        else:
            self._rows, self._update = reference_quantized, reference_update_quantized

    def quantized(self, x: Any, bias: Any = None, relu: bool = False) -> tuple[Any, Any]:
        """relu(x + bias) (each where given) quantized row-wise."""
        return self._rows(self._torch, x, bias, relu)

    def update_quantized(self, x: Any, x0: Any, c: Any, bias: Any) -> tuple[Any, Any, Any]:
        """A cross layer's update x + x0 * (c + bias) in fp16, and quantized row-wise."""
        return self._update(self._torch, x, x0, c, bias)
