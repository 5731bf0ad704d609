"""Run under TRITON_INTERPRET=1 by test_fp8_kernels_interpreted.py (a process of its own: Triton
reads that variable when the kernels are defined): the FP8 engine's Triton kernels on the CPU,
through the same launch code the GPU uses, against each other and their CPU references. Prints one
line per check and exits non-zero when one fails."""

from __future__ import annotations

import sys
from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8 import ops
from mlperf_harness.engines.torch_fp8.ops import KernelConfig

# A triton_op called with CPU tensors runs its CPU reference; the launch code itself (the decorated
# function) is what runs the interpreted kernel on them.
conv_launch: Any = ops.conv._init_fn
input_pass_launch: Any = ops.nhwc_half._init_fn


def e4m3(shape: tuple[int, ...], scale: float = 2.0) -> torch.Tensor:
    """An activation: NCHW in shape, channels-last in memory, as the engine's are."""
    return ops.as_bits((torch.randn(*shape) * scale).contiguous(memory_format=torch.channels_last))


def weights(shape: tuple[int, ...]) -> torch.Tensor:
    """[K, R, S, C] e4m3 weights, contiguous as the engine holds them (module.py)."""
    return ops.as_bits(torch.randn(*shape))


POINTER = KernelConfig(32, 64, 32, 4, 2)


def compare(
    label: str,
    kernel: int,
    stride: int,
    pad: int,
    residual_form: str | None,
    forms: dict[str, KernelConfig],
) -> bool:
    """One layer (2 images of 7 x 9 pixels, 64 -> 96 channels: partial row and column tiles) run by
    each TMA form in `forms`, against the pointer kernel (bit for bit, both outputs) and the CPU
    reference (fp16); prints a line per form."""
    x8 = e4m3((2, 64, 7, 9))
    w8 = weights((96, kernel, kernel, 64))
    alpha = torch.rand(96) * (4.0 / (kernel * kernel * 64))
    bias = torch.randn(96) * 0.1
    residual = None
    if residual_form is not None:
        shape = ops.output_shape(x8.shape, w8.shape, stride, [pad] * 4)
        residual = torch.randn(shape).half().contiguous(memory_format=torch.channels_last)
        if residual_form == "e4m3":
            residual = ops.quantize(residual, 64.0)
    flags = (stride, [pad] * 4, True, 1.0, 1 / 64.0, 16.0, True, True)
    ref16, _ = ops.conv_reference(x8, w8, alpha, bias, residual, *flags, POINTER.as_list())
    want16, want8 = conv_launch(x8, w8, alpha, bias, residual, *flags, POINTER.as_list())
    good = True
    for name, tiles in forms.items():
        y16, y8 = conv_launch(x8, w8, alpha, bias, residual, *flags, tiles.as_list())
        same = torch.equal(y16, want16) and torch.equal(y8, want8)
        exact = torch.equal(y16, ref16)
        print(
            f"{label}, residual {residual_form}, {name}: {'equal' if same else 'DIFFER'} to the "
            f"pointer kernel, fp16 {'equal' if exact else 'DIFFER'} to the reference"
        )
        good &= same and exact
    return good


def check_pointwise() -> bool:
    """The TMA GEMM with and without prefetch, one program a tile and persistent: a program per SM
    (ops._multiprocessors: 1 on the CPU) loops over all 4 tiles of 64 x 64, 2 per SM over 2 each."""
    forms = {
        f"prefetch {prefetch}, persistent {persistent}": KernelConfig(
            64, 64, 32, 4, 2, prefetch=prefetch, tma=1, persistent=persistent
        )
        for prefetch, persistent in ((0, 0), (1, 0), (0, 1), (0, 2))
    }
    return all([compare("pointwise tma", 1, 1, 0, form, forms) for form in (None, "e4m3", "fp16")])


def check_spatial() -> bool:
    """The TMA implicit GEMM: 3x3 of stride 1 and padding 1 in blocks of 4 x 8 and 2 x 16 pixels
    (7 x 9 images overhang both; taps read the padding), and 1x1 of stride 2 (a projection)."""
    forms = {
        f"block {32 // tile_w}x{tile_w}": KernelConfig(32, 64, 32, 4, 2, tma=1, tile_w=tile_w)
        for tile_w in (8, 16)
    }
    three = [compare("spatial tma 3x3", 3, 1, 1, form, forms) for form in (None, "e4m3", "fp16")]
    return all([*three, compare("spatial tma 1x1 stride 2", 1, 2, 0, None, forms)])


def check_input_pass() -> bool:
    """The input pass, plain and gathering rows of a larger array, against its reference."""
    samples = torch.randn(5, 3, 6, 7) * 100
    rows = torch.tensor([4, 0, 4], dtype=torch.int64)
    plain = torch.equal(input_pass_launch(samples, 4), ops.nhwc_half_reference(samples, 4))
    gathered = input_pass_launch(samples, 4, rows)
    same = torch.equal(gathered, ops.nhwc_half_reference(samples, 4, rows))
    same &= torch.equal(gathered, ops.nhwc_half_reference(samples[rows], 4))
    print(
        f"input pass: plain {'equal' if plain else 'DIFFER'}, gathering "
        f"{'equal' if same else 'DIFFER'} to the reference"
    )
    return bool(plain and same)


if __name__ == "__main__":
    torch.manual_seed(0)
    results = [check_pointwise(), check_spatial(), check_input_pass()]
    sys.exit(0 if all(results) else 1)
