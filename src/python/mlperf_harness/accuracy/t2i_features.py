"""The feature extractors of MLCommons' text-to-image accuracy (`text_to_image/tools/accuracy_coco.py`)
as ONNX graphs run on ONNX Runtime, from weights under their published names:

- FID: pytorch-fid's Inception-v3 (`tools/fid/inception.py`, `use_fid_inception=True`), up to the
  final average pool (2,048 features): torchvision's Inception-v3 stem and blocks with the FID
  patches (average pools that do not count padding; Mixed_7c's pool branch a max pool). Its input
  is the image as ToTensor makes it ([0, 1], CHW), resized to 299x299 bilinearly (align_corners
  False, no antialiasing: F.interpolate's defaults) and scaled to [-1, 1]. Weight names are
  torchvision's (`Conv2d_1a_3x3.conv.weight`, `Mixed_5b.branch1x1.bn.running_mean`, ...): each
  BasicConv2d is a convolution without bias and a BatchNorm (eps 0.001), folded here.
- CLIP: open_clip's ViT-B/32 with OpenAI's weights (QuickGELU): the image tower (32x32 patches, a
  class token, pre and post LayerNorm, `proj`) and the text tower (causal, `ln_final`, the feature
  at the end-of-text token, `text_projection`). The text tower is SDXL's text-encoder graph
  (benchmarks/sdxl/stand_in_model.py) under transformers' names (t2i_weights.py maps open_clip's).

`width_divisor` narrows every layer (same architecture, fewer channels): the stand-in's seeded
extractors; the official weights are always full width.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from mlperf_harness.benchmarks.sdxl.stand_in_model import TextShape, text_encoder_model
from mlperf_harness.onnx_layers import OPSET, Float32Array, LayerWriter, PreNormNames
from mlperf_harness.onnx_model import make_model

PIXELS, FEATURES = "pixels", "features"
INCEPTION_SIZE = 299
BN_EPS = 0.001
CLIP_SIZE = 224
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)  # open_clip's OPENAI_DATASET_MEAN
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


# --- Inception-v3 (FID) -------------------------------------------------------------------------


# (name, in, out, kernel (h, w), stride, padding (h, w)) of every BasicConv2d, in torchvision's
# Inception3 with the FID blocks. Mixed blocks are listed by their branches.
def _inception_convs(d: int) -> list[tuple[str, int, int, tuple[int, int], int, tuple[int, int]]]:
    def c(n: int) -> int:
        return max(1, n // d)

    convs = [
        ("Conv2d_1a_3x3", 3, c(32), (3, 3), 2, (0, 0)),
        ("Conv2d_2a_3x3", c(32), c(32), (3, 3), 1, (0, 0)),
        ("Conv2d_2b_3x3", c(32), c(64), (3, 3), 1, (1, 1)),
        ("Conv2d_3b_1x1", c(64), c(80), (1, 1), 1, (0, 0)),
        ("Conv2d_4a_3x3", c(80), c(192), (3, 3), 1, (0, 0)),
    ]
    for name, n_in, pool in (("Mixed_5b", 192, 32), ("Mixed_5c", 256, 64), ("Mixed_5d", 288, 64)):
        i = c(n_in)
        convs += [
            (f"{name}.branch1x1", i, c(64), (1, 1), 1, (0, 0)),
            (f"{name}.branch5x5_1", i, c(48), (1, 1), 1, (0, 0)),
            (f"{name}.branch5x5_2", c(48), c(64), (5, 5), 1, (2, 2)),
            (f"{name}.branch3x3dbl_1", i, c(64), (1, 1), 1, (0, 0)),
            (f"{name}.branch3x3dbl_2", c(64), c(96), (3, 3), 1, (1, 1)),
            (f"{name}.branch3x3dbl_3", c(96), c(96), (3, 3), 1, (1, 1)),
            (f"{name}.branch_pool", i, c(pool), (1, 1), 1, (0, 0)),
        ]
    i = c(288)
    convs += [
        ("Mixed_6a.branch3x3", i, c(384), (3, 3), 2, (0, 0)),
        ("Mixed_6a.branch3x3dbl_1", i, c(64), (1, 1), 1, (0, 0)),
        ("Mixed_6a.branch3x3dbl_2", c(64), c(96), (3, 3), 1, (1, 1)),
        ("Mixed_6a.branch3x3dbl_3", c(96), c(96), (3, 3), 2, (0, 0)),
    ]
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        i, s = c(768), c(c7)
        convs += [
            (f"{name}.branch1x1", i, c(192), (1, 1), 1, (0, 0)),
            (f"{name}.branch7x7_1", i, s, (1, 1), 1, (0, 0)),
            (f"{name}.branch7x7_2", s, s, (1, 7), 1, (0, 3)),
            (f"{name}.branch7x7_3", s, c(192), (7, 1), 1, (3, 0)),
            (f"{name}.branch7x7dbl_1", i, s, (1, 1), 1, (0, 0)),
            (f"{name}.branch7x7dbl_2", s, s, (7, 1), 1, (3, 0)),
            (f"{name}.branch7x7dbl_3", s, s, (1, 7), 1, (0, 3)),
            (f"{name}.branch7x7dbl_4", s, s, (7, 1), 1, (3, 0)),
            (f"{name}.branch7x7dbl_5", s, c(192), (1, 7), 1, (0, 3)),
            (f"{name}.branch_pool", i, c(192), (1, 1), 1, (0, 0)),
        ]
    i = c(768)
    convs += [
        ("Mixed_7a.branch3x3_1", i, c(192), (1, 1), 1, (0, 0)),
        ("Mixed_7a.branch3x3_2", c(192), c(320), (3, 3), 2, (0, 0)),
        ("Mixed_7a.branch7x7x3_1", i, c(192), (1, 1), 1, (0, 0)),
        ("Mixed_7a.branch7x7x3_2", c(192), c(192), (1, 7), 1, (0, 3)),
        ("Mixed_7a.branch7x7x3_3", c(192), c(192), (7, 1), 1, (3, 0)),
        ("Mixed_7a.branch7x7x3_4", c(192), c(192), (3, 3), 2, (0, 0)),
    ]
    for name, n_in in (("Mixed_7b", c(320) + c(192) + c(768)), ("Mixed_7c", 0)):
        i = n_in or (c(320) + 2 * c(384) * 2 + c(192))
        convs += [
            (f"{name}.branch1x1", i, c(320), (1, 1), 1, (0, 0)),
            (f"{name}.branch3x3_1", i, c(384), (1, 1), 1, (0, 0)),
            (f"{name}.branch3x3_2a", c(384), c(384), (1, 3), 1, (0, 1)),
            (f"{name}.branch3x3_2b", c(384), c(384), (3, 1), 1, (1, 0)),
            (f"{name}.branch3x3dbl_1", i, c(448), (1, 1), 1, (0, 0)),
            (f"{name}.branch3x3dbl_2", c(448), c(384), (3, 3), 1, (1, 1)),
            (f"{name}.branch3x3dbl_3a", c(384), c(384), (1, 3), 1, (0, 1)),
            (f"{name}.branch3x3dbl_3b", c(384), c(384), (3, 1), 1, (1, 0)),
            (f"{name}.branch_pool", i, c(192), (1, 1), 1, (0, 0)),
        ]
    return convs


def inception_feature_count(width_divisor: int) -> int:
    d = width_divisor
    return max(1, 320 // d) + 4 * max(1, 384 // d) + max(1, 192 // d)


def inception_weight_shapes(width_divisor: int = 1) -> dict[str, tuple[int, ...]]:
    """Every weight the FID Inception reads, by torchvision's name, with its shape."""
    shapes: dict[str, tuple[int, ...]] = {}
    for name, n_in, n_out, (kh, kw), _, _ in _inception_convs(width_divisor):
        shapes[f"{name}.conv.weight"] = (n_out, n_in, kh, kw)
        for part in ("weight", "bias", "running_mean", "running_var"):
            shapes[f"{name}.bn.{part}"] = (n_out,)
    return shapes


def seeded_inception_weights(width_divisor: int, seed: int) -> dict[str, Float32Array]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
    out: dict[str, Float32Array] = {}
    for name, shape in inception_weight_shapes(width_divisor).items():
        if name.endswith("conv.weight"):
            fan_in = shape[1] * shape[2] * shape[3]
            out[name] = rng.standard_normal(shape, dtype=np.float32) * np.float32(
                math.sqrt(2.0 / fan_in)
            )
        elif name.endswith(("bn.weight", "bn.running_var")):
            out[name] = np.ones(shape, np.float32)
        else:
            out[name] = np.zeros(shape, np.float32)
    return out


class _InceptionWriter(LayerWriter):
    def __init__(self, weights: Mapping[str, Float32Array], width_divisor: int) -> None:
        super().__init__(weights)
        self.specs = {spec[0]: spec for spec in _inception_convs(width_divisor)}

    def basic(self, x: str, name: str) -> str:
        """BasicConv2d: conv (no bias), BatchNorm folded into its weight and bias, ReLU."""
        _, _, _, _, stride, padding = self.specs[name]
        w = self.weights
        scale = w[f"{name}.bn.weight"] / np.sqrt(w[f"{name}.bn.running_var"] + np.float32(BN_EPS))
        folded = {
            f"{name}.f.weight": (w[f"{name}.conv.weight"] * scale[:, None, None, None]).astype(
                np.float32
            ),
            f"{name}.f.bias": (w[f"{name}.bn.bias"] - w[f"{name}.bn.running_mean"] * scale).astype(
                np.float32
            ),
        }
        saved = self.weights
        self.weights = {**folded, **{k: v for k, v in saved.items() if k.startswith(name)}}
        y = self.conv(x, f"{name}.f", stride=stride, padding=padding)
        self.weights = saved
        return self.node("Relu", [y], f"{name}/relu")

    def max_pool(self, x: str, name: str, stride: int, pad: int = 0) -> str:
        return self.node(
            "MaxPool", [x], name, kernel_shape=[3, 3], strides=[stride, stride], pads=[pad] * 4
        )

    def avg_pool(self, x: str, name: str) -> str:
        # count_include_pad=False: TensorFlow's average pool, the FID patch.
        return self.node(
            "AveragePool",
            [x],
            name,
            kernel_shape=[3, 3],
            strides=[1, 1],
            pads=[1] * 4,
            count_include_pad=0,
        )

    def cat(self, parts: list[str], name: str) -> str:
        return self.node("Concat", parts, name, axis=1)

    def block_a(self, x: str, n: str) -> str:
        b1 = self.basic(x, f"{n}.branch1x1")
        b5 = self.basic(self.basic(x, f"{n}.branch5x5_1"), f"{n}.branch5x5_2")
        b3 = self.basic(
            self.basic(self.basic(x, f"{n}.branch3x3dbl_1"), f"{n}.branch3x3dbl_2"),
            f"{n}.branch3x3dbl_3",
        )
        bp = self.basic(self.avg_pool(x, f"{n}/pool"), f"{n}.branch_pool")
        return self.cat([b1, b5, b3, bp], f"{n}/out")

    def block_b(self, x: str, n: str) -> str:
        b3 = self.basic(x, f"{n}.branch3x3")
        bd = self.basic(
            self.basic(self.basic(x, f"{n}.branch3x3dbl_1"), f"{n}.branch3x3dbl_2"),
            f"{n}.branch3x3dbl_3",
        )
        return self.cat([b3, bd, self.max_pool(x, f"{n}/pool", 2)], f"{n}/out")

    def block_c(self, x: str, n: str) -> str:
        b1 = self.basic(x, f"{n}.branch1x1")
        b7 = x
        for k in ("1", "2", "3"):
            b7 = self.basic(b7, f"{n}.branch7x7_{k}")
        bd = x
        for k in ("1", "2", "3", "4", "5"):
            bd = self.basic(bd, f"{n}.branch7x7dbl_{k}")
        bp = self.basic(self.avg_pool(x, f"{n}/pool"), f"{n}.branch_pool")
        return self.cat([b1, b7, bd, bp], f"{n}/out")

    def block_d(self, x: str, n: str) -> str:
        b3 = self.basic(self.basic(x, f"{n}.branch3x3_1"), f"{n}.branch3x3_2")
        b7 = x
        for k in ("1", "2", "3", "4"):
            b7 = self.basic(b7, f"{n}.branch7x7x3_{k}")
        return self.cat([b3, b7, self.max_pool(x, f"{n}/pool", 2)], f"{n}/out")

    def block_e(self, x: str, n: str, max_pool: bool) -> str:
        b1 = self.basic(x, f"{n}.branch1x1")
        b3 = self.basic(x, f"{n}.branch3x3_1")
        b3 = self.cat(
            [self.basic(b3, f"{n}.branch3x3_2a"), self.basic(b3, f"{n}.branch3x3_2b")], f"{n}/b3"
        )
        bd = self.basic(self.basic(x, f"{n}.branch3x3dbl_1"), f"{n}.branch3x3dbl_2")
        bd = self.cat(
            [self.basic(bd, f"{n}.branch3x3dbl_3a"), self.basic(bd, f"{n}.branch3x3dbl_3b")],
            f"{n}/bd",
        )
        pooled = self.max_pool(x, f"{n}/pool", 1, 1) if max_pool else self.avg_pool(x, f"{n}/pool")
        bp = self.basic(pooled, f"{n}.branch_pool")
        return self.cat([b1, b3, bd, bp], f"{n}/out")


def inception_model(weights: Mapping[str, Float32Array], width_divisor: int = 1) -> onnx.ModelProto:
    """pixels [N, 3, H, W] in [0, 1] -> features [N, 2048 / width_divisor]."""
    w = _InceptionWriter(weights, width_divisor)
    batch = w.node(
        "Slice", [w.node("Shape", [PIXELS], "resize/shape"), w.ints(0), w.ints(1)], "resize/n"
    )
    sizes = w.node(
        "Concat", [batch, w.ints(3, INCEPTION_SIZE, INCEPTION_SIZE)], "resize/target", axis=0
    )
    x = w.node(
        "Resize",
        [PIXELS, "", "", sizes],
        "resized",
        mode="linear",
        coordinate_transformation_mode="pytorch_half_pixel",
    )
    x = w.node("Sub", [w.node("Mul", [x, w.scalar(2.0)], "x2"), w.scalar(1.0)], "normalized")
    x = w.basic(x, "Conv2d_1a_3x3")
    x = w.basic(x, "Conv2d_2a_3x3")
    x = w.max_pool(w.basic(x, "Conv2d_2b_3x3"), "maxpool1", 2)
    x = w.basic(x, "Conv2d_3b_1x1")
    x = w.max_pool(w.basic(x, "Conv2d_4a_3x3"), "maxpool2", 2)
    for n in ("Mixed_5b", "Mixed_5c", "Mixed_5d"):
        x = w.block_a(x, n)
    x = w.block_b(x, "Mixed_6a")
    for n in ("Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"):
        x = w.block_c(x, n)
    x = w.block_d(x, "Mixed_7a")
    x = w.block_e(x, "Mixed_7b", max_pool=False)
    x = w.block_e(x, "Mixed_7c", max_pool=True)
    pooled = w.node("GlobalAveragePool", [x], "avgpool")
    w.node("Flatten", [pooled], FEATURES, axis=1)
    graph = helper.make_graph(
        w.nodes,
        "fid_inception_v3",
        [helper.make_tensor_value_info(PIXELS, TensorProto.FLOAT, ["batch", 3, "height", "width"])],
        [
            helper.make_tensor_value_info(
                FEATURES, TensorProto.FLOAT, ["batch", inception_feature_count(width_divisor)]
            )
        ],
        w.initializers,
    )
    model = make_model(graph, OPSET)
    onnx.checker.check_model(model)
    return model


# --- CLIP ViT-B/32 --------------------------------------------------------------------------------


_VIT_B_32_TEXT = TextShape(49408, 512, 12, 8, 77, "quick_gelu", 512)


@dataclass(frozen=True)
class ClipShape:
    image_width: int = 768
    image_layers: int = 12
    image_heads: int = 12
    patch: int = 32
    image_size: int = CLIP_SIZE
    embed: int = 512
    text: TextShape = _VIT_B_32_TEXT

    @property
    def grid(self) -> int:
        return self.image_size // self.patch


VIT_B_32 = ClipShape()


def narrowed_clip(vocab: int, width_divisor: int) -> ClipShape:
    d = width_divisor
    return ClipShape(
        image_width=768 // d,
        image_layers=2,
        image_heads=max(1, 12 // d),
        embed=512 // d,
        text=TextShape(vocab, 512 // d, 2, max(1, 8 // d), 77, "quick_gelu", 512 // d),
    )


def clip_image_weight_shapes(s: ClipShape) -> dict[str, tuple[int, ...]]:
    """The image tower's weights by open_clip's names, the attention's packed in_proj split into
    q/k/v (t2i_weights.py splits a checkpoint's)."""
    c = s.image_width
    shapes: dict[str, tuple[int, ...]] = {
        "visual.conv1.weight": (c, 3, s.patch, s.patch),
        "visual.class_embedding": (c,),
        "visual.positional_embedding": (s.grid * s.grid + 1, c),
        "visual.ln_pre.weight": (c,),
        "visual.ln_pre.bias": (c,),
        "visual.ln_post.weight": (c,),
        "visual.ln_post.bias": (c,),
        "visual.proj": (c, s.embed),
    }
    for i in range(s.image_layers):
        p = f"visual.transformer.resblocks.{i}"
        for ln in ("ln_1", "ln_2"):
            shapes[f"{p}.{ln}.weight"] = shapes[f"{p}.{ln}.bias"] = (c,)
        for proj in ("q", "k", "v", "out_proj"):
            shapes[f"{p}.attn.{proj}.weight"] = (c, c)
            shapes[f"{p}.attn.{proj}.bias"] = (c,)
        shapes[f"{p}.mlp.c_fc.weight"], shapes[f"{p}.mlp.c_fc.bias"] = (4 * c, c), (4 * c,)
        shapes[f"{p}.mlp.c_proj.weight"], shapes[f"{p}.mlp.c_proj.bias"] = (c, 4 * c), (c,)
    return shapes


def seeded_clip_image_weights(s: ClipShape, seed: int) -> dict[str, Float32Array]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 12]))
    out: dict[str, Float32Array] = {}
    for name, shape in clip_image_weight_shapes(s).items():
        if name.endswith(("ln_1.weight", "ln_2.weight", "ln_pre.weight", "ln_post.weight")):
            out[name] = np.ones(shape, np.float32)
        elif name.endswith(".bias"):
            out[name] = np.zeros(shape, np.float32)
        else:  # N(0, 1/fan_in); proj is [in, out], the embeddings have no fan-in
            fan_in = {"visual.proj": shape[0], "visual.class_embedding": 1}.get(
                name, int(np.prod(shape[1:])) if len(shape) > 1 else 1
            )
            if name == "visual.positional_embedding":
                fan_in = 100
            out[name] = rng.standard_normal(shape, dtype=np.float32) * np.float32(
                1.0 / math.sqrt(fan_in)
            )
    return out


def clip_image_model(weights: Mapping[str, Float32Array], s: ClipShape) -> onnx.ModelProto:
    """pixels [N, 3, 224, 224], normalised as open_clip's transform normalises -> features
    [N, embed] (not yet unit length)."""
    w = LayerWriter(weights)
    c = s.image_width
    x = w.node(
        "Conv",
        [PIXELS, w.weight("visual.conv1.weight")],
        "patches",
        kernel_shape=[s.patch, s.patch],
        strides=[s.patch, s.patch],
    )
    x = w.node(
        "Transpose",
        [w.node("Reshape", [x, w.ints(0, c, -1)], "patches/flat")],
        "tokens",
        perm=[0, 2, 1],
    )
    cls = w.constant("cls", weights["visual.class_embedding"].reshape(1, 1, c))
    batch = w.node("Slice", [w.node("Shape", [x], "tokens/shape"), w.ints(0), w.ints(1)], "batch")
    cls = w.node(
        "Expand",
        [cls, w.node("Concat", [batch, w.ints(1, c)], "cls/shape", axis=0)],
        "cls/expanded",
    )
    x = w.node("Concat", [cls, x], "with_cls", axis=1)
    x = w.node("Add", [x, w.weight("visual.positional_embedding")], "positioned")
    x = w.layer_norm(x, "visual.ln_pre")
    for i in range(s.image_layers):
        p = f"visual.transformer.resblocks.{i}"
        names = PreNormNames(
            f"{p}.ln_1",
            f"{p}.attn.q",
            f"{p}.attn.k",
            f"{p}.attn.v",
            f"{p}.attn.out_proj",
            f"{p}.ln_2",
            f"{p}.mlp.c_fc",
            f"{p}.mlp.c_proj",
        )
        x = w.pre_norm_layer(x, names, s.image_heads, "quick_gelu")
    first = w.node("Gather", [x, w.constant("zero", np.array(0, np.int64))], "cls_token", axis=1)
    pooled = w.layer_norm(first, "visual.ln_post")
    w.node("MatMul", [pooled, w.weight("visual.proj")], FEATURES)
    graph = helper.make_graph(
        w.nodes,
        "clip_image",
        [
            helper.make_tensor_value_info(
                PIXELS, TensorProto.FLOAT, ["batch", 3, s.image_size, s.image_size]
            )
        ],
        [helper.make_tensor_value_info(FEATURES, TensorProto.FLOAT, ["batch", s.embed])],
        w.initializers,
    )
    model = make_model(graph, OPSET)
    onnx.checker.check_model(model)
    return model


def clip_text_model(
    weights: Mapping[str, Float32Array], s: ClipShape, end_id: int
) -> onnx.ModelProto:
    """input_ids [N, 77] -> `pooled` [N, embed]: open_clip's encode_text (its text tower is
    CLIPTextModelWithProjection's computation; the feature at the end token, the largest id)."""
    return text_encoder_model(weights, s.text, end_id, doc="CLIP ViT-B/32 text tower")
