"""The embedded default model for 3D-UNet: the KiTS19 U-Net of MLCommons' reference as ONNX, at a
chosen width, with seeded weights.

Interface of the official `3dUNetKiTS19.onnx`: input `input` float32 [N, 1, 128, 128, 128] (a
preprocessed window), output `output` float32 [N, 3, 128, 128, 128] (logits of background, kidney,
tumour); the batch dimension is dynamic.

The topology is the reference's `Unet3D` (pytorch_checkpoint_SUT.py, from MLPerf Training's
image_segmentation), with every filter count divided by the width divisor:

- filters (32, 64, 128, 256, 320); every convolution block is Conv3d (no bias) -> InstanceNorm3d
  (affine, eps 1e-5) -> ReLU, kernel 3, padding 1;
- input block: two blocks at 128³ (1 -> f0 -> f0);
- four down blocks (f0->f1, f1->f2, f2->f3, f3->f4), each a stride-2 block then a stride-1 block,
  then the bottleneck, one more down block f4 -> f4: resolutions 128, 64, 32, 16, 8, 4;
- five up blocks, (f4 -> f4) then (f4 -> f3 ... f1 -> f0): a ConvTranspose3d of kernel 2, stride 2
  with bias (no norm, no activation), concatenated with the skip of the same resolution (upsampled
  channels first), then two blocks;
- the output layer: a 1x1x1 Conv3d with bias, f0 -> 3 classes.

Width 1 is the official model's cost (31.2 M parameters); the stand-in uses divisor 8 (filters 4,
8, 16, 32, 40; 0.49 M parameters). Weights are seeded: each convolution kernel He-normal plus a
shared value per (output, input) channel pair (SMOOTH_SHARE); instance norms at scale 1, shift 0;
the output layer is fitted afterwards (`build_stand_in_model`) on the features it reads, which
`features_model` exposes as its output.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.errors import HarnessError
from mlperf_harness.onnx_model import make_model

Float32Array = npt.NDArray[np.float32]

# The official model's interface.
INPUT_NAME = "input"
OUTPUT_NAME = "output"
WINDOW = 128
CLASSES = 3
FEATURES_NAME = "features"  # the features model's output: the last up block's [N, f0, 128³]

OPSET = 13  # TensorRT 10 and ONNX Runtime read it; the ops used are unchanged since
FILTERS = (32, 64, 128, 256, 320)  # the reference's, at width 1
INSTANCE_NORM_EPSILON = 1e-5  # torch.nn.InstanceNorm3d's default
# Share of each convolution kernel's variance in its shared (low-pass) part. Measured (seed 0, four
# training and three held-out generated cases): 0.5 gave mean DICE 0.89 where plain He-normal
# kernels (0) gave 0.06 — their features followed the noise, not the organs.
SMOOTH_SHARE = 0.5


@dataclass(frozen=True)
class UNetWidth:
    """The U-Net's filter counts: the reference's divided by `divisor` (at least one each)."""

    divisor: int = 8

    def check(self) -> None:
        if self.divisor < 1:
            raise HarnessError(f"the width divisor must be at least 1, got {self.divisor}")

    @property
    def filters(self) -> tuple[int, ...]:
        return tuple(max(1, f // self.divisor) for f in FILTERS)


STAND_IN_WIDTH = UNetWidth(8)
REAL_WIDTH = UNetWidth(1)


def weight_shapes(width: UNetWidth) -> dict[str, tuple[int, ...]]:
    """Every weight by name, in the order they are drawn; convolution weights are [out, in, k, k, k],
    transposed ones [in, out, 2, 2, 2] as ONNX (and torch) lay them out."""
    width.check()
    f = width.filters
    shapes: dict[str, tuple[int, ...]] = {}

    def block(name: str, channels_in: int, channels_out: int) -> None:
        shapes[f"{name}/conv"] = (channels_out, channels_in, 3, 3, 3)
        shapes[f"{name}/norm/scale"] = (channels_out,)
        shapes[f"{name}/norm/shift"] = (channels_out,)

    block("input/0", 1, f[0])
    block("input/1", f[0], f[0])
    downs = [*itertools.pairwise(f), (f[-1], f[-1])]  # the bottleneck last
    for level, (channels_in, channels_out) in enumerate(downs):
        block(f"down{level}/0", channels_in, channels_out)
        block(f"down{level}/1", channels_out, channels_out)
    ups = [(f[-1], f[-1]), *((b, a) for a, b in reversed(list(itertools.pairwise(f))))]
    for level, (channels_in, channels_out) in enumerate(ups):
        shapes[f"up{level}/transpose"] = (channels_in, channels_out, 2, 2, 2)
        shapes[f"up{level}/transpose_bias"] = (channels_out,)
        block(f"up{level}/0", 2 * channels_out, channels_out)
        block(f"up{level}/1", channels_out, channels_out)
    shapes["output/weight"] = (CLASSES, f[0], 1, 1, 1)
    shapes["output/bias"] = (CLASSES,)
    return shapes


def random_weights(width: UNetWidth, seed: int) -> dict[str, Float32Array]:
    """He-normal convolutions (for the ReLU that follows), norms at scale 1 and shift 0, zero
    biases; the output layer zero until fitted."""
    if seed < 0:
        raise HarnessError(f"seed must be non-negative, got {seed}")
    rng = np.random.default_rng(np.random.SeedSequence([seed]))
    weights: dict[str, Float32Array] = {}
    for name, dims in weight_shapes(width).items():
        if name.endswith("/conv"):
            fan_in = int(np.prod(dims[1:]))
            std = np.sqrt(2.0 / fan_in)
            noise = rng.standard_normal(dims) * std
            # Each (output, input) pair's kernel also gets one shared value of random sign: a
            # low-pass part, as trained networks' early filters have, that averages the scan's
            # noise away instead of amplifying it as zero-mean random kernels do.
            signs = rng.choice([-1.0, 1.0], size=(*dims[:2], 1, 1, 1)) * std
            weights[name] = (
                np.sqrt(1.0 - SMOOTH_SHARE) * noise + np.sqrt(SMOOTH_SHARE) * signs
            ).astype(np.float32)
        elif name.endswith("/transpose"):
            fan_in = dims[0] * int(np.prod(dims[2:]))
            weights[name] = rng.standard_normal(dims, dtype=np.float32) * np.float32(
                np.sqrt(1.0 / fan_in)
            )
        elif name.endswith("/scale"):
            weights[name] = np.ones(dims, dtype=np.float32)
        else:
            weights[name] = np.zeros(dims, dtype=np.float32)
    return weights


class _GraphWriter:
    def __init__(self, weights: Mapping[str, Float32Array], width: UNetWidth) -> None:
        self.weights = weights
        self.width = width
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []

    def weight(self, name: str) -> str:
        self.initializers.append(numpy_helper.from_array(self.weights[name], name))
        return name

    def node(self, op: str, inputs: Sequence[str], output: str, **attributes: Any) -> str:
        self.nodes.append(helper.make_node(op, list(inputs), [output], name=output, **attributes))
        return output

    def block(self, x: str, name: str, stride: int = 1) -> str:
        """Conv3d 3x3x3 (padding 1, no bias) -> InstanceNorm -> ReLU."""
        x = self.node(
            "Conv",
            [x, self.weight(f"{name}/conv")],
            f"{name}/conv_out",
            kernel_shape=[3, 3, 3],
            pads=[1, 1, 1, 1, 1, 1],
            strides=[stride] * 3,
        )
        x = self.node(
            "InstanceNormalization",
            [x, self.weight(f"{name}/norm/scale"), self.weight(f"{name}/norm/shift")],
            f"{name}/norm_out",
            epsilon=INSTANCE_NORM_EPSILON,
        )
        return self.node("Relu", [x], f"{name}/relu_out")

    def up(self, x: str, skip: str, level: int) -> str:
        name = f"up{level}"
        x = self.node(
            "ConvTranspose",
            [x, self.weight(f"{name}/transpose"), self.weight(f"{name}/transpose_bias")],
            f"{name}/transpose_out",
            kernel_shape=[2, 2, 2],
            strides=[2, 2, 2],
        )
        x = self.node("Concat", [x, skip], f"{name}/concat_out", axis=1)
        return self.block(self.block(x, f"{name}/0"), f"{name}/1")

    def body(self) -> str:
        """Input block, encoder, bottleneck and decoder: the [N, f0, 128³] features' name."""
        x = self.block(self.block(INPUT_NAME, "input/0"), "input/1")
        skips = [x]
        levels = len(self.width.filters)  # four down blocks and the bottleneck
        for level in range(levels):
            x = self.block(self.block(x, f"down{level}/0", stride=2), f"down{level}/1")
            if level < levels - 1:
                skips.append(x)
        for level, skip in enumerate(reversed(skips)):
            x = self.up(x, skip, level)
        return x

    def output_layer(self, features: str) -> str:
        return self.node(
            "Conv",
            [features, self.weight("output/weight"), self.weight("output/bias")],
            OUTPUT_NAME,
            kernel_shape=[1, 1, 1],
        )

    def model(
        self, output: str, channels: int, doc: str, metadata: Mapping[str, str]
    ) -> onnx.ModelProto:
        window = [WINDOW] * 3
        inputs = [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["N", 1, *window])]
        outputs = [
            helper.make_tensor_value_info(output, TensorProto.FLOAT, ["N", channels, *window])
        ]
        graph = helper.make_graph(self.nodes, "unet3d_kits19", inputs, outputs, self.initializers)
        model = make_model(graph, OPSET, doc=doc, metadata=metadata)
        onnx.checker.check_model(model)
        return model


def features_model(weights: Mapping[str, Float32Array], width: UNetWidth) -> onnx.ModelProto:
    """The U-Net without its output layer, output FEATURES_NAME [N, f0, 128³]: what the output
    layer is fitted on (a build step only)."""
    writer = _GraphWriter(weights, width)
    features = writer.node("Identity", [writer.body()], FEATURES_NAME)
    return writer.model(features, width.filters[0], "3D-UNet stand-in features (build step)", {})


def unet_model(
    weights: Mapping[str, Float32Array], width: UNetWidth, doc: str, metadata: Mapping[str, str]
) -> onnx.ModelProto:
    """The whole U-Net with the official interface."""
    writer = _GraphWriter(weights, width)
    writer.output_layer(writer.body())
    return writer.model(OUTPUT_NAME, CLASSES, doc, metadata)


def parameter_count(width: UNetWidth) -> int:
    return sum(int(np.prod(dims)) for dims in weight_shapes(width).values())
