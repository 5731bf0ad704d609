"""SDXL's four networks at any size, as ONNX graphs from weights named as in the published
checkpoints (`transformers` CLIPTextModel / CLIPTextModelWithProjection, `diffusers`
UNet2DConditionModel and AutoencoderKL's decoder), seeded where no weights are given.

What each graph computes, as SDXL base 1.0's configurations give it (text_encoder/config.json,
text_encoder_2/config.json, unet/config.json, vae/config.json):

- text encoders: token + position embedding, pre-LayerNorm transformer layers with a causal mask
  (quick_gelu in the first, CLIP ViT-L; gelu in the second, OpenCLIP bigG), outputs the hidden
  states after the penultimate layer (SDXL's `hidden_states[-2]`) and the pooled output: the final
  LayerNorm at the first end-of-text token, projected by `text_projection` in the second;
- UNet: sinusoidal time embedding (flip_sin_to_cos) through two Linear layers, plus SDXL's added
  condition (the pooled text embedding and the six size/crop time ids, each sinusoidally embedded)
  through two more; ResnetBlock2D (GroupNorm 32, SiLU, 3x3 convs, the time embedding added),
  Transformer2DModel with linear projections and BasicTransformerBlocks (self-attention,
  cross-attention on the text, GEGLU feed-forward); down and up blocks with skip connections;
- VAE decoder: post_quant_conv, a mid block (resnet, single-head attention, resnet), up blocks of
  resnets with nearest-neighbour 2x upsampling and a convolution, GroupNorm, SiLU, conv_out.

The stand-in keeps every kind of block at reduced width and depth (`SdxlShape`); the real sizes
are SDXL's own (`REAL_SIZE`), for the GPU engine's model classes (gpu_pipeline.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from mlperf_harness.onnx_layers import OPSET, Float32Array, LayerWriter, PreNormNames
from mlperf_harness.onnx_model import make_model

# Graph interfaces.
INPUT_IDS = "input_ids"
HIDDEN, POOLED = "hidden_states", "pooled"
SAMPLE, TIMESTEP, TEXT, TEXT_EMBEDS, TIME_IDS = (
    "sample",
    "timestep",
    "encoder_hidden_states",
    "text_embeds",
    "time_ids",
)
NOISE = "noise_pred"
LATENT, IMAGE = "latent", "image"
EOS_TOKEN = "eos_token_id"  # metadata: the end-of-text id the pooled output is taken at
MASK_VALUE = -1e9
GROUPS_EPS_UNET, GROUPS_EPS_VAE = 1e-5, 1e-6


@dataclass(frozen=True)
class TextShape:
    vocab: int
    width: int
    layers: int
    heads: int
    positions: int
    activation: str  # "quick_gelu" or "gelu"
    projection: int | None  # CLIPTextModelWithProjection's projection_dim; None: none


@dataclass(frozen=True)
class UnetShape:
    channels: tuple[int, ...]  # block_out_channels
    attention: tuple[bool, ...]  # which down blocks (and their mirrored up blocks) cross-attend
    transformer_depth: tuple[int, ...]
    layers_per_block: int
    head_dim: int
    groups: int
    cross_dim: int
    pooled_dim: int
    time_proj_dim: int  # addition_time_embed_dim
    latent_channels: int = 4


@dataclass(frozen=True)
class VaeShape:
    channels: tuple[int, ...]  # block_out_channels, encoder order (smallest first)
    layers_per_block: int
    groups: int
    latent_channels: int = 4


@dataclass(frozen=True)
class SdxlShape:
    text1: TextShape
    text2: TextShape
    unet: UnetShape
    vae: VaeShape
    latent_size: int  # latent height = width; the image is 8x larger (three upsamplers)
    vae_scaling_factor: float = 0.13025  # SDXL's VAE config

    @property
    def image_size(self) -> int:
        return int(self.latent_size * 2 ** (len(self.vae.channels) - 1))


CLIP_VOCAB = 49408
CONTEXT = 77
# SDXL base 1.0's sizes (its config.json files).
REAL_SIZE = SdxlShape(
    text1=TextShape(CLIP_VOCAB, 768, 12, 12, CONTEXT, "quick_gelu", None),
    text2=TextShape(CLIP_VOCAB, 1280, 32, 20, CONTEXT, "gelu", 1280),
    unet=UnetShape(
        channels=(320, 640, 1280),
        attention=(False, True, True),
        transformer_depth=(0, 2, 10),
        layers_per_block=2,
        head_dim=64,
        groups=32,
        cross_dim=2048,
        pooled_dim=1280,
        time_proj_dim=256,
    ),
    vae=VaeShape(channels=(128, 256, 512, 512), layers_per_block=2, groups=32),
    latent_size=128,
)


def stand_in_shape(vocab: int) -> SdxlShape:
    """Every kind of block, narrow and shallow: 64x64 images from 8x8 latents."""
    text1 = TextShape(vocab, 32, 2, 2, CONTEXT, "quick_gelu", None)
    text2 = TextShape(vocab, 48, 2, 2, CONTEXT, "gelu", 48)
    return SdxlShape(
        text1=text1,
        text2=text2,
        unet=UnetShape(
            channels=(32, 64),
            attention=(False, True),
            transformer_depth=(0, 1),
            layers_per_block=1,
            head_dim=16,
            groups=8,
            cross_dim=text1.width + text2.width,
            pooled_dim=48,
            time_proj_dim=8,
        ),
        vae=VaeShape(channels=(16, 16, 32, 32), layers_per_block=1, groups=8),
        latent_size=8,
    )


# --- weights ------------------------------------------------------------------------------------


class _Weights:
    """Seeded weights by checkpoint name: N(0, 1/fan_in) matrices, LayerNorm/GroupNorm at identity."""

    def __init__(self, seed: int, part: int) -> None:
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, part]))
        self.out: dict[str, Float32Array] = {}

    def linear(
        self, name: str, n_in: int, n_out: int, bias: bool = True, gain: float = 1.0
    ) -> None:
        w = self.rng.standard_normal((n_out, n_in), dtype=np.float32) * np.float32(
            gain / math.sqrt(n_in)
        )
        self.out[f"{name}.weight"] = w
        if bias:
            self.out[f"{name}.bias"] = np.zeros(n_out, np.float32)

    def conv(self, name: str, n_in: int, n_out: int, k: int, gain: float = 1.0) -> None:
        fan_in = n_in * k * k
        self.out[f"{name}.weight"] = self.rng.standard_normal(
            (n_out, n_in, k, k), dtype=np.float32
        ) * np.float32(gain / math.sqrt(fan_in))
        self.out[f"{name}.bias"] = np.zeros(n_out, np.float32)

    def norm(self, name: str, n: int) -> None:
        self.out[f"{name}.weight"] = np.ones(n, np.float32)
        self.out[f"{name}.bias"] = np.zeros(n, np.float32)

    def table(self, name: str, rows: int, cols: int, scale: float) -> None:
        self.out[name] = self.rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(
            scale
        )


def text_weights(shape: TextShape, seed: int, part: int) -> dict[str, Float32Array]:
    w = _Weights(seed, part)
    prefix = "text_model"
    w.table(f"{prefix}.embeddings.token_embedding.weight", shape.vocab, shape.width, 0.5)
    w.table(f"{prefix}.embeddings.position_embedding.weight", shape.positions, shape.width, 0.1)
    for i in range(shape.layers):
        p = f"{prefix}.encoder.layers.{i}"
        w.norm(f"{p}.layer_norm1", shape.width)
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            w.linear(
                f"{p}.self_attn.{proj}",
                shape.width,
                shape.width,
                gain=0.5 if proj == "out_proj" else 1.0,
            )
        w.norm(f"{p}.layer_norm2", shape.width)
        w.linear(f"{p}.mlp.fc1", shape.width, 4 * shape.width)
        w.linear(f"{p}.mlp.fc2", 4 * shape.width, shape.width, gain=0.5)
    w.norm(f"{prefix}.final_layer_norm", shape.width)
    if shape.projection is not None:
        w.linear("text_projection", shape.width, shape.projection, bias=False)
    return w.out


def _resnet_weights(w: _Weights, p: str, n_in: int, n_out: int, temb: int | None) -> None:
    w.norm(f"{p}.norm1", n_in)
    w.conv(f"{p}.conv1", n_in, n_out, 3)
    if temb is not None:
        w.linear(f"{p}.time_emb_proj", temb, n_out)
    w.norm(f"{p}.norm2", n_out)
    w.conv(f"{p}.conv2", n_out, n_out, 3, gain=0.5)
    if n_in != n_out:
        w.conv(f"{p}.conv_shortcut", n_in, n_out, 1)


def _transformer_weights(w: _Weights, p: str, c: int, depth: int, cross: int) -> None:
    w.norm(f"{p}.norm", c)
    w.linear(f"{p}.proj_in", c, c)
    for d in range(depth):
        b = f"{p}.transformer_blocks.{d}"
        for n in ("norm1", "norm2", "norm3"):
            w.norm(f"{b}.{n}", c)
        for attn, kv_dim in (("attn1", c), ("attn2", cross)):
            w.linear(f"{b}.{attn}.to_q", c, c, bias=False)
            w.linear(f"{b}.{attn}.to_k", kv_dim, c, bias=False)
            w.linear(f"{b}.{attn}.to_v", kv_dim, c, bias=False)
            w.linear(f"{b}.{attn}.to_out.0", c, c, gain=0.5)
        w.linear(f"{b}.ff.net.0.proj", c, 8 * c)
        w.linear(f"{b}.ff.net.2", 4 * c, c, gain=0.5)
    w.linear(f"{p}.proj_out", c, c, gain=0.5)


def _unet_plan(u: UnetShape) -> tuple[list[int], list[list[tuple[int, int]]]]:
    """The skip connections' channels (in push order) and each up block's (in, out) resnets."""
    skips = [u.channels[0]]
    for i, c in enumerate(u.channels):
        skips += [c] * u.layers_per_block
        if i < len(u.channels) - 1:
            skips.append(c)
    stack = list(skips)
    x = u.channels[-1]
    ups: list[list[tuple[int, int]]] = []
    for c in reversed(u.channels):
        block = []
        for _ in range(u.layers_per_block + 1):
            block.append((x + stack.pop(), c))
            x = c
        ups.append(block)
    return skips, ups


def unet_weights(u: UnetShape, seed: int) -> dict[str, Float32Array]:
    w = _Weights(seed, 3)
    temb = 4 * u.channels[0]
    w.conv("conv_in", u.latent_channels, u.channels[0], 3)
    w.linear("time_embedding.linear_1", u.channels[0], temb)
    w.linear("time_embedding.linear_2", temb, temb)
    w.linear("add_embedding.linear_1", u.pooled_dim + 6 * u.time_proj_dim, temb)
    w.linear("add_embedding.linear_2", temb, temb)
    x = u.channels[0]
    for i, c in enumerate(u.channels):
        for j in range(u.layers_per_block):
            _resnet_weights(w, f"down_blocks.{i}.resnets.{j}", x, c, temb)
            x = c
            if u.attention[i]:
                _transformer_weights(
                    w, f"down_blocks.{i}.attentions.{j}", c, u.transformer_depth[i], u.cross_dim
                )
        if i < len(u.channels) - 1:
            w.conv(f"down_blocks.{i}.downsamplers.0.conv", c, c, 3)
    c = u.channels[-1]
    _resnet_weights(w, "mid_block.resnets.0", c, c, temb)
    _transformer_weights(w, "mid_block.attentions.0", c, u.transformer_depth[-1], u.cross_dim)
    _resnet_weights(w, "mid_block.resnets.1", c, c, temb)
    _, ups = _unet_plan(u)
    levels = len(u.channels)
    for i, block in enumerate(ups):
        level = levels - 1 - i
        for j, (n_in, n_out) in enumerate(block):
            _resnet_weights(w, f"up_blocks.{i}.resnets.{j}", n_in, n_out, temb)
            if u.attention[level]:
                _transformer_weights(
                    w,
                    f"up_blocks.{i}.attentions.{j}",
                    n_out,
                    u.transformer_depth[level],
                    u.cross_dim,
                )
        if i < levels - 1:
            w.conv(f"up_blocks.{i}.upsamplers.0.conv", n_out, n_out, 3)
    w.norm("conv_norm_out", u.channels[0])
    w.conv("conv_out", u.channels[0], u.latent_channels, 3, gain=0.5)
    return w.out


def vae_decoder_weights(v: VaeShape, seed: int) -> dict[str, Float32Array]:
    w = _Weights(seed, 4)
    top = v.channels[-1]
    w.conv("post_quant_conv", v.latent_channels, v.latent_channels, 1)
    w.conv("decoder.conv_in", v.latent_channels, top, 3)
    _resnet_weights(w, "decoder.mid_block.resnets.0", top, top, None)
    w.norm("decoder.mid_block.attentions.0.group_norm", top)
    for proj in ("to_q", "to_k", "to_v", "to_out.0"):
        w.linear(
            f"decoder.mid_block.attentions.0.{proj}",
            top,
            top,
            gain=0.5 if proj == "to_out.0" else 1.0,
        )
    _resnet_weights(w, "decoder.mid_block.resnets.1", top, top, None)
    x = top
    reversed_channels = list(reversed(v.channels))
    for i, c in enumerate(reversed_channels):
        for j in range(v.layers_per_block + 1):
            _resnet_weights(w, f"decoder.up_blocks.{i}.resnets.{j}", x, c, None)
            x = c
        if i < len(v.channels) - 1:
            w.conv(f"decoder.up_blocks.{i}.upsamplers.0.conv", c, c, 3)
    w.norm("decoder.conv_norm_out", v.channels[0])
    w.conv("decoder.conv_out", v.channels[0], 3, 3)
    return w.out


# --- graphs -------------------------------------------------------------------------------------


class _Writer(LayerWriter):
    def resnet(self, x: str, p: str, groups: int, eps: float, temb: str | None) -> str:
        h = self.conv(
            self.silu(self.group_norm(x, f"{p}.norm1", groups, eps), f"{p}/a1"), f"{p}.conv1"
        )
        if temb is not None:
            t = self.linear(temb, f"{p}.time_emb_proj")
            t = self.node("Unsqueeze", [t, self.ints(2, 3)], f"{p}/temb")
            h = self.node("Add", [h, t], f"{p}/plus_temb")
        h = self.conv(
            self.silu(self.group_norm(h, f"{p}.norm2", groups, eps), f"{p}/a2"), f"{p}.conv2"
        )
        shortcut = (
            self.conv(x, f"{p}.conv_shortcut") if f"{p}.conv_shortcut.weight" in self.weights else x
        )
        return self.node("Add", [shortcut, h], f"{p}/out")

    def to_tokens(self, x: str, p: str) -> tuple[str, str]:
        """[N, C, H, W] -> [N, H*W, C], and the shape to come back to."""
        shape = self.node("Shape", [x], f"{p}/shape4")
        flat = self.node("Reshape", [x, self.ints(0, 0, -1)], f"{p}/flat")
        return self.node("Transpose", [flat], f"{p}/tokens", perm=[0, 2, 1]), shape

    def from_tokens(self, t: str, shape: str, p: str) -> str:
        back = self.node("Transpose", [t], f"{p}/chw", perm=[0, 2, 1])
        return self.node("Reshape", [back, shape], f"{p}/image")

    def transformer(self, x: str, p: str, u: UnetShape, depth: int, text: str) -> str:
        c = int(self.weights[f"{p}.proj_in.weight"].shape[0])
        heads = c // u.head_dim
        h = self.group_norm(x, f"{p}.norm", u.groups, 1e-6)
        t, shape = self.to_tokens(h, p)
        t = self.linear(t, f"{p}.proj_in")
        for d in range(depth):
            b = f"{p}.transformer_blocks.{d}"
            for attn, norm in (("attn1", "norm1"), ("attn2", "norm2")):
                n = self.layer_norm(t, f"{b}.{norm}")
                context = n if attn == "attn1" else text
                a = self.attention(
                    n,
                    context,
                    heads,
                    u.head_dim,
                    f"{b}.{attn}.to_q",
                    f"{b}.{attn}.to_k",
                    f"{b}.{attn}.to_v",
                    f"{b}.{attn}.to_out.0",
                    bias=False,
                )
                t = self.node("Add", [t, a], f"{b}/{attn}/res")
            n = self.layer_norm(t, f"{b}.norm3")
            proj = self.linear(n, f"{b}.ff.net.0.proj")
            hidden, gate = f"{b}/ff/hidden", f"{b}/ff/gate"
            self.nodes.append(
                helper.make_node(
                    "Split",
                    [proj, self.ints(4 * c, 4 * c)],
                    [hidden, gate],
                    name=f"{b}/ff/split",
                    axis=-1,
                )
            )
            geglu = self.node("Mul", [hidden, self.gelu(gate, f"{b}/ff/g")], f"{b}/ff/geglu")
            t = self.node("Add", [t, self.linear(geglu, f"{b}.ff.net.2")], f"{b}/ff/res")
        t = self.linear(t, f"{p}.proj_out")
        return self.node("Add", [self.from_tokens(t, shape, p), x], f"{p}/out")

    def upsample(self, x: str, p: str) -> str:
        scales = self.constant(f"{p}/scales", np.array([1, 1, 2, 2], np.float32))
        up = self.node("Resize", [x, "", scales], f"{p}/nearest", mode="nearest")
        return self.conv(up, f"{p}.conv")


def _timestep_embedding(w: _Writer, t: str, dim: int, name: str) -> str:
    """diffusers' Timesteps(dim, flip_sin_to_cos=True, downscale_freq_shift=0): [cos, sin] of
    t x exp(-ln(10000) i / (dim / 2)); `t` [N] or [N, k] -> [N, dim] or [N, k, dim]."""
    half = dim // 2
    freqs = np.exp(
        -math.log(10000.0) * np.arange(half, dtype=np.float32) / np.float32(half)
    ).astype(np.float32)
    args = w.node(
        "Mul",
        [w.node("Unsqueeze", [t, w.ints(-1)], f"{name}/t"), w.constant(f"{name}/freqs", freqs)],
        f"{name}/args",
    )
    return w.node(
        "Concat",
        [w.node("Cos", [args], f"{name}/cos"), w.node("Sin", [args], f"{name}/sin")],
        f"{name}/emb",
        axis=-1,
    )


def text_encoder_model(
    weights: Mapping[str, Float32Array], shape: TextShape, eos_token: int, doc: str = ""
) -> onnx.ModelProto:
    """input_ids [N, 77] int64 -> hidden_states [N, 77, width] (after the penultimate layer),
    pooled [N, projection or width]."""
    w = _Writer(weights)
    p = "text_model"
    x = w.node("Gather", [w.weight(f"{p}.embeddings.token_embedding.weight"), INPUT_IDS], "tok")
    x = w.node("Add", [x, w.weight(f"{p}.embeddings.position_embedding.weight")], "embedded")
    causal = np.triu(np.full((shape.positions, shape.positions), MASK_VALUE, np.float32), 1)
    mask = w.constant("causal_mask", causal)
    penultimate = x
    for i in range(shape.layers):
        if i == shape.layers - 1:
            penultimate = x
        lp = f"{p}.encoder.layers.{i}"
        names = PreNormNames(
            f"{lp}.layer_norm1",
            f"{lp}.self_attn.q_proj",
            f"{lp}.self_attn.k_proj",
            f"{lp}.self_attn.v_proj",
            f"{lp}.self_attn.out_proj",
            f"{lp}.layer_norm2",
            f"{lp}.mlp.fc1",
            f"{lp}.mlp.fc2",
        )
        x = w.pre_norm_layer(x, names, shape.heads, shape.activation, mask)
    w.node("Identity", [penultimate], HIDDEN)
    final = w.layer_norm(x, f"{p}.final_layer_norm")
    # The first end-of-text token of each row: ArgMax of (ids == eos) picks the first maximum.
    is_eos = w.node(
        "Cast",
        [w.node("Equal", [INPUT_IDS, w.constant("eos", np.array(eos_token, np.int64))], "is_eos")],
        "is_eos_i",
        to=TensorProto.INT32,
    )
    position = w.node("ArgMax", [is_eos], "eos_position", axis=1, keepdims=1, select_last_index=0)
    index = w.node("Unsqueeze", [position, w.ints(2)], "eos_index")
    width_index = w.node(
        "Expand",
        [
            index,
            w.node(
                "Concat",
                [w.node("Shape", [position], "b_shape"), w.ints(shape.width)],
                "idx_shape",
                axis=0,
            ),
        ],
        "eos_index_w",
    )
    pooled = w.node(
        "Squeeze",
        [w.node("GatherElements", [final, width_index], "pooled3", axis=1), w.ints(1)],
        "pooled_raw",
    )
    if shape.projection is not None:
        pooled = w.linear(pooled, "text_projection", bias=False)
    w.node("Identity", [pooled], POOLED)
    graph = helper.make_graph(
        w.nodes,
        "clip_text",
        [helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", shape.positions])],
        [
            helper.make_tensor_value_info(
                HIDDEN, TensorProto.FLOAT, ["batch", shape.positions, shape.width]
            ),
            helper.make_tensor_value_info(
                POOLED, TensorProto.FLOAT, ["batch", shape.projection or shape.width]
            ),
        ],
        w.initializers,
    )
    return _finish(graph, doc, {EOS_TOKEN: str(eos_token)})


def unet_model(weights: Mapping[str, Float32Array], u: UnetShape, doc: str = "") -> onnx.ModelProto:
    """sample [N, 4, h, w], timestep [N], encoder_hidden_states [N, 77, cross], text_embeds
    [N, pooled], time_ids [N, 6] -> noise_pred [N, 4, h, w]."""
    w = _Writer(weights)
    eps = GROUPS_EPS_UNET
    temb = _timestep_embedding(w, TIMESTEP, u.channels[0], "time_proj")
    temb = w.linear(
        w.silu(w.linear(temb, "time_embedding.linear_1"), "temb/act"), "time_embedding.linear_2"
    )
    ids = _timestep_embedding(w, TIME_IDS, u.time_proj_dim, "add_time_proj")  # [N, 6, d]
    ids = w.node("Reshape", [ids, w.ints(0, -1)], "add_time_flat")
    added = w.node("Concat", [TEXT_EMBEDS, ids], "add_in", axis=-1)
    added = w.linear(
        w.silu(w.linear(added, "add_embedding.linear_1"), "add/act"), "add_embedding.linear_2"
    )
    emb = w.silu(
        w.node("Add", [temb, added], "emb"), "emb/act"
    )  # each resnet's time_emb_proj input
    x = w.conv(SAMPLE, "conv_in")
    skips = [x]
    for i, _ in enumerate(u.channels):
        for j in range(u.layers_per_block):
            x = w.resnet(x, f"down_blocks.{i}.resnets.{j}", u.groups, eps, emb)
            if u.attention[i]:
                x = w.transformer(
                    x, f"down_blocks.{i}.attentions.{j}", u, u.transformer_depth[i], TEXT
                )
            skips.append(x)
        if i < len(u.channels) - 1:
            x = w.conv(x, f"down_blocks.{i}.downsamplers.0.conv", stride=2)
            skips.append(x)
    x = w.resnet(x, "mid_block.resnets.0", u.groups, eps, emb)
    x = w.transformer(x, "mid_block.attentions.0", u, u.transformer_depth[-1], TEXT)
    x = w.resnet(x, "mid_block.resnets.1", u.groups, eps, emb)
    levels = len(u.channels)
    for i in range(levels):
        level = levels - 1 - i
        for j in range(u.layers_per_block + 1):
            x = w.node("Concat", [x, skips.pop()], f"up_blocks.{i}/cat{j}", axis=1)
            x = w.resnet(x, f"up_blocks.{i}.resnets.{j}", u.groups, eps, emb)
            if u.attention[level]:
                x = w.transformer(
                    x, f"up_blocks.{i}.attentions.{j}", u, u.transformer_depth[level], TEXT
                )
        if i < levels - 1:
            x = w.upsample(x, f"up_blocks.{i}.upsamplers.0")
    x = w.conv(w.silu(w.group_norm(x, "conv_norm_out", u.groups, eps), "out/act"), "conv_out")
    w.node("Identity", [x], NOISE)
    latent: list[str | int] = ["batch", u.latent_channels, "h", "w"]
    graph = helper.make_graph(
        w.nodes,
        "sdxl_unet",
        [
            helper.make_tensor_value_info(SAMPLE, TensorProto.FLOAT, latent),
            helper.make_tensor_value_info(TIMESTEP, TensorProto.FLOAT, ["batch"]),
            helper.make_tensor_value_info(TEXT, TensorProto.FLOAT, ["batch", CONTEXT, u.cross_dim]),
            helper.make_tensor_value_info(TEXT_EMBEDS, TensorProto.FLOAT, ["batch", u.pooled_dim]),
            helper.make_tensor_value_info(TIME_IDS, TensorProto.FLOAT, ["batch", 6]),
        ],
        [helper.make_tensor_value_info(NOISE, TensorProto.FLOAT, latent)],
        w.initializers,
    )
    return _finish(graph, doc)


def vae_decoder_model(
    weights: Mapping[str, Float32Array], v: VaeShape, doc: str = ""
) -> onnx.ModelProto:
    """latent [N, 4, h, w] (already divided by the scaling factor) -> image [N, 3, 8h, 8w] in
    about [-1, 1]."""
    w = _Writer(weights)
    eps = GROUPS_EPS_VAE
    top = v.channels[-1]
    x = w.conv(w.conv(LATENT, "post_quant_conv"), "decoder.conv_in")
    x = w.resnet(x, "decoder.mid_block.resnets.0", v.groups, eps, None)
    p = "decoder.mid_block.attentions.0"
    h = w.group_norm(x, f"{p}.group_norm", v.groups, eps)
    t, shape = w.to_tokens(h, p)
    a = w.attention(t, t, 1, top, f"{p}.to_q", f"{p}.to_k", f"{p}.to_v", f"{p}.to_out.0", bias=True)
    x = w.node("Add", [w.from_tokens(a, shape, p), x], f"{p}/out")
    x = w.resnet(x, "decoder.mid_block.resnets.1", v.groups, eps, None)
    for i in range(len(v.channels)):
        for j in range(v.layers_per_block + 1):
            x = w.resnet(x, f"decoder.up_blocks.{i}.resnets.{j}", v.groups, eps, None)
        if i < len(v.channels) - 1:
            x = w.upsample(x, f"decoder.up_blocks.{i}.upsamplers.0")
    x = w.conv(
        w.silu(w.group_norm(x, "decoder.conv_norm_out", v.groups, eps), "out/act"),
        "decoder.conv_out",
    )
    w.node("Identity", [x], IMAGE)
    graph = helper.make_graph(
        w.nodes,
        "sdxl_vae_decoder",
        [
            helper.make_tensor_value_info(
                LATENT, TensorProto.FLOAT, ["batch", v.latent_channels, "h", "w"]
            )
        ],
        [helper.make_tensor_value_info(IMAGE, TensorProto.FLOAT, ["batch", 3, "H", "W"])],
        w.initializers,
    )
    return _finish(graph, doc)


def _finish(
    graph: onnx.GraphProto, doc: str, metadata: Mapping[str, str] | None = None
) -> onnx.ModelProto:
    model = make_model(graph, OPSET, doc=doc, metadata=metadata)
    onnx.checker.check_model(model)
    return model
