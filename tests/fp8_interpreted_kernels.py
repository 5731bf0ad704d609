"""Run under TRITON_INTERPRET=1 by test_fp8_kernels_interpreted.py (a process of its own: Triton
reads that variable when the kernels are defined): the FP8 engine's Triton kernels on the CPU,
through the same launch code the GPU uses, against each other and their CPU references. Prints one
line per check and exits non-zero when one fails. (Programs run one after another here: the fused
stem's barriers and scratch slots are checked for their indexing only, not for races.)"""

from __future__ import annotations

import sys
from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
import torch.nn.functional as F  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8 import ops
from mlperf_harness.engines.torch_fp8.ops import KernelConfig

# A triton_op called with CPU tensors runs its CPU reference; the launch code itself (the decorated
# function) is what runs the interpreted kernel on them.
conv_launch: Any = ops.conv._init_fn
input_pass_launch: Any = ops.nhwc_half._init_fn
stem_launch: Any = ops.stem_pool._init_fn
max_pool_launch: Any = ops.max_pool._init_fn


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
    outputs: int = 96,
    store8: bool = True,
    fp16_input: bool = False,
) -> bool:
    """One layer (2 images of 7 x 9 pixels, 64 -> `outputs` channels: partial row and column
    tiles) run by each TMA form in `forms`, against the pointer kernel (bit for bit, both outputs,
    or the fp16 one alone without `store8`) and the CPU reference (fp16); prints a line per form.
    `fp16_input`: the input in fp16 (e4m3 values, quantized as loaded with a scale of 1)."""
    x8 = e4m3((2, 64, 7, 9))
    if fp16_input:
        x8 = ops.from_bits(x8).half().contiguous(memory_format=torch.channels_last)
    w8 = weights((outputs, kernel, kernel, 64))
    alpha = torch.rand(outputs) * (4.0 / (kernel * kernel * 64))
    bias = torch.randn(outputs) * 0.1
    residual = None
    if residual_form is not None:
        shape = ops.output_shape(x8.shape, w8.shape, stride, [pad] * 4)
        residual = torch.randn(shape).half().contiguous(memory_format=torch.channels_last)
        if residual_form == "e4m3":
            residual = ops.quantize(residual, 64.0)
    flags = (stride, [pad] * 4, True, 1.0, 1 / 64.0, 16.0, True, store8)
    ref16, _ = ops.conv_reference(x8, w8, alpha, bias, residual, *flags, POINTER.as_list())
    want16, want8 = conv_launch(x8, w8, alpha, bias, residual, *flags, POINTER.as_list())
    good = True
    for name, tiles in forms.items():
        y16, y8 = conv_launch(x8, w8, alpha, bias, residual, *flags, tiles.as_list())
        same = torch.equal(y16, want16) and torch.equal(y8, want8)
        exact = torch.equal(y16, ref16)
        print(
            f"{label}, {outputs} channels{', fp16 input' if fp16_input else ''}, residual "
            f"{residual_form}, {name}: "
            f"{'equal' if same else 'DIFFER'} to the "
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
    e4m3_input = [compare("pointwise tma", 1, 1, 0, form, forms) for form in (None, "e4m3", "fp16")]
    # An fp16 input quantized as it loads (A_FP16: a 1x1 after a grouped fp16 convolution).
    fp16_input = [compare("pointwise tma", 1, 1, 0, "e4m3", forms, fp16_input=True)]
    return all([*e4m3_input, *fp16_input])


def check_spatial() -> bool:
    """The TMA implicit GEMM: 3x3 of stride 1 and padding 1 in blocks of 4 x 8 and 2 x 16 pixels
    (7 x 9 images overhang both; taps read the padding), and 1x1 of stride 2 (a projection); one
    program a tile, and persistent: the 16 tiles of 4 x 8 pixels by 64 channels looped over by one
    program (a program per SM, ops._multiprocessors: 1 on the CPU) and by two."""
    forms = {
        f"block {32 // tile_w}x{tile_w}, persistent {persistent}": KernelConfig(
            32, 64, 32, 4, 2, tma=1, persistent=persistent, tile_w=tile_w
        )
        for tile_w, persistent in ((8, 0), (16, 0), (8, 1), (8, 2))
    }
    three = [compare("spatial tma 3x3", 3, 1, 1, form, forms) for form in (None, "e4m3", "fp16")]
    return all([*three, compare("spatial tma 1x1 stride 2", 1, 2, 0, None, forms)])


def check_unaligned_columns() -> bool:
    """Output channels no multiple of a tile, in rows TMA can address (plan.tma_rows_aligned):
    RetinaNet's class logits' form (9 x classes channels stored in fp16; 72 here: rows of 144
    bytes, two tiles of 64 channels of which the second overhangs) by each TMA kernel, and 80
    channels stored in both forms (e4m3 rows of 80 bytes)."""
    spatial = {
        f"block 4x8, persistent {persistent}": KernelConfig(
            32, 64, 32, 4, 2, tma=1, persistent=persistent, tile_w=8
        )
        for persistent in (0, 1)
    }
    pointwise = {"persistent 0": KernelConfig(64, 64, 32, 4, 2, tma=1)}
    return all(
        [
            compare("spatial tma 3x3", 3, 1, 1, None, spatial, outputs=72, store8=False),
            compare("spatial tma 3x3", 3, 1, 1, "fp16", spatial, outputs=80),
            compare("pointwise tma", 1, 1, 0, None, pointwise, outputs=72, store8=False),
        ]
    )


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


def compare_stem(
    label: str,
    shape: tuple[int, int, int],
    k: int,
    size: int,
    configs: list[ops.StemConfig],
    pool_pads: tuple[int, int, int, int] = (1, 1, 1, 1),
) -> bool:
    """The fused stem (stride 2, padding size // 2, 3x3 max pool of stride 2 padded by `pool_pads`)
    on images of `shape` (N, H, W; 4 channels), in each form of `configs`, against its CPU reference
    and against the engine's unfused path (the convolution, then the max pool kernel adding its
    bias), bit for bit; prints a line per form.

    Every value is exact in e4m3 (0/1 pixels, sparse -1/0/1 weights, integer biases: sums of a few
    units), so no rounding happens anywhere: the interpreter's cast to e4m3 is not the GPU's (it
    rounds ties away from zero, and a value that rounds up into the next power of two lands on the
    power below: 31 becomes 16), so maxima of its casts are not casts of maxima. The GPU's rounding
    is device_check's to compare."""
    n, h, w = shape
    x = torch.randint(0, 2, (n, 4, h, w)).half().contiguous(memory_format=torch.channels_last)
    weights = torch.randint(-1, 2, (k, size, size, 4)) * (torch.rand(k, size, size, 4) < 0.08)
    weights = weights.half()
    bias = torch.randint(-2, 3, (k,)).float()
    pads = [size // 2] * 4
    conv = F.conv2d(x.float(), weights.float().permute(0, 3, 1, 2), None, 2, size // 2)
    assert float((conv + bias.view(1, -1, 1, 1)).abs().max()) <= 16  # integers, exact in e4m3
    conv = conv.half().contiguous(memory_format=torch.channels_last)
    pooling = list(pool_pads)
    _, unfused = max_pool_launch(conv, 3, 2, pooling, True, 1.0, False, bias)
    reference = ops.stem_pool_reference(x, weights, bias, pads, pooling, 1.0, configs[0].as_list())
    good = bool(torch.equal(unfused, reference))
    for config in configs:
        y8 = stem_launch(x, weights, bias, pads, pooling, 1.0, config.as_list())
        same = torch.equal(y8, reference) and torch.equal(y8, unfused)
        print(
            f"stem {label}, {n}x{h}x{w}, {size}x{size} -> {k}, pool pads {pooling}, "
            f"tile {config.tile_p}x{config.tile_q} persistent {config.persistent} "
            f"wide {config.wide}: {'equal' if same else 'DIFFER'} to the reference and the "
            f"unfused path"
        )
        good &= same
    return good


def check_stem() -> bool:
    """The fused stem: tiles of 7 x 8 and 3 x 8 pooled pixels (a program per SM, ops._multiprocessors:
    1 on the CPU, loops over every tile, reusing its scratch slot; 2 per SM over half each), 16-byte
    (wide) and 8-byte copies; 36 x 36 images (9 x 9 pooled: partial tiles at the bottom and
    right), 32 x 32 (8 x 8), an odd width (35 x 33: masks by column even when wide), the test
    graph's 3x3 stem of 32 channels, one 224 x 224 image as ResNet-50's, and TensorFlow's SAME
    pooling (padded after the last row and column only, as tf2onnx writes it)."""
    tiles = [
        ops.StemConfig(7, 8, 4, 3, 1, wide=1),
        ops.StemConfig(7, 8, 4, 3, 2, wide=0),
        ops.StemConfig(3, 8, 4, 3, 2, wide=1),
    ]
    return all(
        [
            compare_stem("7x7", (2, 36, 36), 64, 7, tiles),
            compare_stem("7x7", (2, 32, 32), 64, 7, tiles[:2]),
            compare_stem("7x7, odd width", (1, 35, 33), 64, 7, tiles[:1]),
            compare_stem("3x3", (2, 36, 36), 32, 3, tiles),
            compare_stem("7x7, ResNet-50's", (1, 224, 224), 64, 7, tiles[:1]),
            compare_stem("7x7, SAME pool", (2, 36, 36), 64, 7, tiles, (0, 0, 1, 1)),
        ]
    )


if __name__ == "__main__":
    torch.manual_seed(0)
    results = [
        check_pointwise(),
        check_spatial(),
        check_unaligned_columns(),
        check_input_pass(),
        check_stem(),
    ]
    sys.exit(0 if all(results) else 1)
