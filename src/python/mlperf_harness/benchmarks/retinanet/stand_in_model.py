"""RetinaNet of the MLPerf topology as ONNX, at a chosen width, with seeded weights.

The reference model (MLPerf Training's single_stage_detector: torchvision's RetinaNet with a
ResNeXt50-32x4d FPN backbone, 800x800, 264 OpenImages classes), layer by layer:

- the input normalisation of its transform: (x - mean) / std per channel, x in [0, 1];
- ResNeXt50 32x4d: a 7x7/2 stem and a 3x3/2 max pool, then stages of 3, 4, 6, 3 bottlenecks
  (1x1, grouped 3x3 of 32 groups carrying the stride, 1x1; a 1x1 projection on each stage's first
  block), widths 128, 256, 512, 1024, outputs 256 .. 2048; batch norms folded into each convolution
  as a bias (they are frozen);
- FPN over C3, C4, C5: 1x1 laterals to 256 channels, nearest 2x upsampling top-down, a 3x3 on each
  sum; P6 a 3x3/2 on P5, P7 a 3x3/2 on ReLU(P6);
- heads shared over the five levels: a classification tower and a box tower, each four 3x3
  convolutions with ReLU, then a 3x3 convolution to 9 x classes logits and to 9 x 4 deltas; each
  level's outputs laid out [N, positions x 9, classes] (row-major positions, anchors innermost).

Interface: input `images` float32 [N, 3, 800, 800] (preprocessed: resized, scaled to [0, 1],
NCHW); output `head_outputs` float32 [N, 120087, 4 + classes], each anchor's four box deltas then
its class logits, the levels concatenated: the reference model's two head outputs (torchvision's
`bbox_regression` and `cls_logits`) side by side, before its postprocessing, which the harness
does (detections.py on the host, on the GPU in the torch backend).

Width divisor 1 is the reference's cost; the stand-in divides every channel count by 8 (groups
32 / 8, four channels each, as 32x4d) and has as many classes as its generated set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper

from mlperf_harness.benchmarks.retinanet.anchors import ANCHORS_PER_POSITION, IMAGE_SIZE
from mlperf_harness.errors import HarnessError
from mlperf_harness.onnx_model import GraphWriter, make_model

Float32Array = npt.NDArray[np.float32]

INPUT_NAME = "images"
OUTPUT_NAME = "head_outputs"
# The towers' last outputs, per level: what the fitted head convolutions read (features_model).
CLS_FEATURES = "cls_tower_p{level}"
BOX_FEATURES = "box_tower_p{level}"
LEVELS = (3, 4, 5, 6, 7)
REAL_CLASSES = 264  # the OpenImages MLPerf subset's categories
OPSET = 13
IMAGE_MEAN = (0.485, 0.456, 0.406)
IMAGE_STD = (0.229, 0.224, 0.225)
STAGE_BLOCKS = (3, 4, 6, 3)
STAGE_PLANES = (64, 128, 256, 512)  # ResNet's planes; ResNeXt 32x4d width = 2 x planes
GROUPS = 32
EXPANSION = 4
FPN_CHANNELS = 256
TOWER_DEPTH = 4
# Each residual branch's output scaled down: random (unfitted) deep residual stacks otherwise grow
# their activations block after block (ResNet-50's stand-in damps the same way, docs/stand_in.md).
RESIDUAL_DAMPING = 0.3
# Share of each kernel's variance in one shared value per (output, input) channel pair: a low-pass
# part, so that features follow shapes and colours rather than pixel noise (as 3D-UNet's stand-in).
SMOOTH_SHARE = 0.5


@dataclass(frozen=True)
class RetinaNetWidth:
    divisor: int = 8
    classes: int = REAL_CLASSES

    def check(self) -> None:
        if self.divisor < 1 or GROUPS % self.divisor or self.classes < 1:
            raise HarnessError(
                f"width divisor must divide {GROUPS} and classes be positive, got "
                f"{self.divisor} and {self.classes}"
            )

    @property
    def groups(self) -> int:
        return GROUPS // self.divisor

    @property
    def stem(self) -> int:
        return 64 // self.divisor

    @property
    def fpn(self) -> int:
        return FPN_CHANNELS // self.divisor

    def stage(self, index: int) -> tuple[int, int]:
        """(bottleneck width, output channels) of stage `index` (0 = C2)."""
        planes = STAGE_PLANES[index] // self.divisor
        return 2 * planes, planes * EXPANSION


@dataclass(frozen=True)
class _Conv:
    name: str
    channels_in: int
    channels_out: int
    kernel: int
    stride: int = 1
    groups: int = 1

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (self.channels_out, self.channels_in // self.groups, self.kernel, self.kernel)


def _convs(width: RetinaNetWidth) -> list[_Conv]:
    """Every convolution of the network, in the order its weights are drawn."""
    width.check()
    convs = [_Conv("stem", 3, width.stem, 7, 2)]
    channels = width.stem
    for stage, blocks in enumerate(STAGE_BLOCKS):
        inner, out = width.stage(stage)
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            prefix = f"layer{stage + 1}.{block}"
            convs += [
                _Conv(f"{prefix}.conv1", channels, inner, 1),
                _Conv(f"{prefix}.conv2", inner, inner, 3, stride, width.groups),
                _Conv(f"{prefix}.conv3", inner, out, 1),
            ]
            if block == 0:
                convs.append(_Conv(f"{prefix}.downsample", channels, out, 1, stride))
            channels = out
    for stage in (1, 2, 3):  # C3, C4, C5
        _, out = width.stage(stage)
        convs.append(_Conv(f"fpn.inner{stage}", out, width.fpn, 1))
        convs.append(_Conv(f"fpn.layer{stage}", width.fpn, width.fpn, 3))
    convs += [
        _Conv("fpn.p6", width.fpn, width.fpn, 3, 2),
        _Conv("fpn.p7", width.fpn, width.fpn, 3, 2),
    ]
    for tower in ("cls", "box"):
        convs += [_Conv(f"{tower}_tower.{i}", width.fpn, width.fpn, 3) for i in range(TOWER_DEPTH)]
    a = ANCHORS_PER_POSITION
    convs += [
        _Conv("cls_logits", width.fpn, a * width.classes, 3),
        _Conv("bbox_pred", width.fpn, a * 4, 3),
    ]
    return convs


def random_weights(width: RetinaNetWidth, seed: int) -> dict[str, Float32Array]:
    """He-normal kernels with a shared low-pass part, zero biases; the two final head convolutions
    zero until fitted."""
    if seed < 0:
        raise HarnessError(f"seed must be non-negative, got {seed}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 41]))
    weights: dict[str, Float32Array] = {}
    for conv in _convs(width):
        shape = conv.shape
        weights[f"{conv.name}.bias"] = np.zeros(conv.channels_out, dtype=np.float32)
        if conv.name in ("cls_logits", "bbox_pred"):
            weights[f"{conv.name}.weight"] = np.zeros(shape, dtype=np.float32)
            continue
        fan_in = shape[1] * shape[2] * shape[3]
        std = float(np.sqrt(2.0 / fan_in))
        noise = rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
        # The shared value adds up coherently over the k x k taps: divided by k, it adds as much
        # variance as the noise part does.
        tap = std / shape[2]
        shared = rng.choice(np.array([-tap, tap], dtype=np.float32), size=(*shape[:2], 1, 1))
        kernel = np.sqrt(1 - SMOOTH_SHARE) * noise + np.sqrt(SMOOTH_SHARE) * shared
        if conv.name.endswith(".conv3"):
            kernel = kernel * RESIDUAL_DAMPING
        weights[f"{conv.name}.weight"] = kernel.astype(np.float32)
    return weights


class _Writer(GraphWriter):
    def __init__(self, weights: Mapping[str, Float32Array], width: RetinaNetWidth) -> None:
        super().__init__(weights)
        self.width = width
        self.convs = {conv.name: conv for conv in _convs(width)}
        self.written: set[str] = set()

    def weight(self, name: str) -> str:
        """An initializer, written once however many levels share it (the heads)."""
        if name not in self.written:
            self.written.add(name)
            self.constant(name, self.weights[name])
        return name

    def conv(self, x: str, name: str, output: str, relu: bool = False) -> str:
        conv = self.convs[name]
        pad = conv.kernel // 2
        y = self.node(
            "Conv",
            [x, self.weight(f"{name}.weight"), self.weight(f"{name}.bias")],
            output if not relu else f"{output}_pre",
            kernel_shape=[conv.kernel] * 2,
            strides=[conv.stride] * 2,
            pads=[pad] * 4,
            group=conv.groups,
        )
        return self.node("Relu", [y], output) if relu else y

    def backbone(self) -> list[str]:
        """C3, C4, C5."""
        mean = np.asarray(IMAGE_MEAN, np.float32).reshape(1, 3, 1, 1)
        std = np.asarray(IMAGE_STD, np.float32).reshape(1, 3, 1, 1)
        x = self.node("Sub", [INPUT_NAME, self.constant("image_mean", mean)], "centred")
        x = self.node("Div", [x, self.constant("image_std", std)], "normalised")
        x = self.conv(x, "stem", "stem_out", relu=True)
        x = self.node("MaxPool", [x], "pool_out", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
        outputs = []
        for stage, blocks in enumerate(STAGE_BLOCKS):
            for block in range(blocks):
                prefix = f"layer{stage + 1}.{block}"
                y = self.conv(x, f"{prefix}.conv1", f"{prefix}.a", relu=True)
                y = self.conv(y, f"{prefix}.conv2", f"{prefix}.b", relu=True)
                y = self.conv(y, f"{prefix}.conv3", f"{prefix}.c")
                skip = self.conv(x, f"{prefix}.downsample", f"{prefix}.skip") if block == 0 else x
                y = self.node("Add", [y, skip], f"{prefix}.sum")
                x = self.node("Relu", [y], f"{prefix}.out")
            if stage > 0:
                outputs.append(x)
        return outputs

    def pyramid(self, features: list[str]) -> list[str]:
        """P3 .. P7."""
        inner = self.conv(features[2], "fpn.inner3", "fpn.inner_c5")
        results = [self.conv(inner, "fpn.layer3", "p5")]
        for stage, feature in ((2, features[1]), (1, features[0])):
            lateral = self.conv(feature, f"fpn.inner{stage}", f"fpn.inner_c{stage + 2}")
            scales = self.constant(f"fpn.scales{stage}", np.array([1, 1, 2, 2], np.float32))
            roi = self.constant(f"fpn.roi{stage}", np.zeros(0, np.float32))
            up = self.node(
                "Resize",
                [inner, roi, scales],
                f"fpn.up_c{stage + 2}",
                mode="nearest",
                nearest_mode="floor",
                coordinate_transformation_mode="asymmetric",
            )
            inner = self.node("Add", [lateral, up], f"fpn.merged_c{stage + 2}")
            results.insert(0, self.conv(inner, f"fpn.layer{stage}", f"p{stage + 2}"))
        p6 = self.conv(results[-1], "fpn.p6", "p6")
        p6_relu = self.node("Relu", [p6], "p6_relu")
        p7 = self.conv(p6_relu, "fpn.p7", "p7")
        return [*results, p6, p7]

    def towers(self, level: int, feature: str) -> tuple[str, str]:
        outs = []
        for tower, name in (("cls", CLS_FEATURES), ("box", BOX_FEATURES)):
            x = feature
            for i in range(TOWER_DEPTH):
                last = i == TOWER_DEPTH - 1
                x = self.conv(
                    x,
                    f"{tower}_tower.{i}",
                    name.format(level=level) if last else f"{tower}_tower{i}_p{level}",
                    relu=True,
                )
            outs.append(x)
        return outs[0], outs[1]

    def head_rows(self, x: str, conv: str, per_anchor: int, level: int) -> str:
        """[N, 9 x per_anchor, H, W] -> [N, H x W x 9, per_anchor]."""
        y = self.conv(x, conv, f"{conv}_p{level}")
        a = ANCHORS_PER_POSITION
        shape5 = self.constant(
            f"{conv}_shape5_p{level}", np.array([0, a, per_anchor, -1], np.int64)
        )
        y = self.node("Reshape", [y, shape5], f"{conv}_split_p{level}")  # [N, A, K, HW]
        y = self.node("Transpose", [y], f"{conv}_t_p{level}", perm=[0, 3, 1, 2])  # [N, HW, A, K]
        shape3 = self.constant(f"{conv}_shape3_p{level}", np.array([0, -1, per_anchor], np.int64))
        return self.node("Reshape", [y, shape3], f"{conv}_rows_p{level}")

    def model(self, doc: str, metadata: Mapping[str, str], features_only: bool) -> onnx.ModelProto:
        levels = self.pyramid(self.backbone())
        rows, feature_outputs = [], []
        for level, feature in zip(LEVELS, levels, strict=True):
            cls_features, box_features = self.towers(level, feature)
            feature_outputs += [cls_features, box_features]
            if features_only:
                continue
            boxes = self.head_rows(box_features, "bbox_pred", 4, level)
            logits = self.head_rows(cls_features, "cls_logits", self.width.classes, level)
            rows.append(self.node("Concat", [boxes, logits], f"head_p{level}", axis=2))
        batch = "N"
        inputs = [
            helper.make_tensor_value_info(
                INPUT_NAME, TensorProto.FLOAT, [batch, 3, IMAGE_SIZE, IMAGE_SIZE]
            )
        ]
        if features_only:
            outputs = [
                helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
                for name in feature_outputs
            ]
        else:
            self.node("Concat", rows, OUTPUT_NAME, axis=1)
            outputs = [
                helper.make_tensor_value_info(
                    OUTPUT_NAME, TensorProto.FLOAT, [batch, "anchors", 4 + self.width.classes]
                )
            ]
        graph = helper.make_graph(self.nodes, "retinanet", inputs, outputs, self.initializers)
        return make_model(graph, OPSET, doc=doc, metadata=metadata)


def retinanet_model(
    weights: Mapping[str, Float32Array],
    width: RetinaNetWidth,
    doc: str,
    metadata: Mapping[str, str],
) -> onnx.ModelProto:
    """The whole network with the official interface (INPUT_NAME -> OUTPUT_NAME)."""
    return _Writer(weights, width).model(doc, metadata, features_only=False)


def features_model(weights: Mapping[str, Float32Array], width: RetinaNetWidth) -> onnx.ModelProto:
    """The network up to the towers: outputs CLS_FEATURES and BOX_FEATURES of each level, in level
    order (what the final head convolutions are fitted on)."""
    return _Writer(weights, width).model("features", {}, features_only=True)
