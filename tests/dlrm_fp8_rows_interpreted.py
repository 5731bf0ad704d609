"""Run under TRITON_INTERPRET=1 by test_fp8_rows.py (a process of its own: Triton reads that
variable when the kernels are defined): DLRM-v2's FP8 dense part's quantizations on the CPU, the
Triton kernels (engines/fp8_row_kernels.quantized, update_quant.update_quantized) against their
torch reference (fp8_rows.py), bit for bit: the e4m3 bytes, the row scales and the updated fp16
rows; and the dense part's probabilities with the kernels against those with the reference. The
interpreter's float casts are made the GPU's (triton_interpreter.exact_float_casts). Prints one
line per check and exits non-zero when one fails."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
from triton_interpreter import exact_float_casts

from mlperf_harness.benchmarks.dlrm_v2 import fp8_rows, update_quant
from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers
from mlperf_harness.benchmarks.dlrm_v2.topology import REAL
from mlperf_harness.engines import fp8_row_kernels

# widths: the one-pass quantization's many rows a program (48: 32 of them; 5 here, the rest
# masked) and one (1,000, not a power of two), the real cross network's 3,456, and one past
# fp8_row_kernels.ONE_PASS_WIDTH (the chunked quantization); the update is chunked at every width
WIDTHS = (48, 1000, 3456, 9000)


def same(label: str, got: tuple[Any, ...], want: tuple[Any, ...]) -> bool:
    """Every tensor equal bit for bit (e4m3 compared as bytes)."""

    def bits(t: Any) -> Any:
        return t.view(torch.uint8) if t.dtype == torch.float8_e4m3fn else t

    ok = all(torch.equal(bits(g), bits(w)) for g, w in zip(got, want, strict=True))
    print(f"{label}: {'equal' if ok else 'DIFFER'}")
    return ok


def rows_of(width: int, generator: Any, wider: bool) -> Any:
    """fp16 [5, width] at activation scales, an outlier and an all-zero row among them; with
    `wider`, a column slice of wider rows (row stride past the width)."""
    x = (torch.randn(5, width + (7 if wider else 0), generator=generator) * 3).half()
    x = x[:, 3 : 3 + width] if wider else x
    x[1, width // 2] = 300.0
    x[2] = 0.0
    return x


def quantizations() -> bool:
    ok = True
    generator = torch.Generator().manual_seed(0)
    for width in WIDTHS:
        bias = (torch.randn(width, generator=generator)).half()
        for wider in (False, True):
            x = rows_of(width, generator, wider)
            for b, relu in ((None, False), (bias, False), (bias, True), (None, True)):
                label = (
                    f"quantized width {width}{' (a column slice)' if wider else ''}"
                    f"{', bias' if b is not None else ''}{', relu' if relu else ''}"
                )
                ok &= same(
                    label,
                    fp8_row_kernels.quantized(torch, x, b, relu),
                    fp8_rows.reference_quantized(torch, x, b, relu),
                )
            x0 = rows_of(width, generator, wider)
            c = (torch.randn(5, width, generator=generator) * 0.5).half()  # x0 * c stays finite
            ok &= same(
                f"update width {width}{' (x and x0 column slices)' if wider else ''}",
                update_quant.update_quantized(torch, x, x0, c, bias),
                fp8_rows.reference_update_quantized(torch, x, x0, c, bias),
            )
    return ok


def dense_part() -> bool:
    """The dense part in fp8 at 1/8 of the real widths: the probabilities with the kernels equal
    those with the torch reference."""
    widths = REAL.reduced(8)
    layers = DenseLayers(initial_weights(widths, (), 3), widths, torch.device("cpu"), "fp8")
    assert layers.row_quantizer is not None and layers.row_quantizer.kernels
    rng = np.random.default_rng(0)
    dense = torch.from_numpy(rng.normal(0, 1, (24, 13)).astype(np.float32))
    pooled = torch.from_numpy(rng.normal(0, 0.3, (24, 26 * widths.embedding)).astype(np.float32))
    got = layers.probability(dense, pooled)
    layers.row_quantizer = fp8_rows.RowQuantizer(torch, torch.device("cpu"), kernels=False)
    want = layers.probability(dense, pooled)
    return same("dense part fp8, kernels against the reference", (got,), (want,))


if __name__ == "__main__":
    exact_float_casts()
    results = [quantizations(), dense_part()]
    sys.exit(0 if all(results) else 1)
