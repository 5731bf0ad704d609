"""Run under TRITON_INTERPRET=1 by test_fp8_retinanet_kernels_interpreted.py (a process of its own:
Triton reads that variable when the kernels are defined): the FP8 convolution kernel on the layer
forms RetinaNet's plan adds to ResNet-50's (plan.py), through the same launch code the GPU uses,
against the CPU reference. Prints one line per check and exits non-zero when one fails.

The forms: the heads' last convolutions, whose output channels (9 x 4 and 9 x classes) are no
multiple of a tile (the kernel masks the columns past them); the FPN's lateral 1x1 with the
upsampled coarser level added as an fp16 residual; the stand-in's 32-channel layers, which only
tuning's narrow tilings (block_k 32) fit; and a 3x3 of stride 2 quantizing an fp16 input as it
loads it (P7 on ReLU(P6))."""

from __future__ import annotations

import sys
from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8 import ops, tuning

conv_launch: Any = ops.conv._init_fn  # the launch code: runs the interpreted kernel on CPU tensors


def check(
    label: str,
    channels: int,
    outputs: int,
    kernel: int,
    stride: int,
    residual_form: str | None = None,
    input_form: str = "e4m3",
) -> bool:
    """One layer on 2 images of 7 x 9 pixels (partial tiles), every narrow tiling that fits and one
    of the base ones where one fits: fp16 equal to the reference, e4m3 bit-equal across tilings."""
    pad = kernel // 2
    x = (torch.randn(2, channels, 7, 9) * 2.0).contiguous(memory_format=torch.channels_last)
    x8 = ops.as_bits(x)
    w8 = ops.as_bits(torch.randn(outputs, kernel, kernel, channels))
    alpha = torch.rand(outputs) * (4.0 / (kernel * kernel * channels))
    bias = torch.randn(outputs) * 0.1
    residual = None
    if residual_form is not None:
        shape = ops.output_shape(x8.shape, w8.shape, stride, [pad] * 4)
        residual = torch.randn(shape).half().contiguous(memory_format=torch.channels_last)
    if input_form == "fp16":  # e4m3 values in fp16: with in_scale 1 they quantize to themselves
        x8 = ops.from_bits(x8).half().contiguous(memory_format=torch.channels_last)
    flags = (stride, [pad] * 4, residual is None, 1.0, 0.0, 16.0, True, True)
    configs = [c for c in (*tuning.NARROW_CANDIDATES, tuning.CANDIDATES[0]) if c.fits(channels)]
    ref16, _ = ops.conv_reference(x8, w8, alpha, bias, residual, *flags, configs[0].as_list())
    first8 = None
    good = True
    for config in configs:
        y16, y8 = conv_launch(x8, w8, alpha, bias, residual, *flags, config.as_list())
        first8 = y8 if first8 is None else first8
        # e4m3 is compared across tilings only, as fp8_interpreted_kernels.py does: the
        # interpreter's emulated cast mis-rounds values whose rounding carries into the exponent
        # (seen here: 1.955 stored as 1.0, 7.875 as 4.0), which sm_90's conversion rounds to
        # nearest; the fp16 outputs show the sums themselves are exact.
        exact = torch.equal(y16, ref16) and torch.equal(y8, first8)
        print(
            f"{label} ({channels} -> {outputs}, {kernel}x{kernel}/{stride}, residual "
            f"{residual_form}, input {input_form}), {tuning.label(config)}: fp16 "
            f"{'equal' if torch.equal(y16, ref16) else 'DIFFER'} to the reference, e4m3 "
            f"{'equal' if torch.equal(y8, first8) else 'DIFFER'} across tilings"
        )
        good &= exact
    return good


if __name__ == "__main__":
    torch.manual_seed(0)
    results = [
        check("box regression", 64, 36, 3, 1),
        check("class logits", 64, 72, 3, 1),
        check("FPN lateral", 64, 64, 1, 1, residual_form="fp16"),
        check("narrow 1x1", 32, 128, 1, 1),
        check("P7", 64, 64, 3, 2, input_form="fp16"),
    ]
    sys.exit(0 if all(results) else 1)
