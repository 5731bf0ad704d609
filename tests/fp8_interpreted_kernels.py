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


def check_pointwise() -> bool:
    """The TMA GEMM against the pointer kernel (bit for bit, both outputs) and, in fp16, against
    the reference, with partial row and column tiles, each residual form, with and without
    prefetch, one program a tile and persistent."""
    good = True
    for residual_form in (None, "e4m3", "fp16"):
        x8 = e4m3((2, 64, 7, 9))  # M = 126: a partial row tile
        w8 = weights((96, 1, 1, 64))  # K = 96: a partial column tile
        alpha, bias = torch.rand(96) * (4.0 / 64), torch.randn(96) * 0.1
        residual = None
        if residual_form is not None:
            residual = torch.randn(2, 96, 7, 9).half().contiguous(memory_format=torch.channels_last)
            if residual_form == "e4m3":
                residual = ops.quantize(residual, 64.0)
        flags = (1, [0, 0, 0, 0], True, 1.0, 1 / 64.0, 16.0, True, True)
        pointer = KernelConfig(32, 64, 32, 4, 2)
        ref16, _ = ops.conv_reference(x8, w8, alpha, bias, residual, *flags, pointer.as_list())
        want16, want8 = conv_launch(x8, w8, alpha, bias, residual, *flags, pointer.as_list())
        # One program a tile, with and without prefetch, and persistent: a program per SM here
        # (ops._multiprocessors: 1 on the CPU) loops over all 4 tiles, 2 per SM over 2 each.
        for prefetch, persistent in ((0, 0), (1, 0), (0, 1), (0, 2)):
            tma = KernelConfig(64, 64, 32, 4, 2, prefetch=prefetch, tma=1, persistent=persistent)
            y16, y8 = conv_launch(x8, w8, alpha, bias, residual, *flags, tma.as_list())
            same = torch.equal(y16, want16) and torch.equal(y8, want8)
            exact = torch.equal(y16, ref16)
            print(
                f"pointwise tma, residual {residual_form}, prefetch {prefetch}, "
                f"persistent {persistent}: "
                f"{'equal' if same else 'DIFFER'} to the pointer kernel, fp16 "
                f"{'equal' if exact else 'DIFFER'} to the reference"
            )
            good &= same and exact
    return good


def check_spatial() -> bool:
    """The TMA implicit GEMM against the pointer kernel and the reference: 3x3 of stride 1 and
    padding 1 (blocks that overhang the image in both directions, taps that read the padding, each
    residual form), and 1x1 of stride 2."""
    good = True
    for residual_form in (None, "e4m3", "fp16"):
        x8 = e4m3((2, 64, 7, 9))
        w8 = weights((96, 3, 3, 64))  # K = 96: a partial column tile
        alpha, bias = torch.rand(96) * (4.0 / (9 * 64)), torch.randn(96) * 0.1
        residual = None
        if residual_form is not None:
            residual = torch.randn(2, 96, 7, 9).half().contiguous(memory_format=torch.channels_last)
            if residual_form == "e4m3":
                residual = ops.quantize(residual, 64.0)
        flags = (1, [1, 1, 1, 1], True, 1.0, 1 / 64.0, 16.0, True, True)
        pointer = KernelConfig(32, 64, 32, 4, 2)
        ref16, _ = ops.conv_reference(x8, w8, alpha, bias, residual, *flags, pointer.as_list())
        want16, want8 = conv_launch(x8, w8, alpha, bias, residual, *flags, pointer.as_list())
        # Blocks of 4 x 8 and 2 x 16 pixels: 7 x 9 images overhang both.
        for tile_w in (8, 16):
            spatial = KernelConfig(32, 64, 32, 4, 2, tma=1, tile_w=tile_w)
            y16, y8 = conv_launch(x8, w8, alpha, bias, residual, *flags, spatial.as_list())
            same = torch.equal(y16, want16) and torch.equal(y8, want8)
            exact = torch.equal(y16, ref16)
            print(
                f"spatial tma 3x3, residual {residual_form}, block {32 // tile_w}x{tile_w}: "
                f"{'equal' if same else 'DIFFER'} to the pointer kernel, fp16 "
                f"{'equal' if exact else 'DIFFER'} to the reference"
            )
            good &= same and exact
    # A strided 1x1 layer (a projection): the same kernel on every other pixel of its input.
    x8 = e4m3((2, 64, 9, 7))
    w8 = weights((96, 1, 1, 64))
    alpha, bias = torch.rand(96) * (4.0 / 64), torch.randn(96) * 0.1
    flags = (2, [0, 0, 0, 0], False, 1.0, 1.0, 16.0, True, True)
    pointer = KernelConfig(32, 64, 32, 4, 2)
    ref16, _ = ops.conv_reference(x8, w8, alpha, bias, None, *flags, pointer.as_list())
    want16, want8 = conv_launch(x8, w8, alpha, bias, None, *flags, pointer.as_list())
    spatial = KernelConfig(32, 64, 32, 4, 2, tma=1, tile_w=8)
    y16, y8 = conv_launch(x8, w8, alpha, bias, None, *flags, spatial.as_list())
    same = torch.equal(y16, want16) and torch.equal(y8, want8)
    exact = torch.equal(y16, ref16)
    print(
        f"spatial tma 1x1 stride 2, block 4x8: {'equal' if same else 'DIFFER'} to the pointer "
        f"kernel, fp16 {'equal' if exact else 'DIFFER'} to the reference"
    )
    return good and same and exact


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
