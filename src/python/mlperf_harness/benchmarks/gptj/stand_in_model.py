"""GPT-J's architecture at any size: its weights by Hugging Face name, a NumPy forward, and the same
network written as ONNX with a KV cache, so one graph serves prefill and decode.

The architecture, as Hugging Face's `modeling_gptj.py` and GPT-J 6B's config.json give it (the
config read from copies of EleutherAI/gpt-j-6B's config.json: n_embd 4096, n_head 16, n_layer 28,
n_positions 2048, rotary_dim 64, vocab_size 50400, layer_norm_epsilon 1e-5, gelu_new, n_inner null
= 4 x n_embd):

- token embedding `transformer.wte`, no position embedding: position enters only through rotary;
- per block ONE LayerNorm `ln_1` whose output feeds attention and MLP in parallel:
  x = x + attn(ln_1(x)) + mlp(ln_1(x));
- attention: q, k, v and out projections WITHOUT biases; rotary position embedding on the first
  `rotary_dim` dims of each head of q and k, in GPT-J's interleaved form (`rotate_every_two`: pairs
  (2i, 2i+1) rotate by position x 10000^(-2i / rotary_dim)); scores divided by sqrt(head_dim),
  causal mask, softmax in float32;
- MLP: fc_in (with bias), gelu_new (GPT-2's tanh approximation), fc_out (with bias);
- final LayerNorm `ln_f`, then `lm_head` WITH bias (GPT-J's is untied and has one).

Weights use the checkpoint's names and PyTorch's Linear layout ([out, in]): `checkpoint_layout`
maps the official state dict onto them by name alone.

The ONNX graph's interface is the one Hugging Face's ONNX export of a decoder with past uses:
inputs `input_ids` [batch, new], `position_ids` [batch, new], `attention_mask` [batch, past + new]
(1 = attend), and per layer `past_key_values.{i}.key` / `.value` [batch, heads, past, head_dim];
outputs `logits` [batch, new, vocab] and `present.{i}.key` / `.value` [batch, heads, past + new,
head_dim]. Prefill passes past length 0; each decode step passes the previous presents.

Rotary is applied to the whole head with cos = 1, sin = 0 beyond `rotary_dim`, and
`rotate_every_two` is a MatMul with a signed permutation: exact in float32, no Split/Concat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation import decoder_graph
from mlperf_harness.generation.decoder_graph import (
    ATTENTION_MASK,
    INPUT_IDS,
    LOGITS,
    MASK_VALUE,
    POSITION_IDS,
    DecoderGraphWriter,
    Forward,
    attention_bias,
    past_key,
    past_value,
    present_key,
    present_value,
)

Float32Array = npt.NDArray[np.float32]
Int64Array = npt.NDArray[np.int64]

OPSET = 17  # LayerNormalization
LAYER_NORM_EPSILON = 1e-5  # GPT-J's
ROTARY_BASE = 10_000.0


@dataclass(frozen=True)
class GptjShape:
    layers: int
    hidden: int
    heads: int
    rotary_dim: int
    vocab_size: int
    inner: int  # MLP width; GPT-J: 4 x hidden
    max_positions: int = 2048

    def check(self) -> None:
        if min(self.layers, self.hidden, self.heads, self.vocab_size, self.inner) < 1:
            raise HarnessError(f"every GPT-J size must be at least 1, got {self}")
        if self.hidden % self.heads:
            raise HarnessError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        if self.rotary_dim % 2 or not 0 < self.rotary_dim <= self.head_dim:
            raise HarnessError(
                f"rotary_dim {self.rotary_dim} must be even and in (0, head_dim {self.head_dim}]"
            )

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


GPTJ_6B = GptjShape(layers=28, hidden=4096, heads=16, rotary_dim=64, vocab_size=50400, inner=16384)


def weight_shapes(shape: GptjShape) -> dict[str, tuple[int, ...]]:
    """Every parameter by its Hugging Face name, in PyTorch's layout ([out, in] for Linear)."""
    d, f, v = shape.hidden, shape.inner, shape.vocab_size
    shapes: dict[str, tuple[int, ...]] = {"transformer.wte.weight": (v, d)}
    for i in range(shape.layers):
        p = f"transformer.h.{i}"
        shapes[f"{p}.ln_1.weight"] = (d,)
        shapes[f"{p}.ln_1.bias"] = (d,)
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            shapes[f"{p}.attn.{name}.weight"] = (d, d)
        shapes[f"{p}.mlp.fc_in.weight"] = (f, d)
        shapes[f"{p}.mlp.fc_in.bias"] = (f,)
        shapes[f"{p}.mlp.fc_out.weight"] = (d, f)
        shapes[f"{p}.mlp.fc_out.bias"] = (d,)
    shapes["transformer.ln_f.weight"] = (d,)
    shapes["transformer.ln_f.bias"] = (d,)
    shapes["lm_head.weight"] = (v, d)
    shapes["lm_head.bias"] = (v,)
    return shapes


def random_weights(shape: GptjShape, seed: int) -> dict[str, Float32Array]:
    """Seeded weights of GPT-J's initialisation scale (normal, std 0.02; LayerNorms 1 and 0), with
    LayerNorm and bias values drawn too so that tests exercise every term."""
    shape.check()
    rng = np.random.default_rng(np.random.SeedSequence([seed]))
    weights: dict[str, Float32Array] = {}
    for name, dims in weight_shapes(shape).items():
        if name.endswith("ln_1.weight") or name.endswith("ln_f.weight"):
            value = 1.0 + 0.1 * rng.standard_normal(dims)
        elif name == "transformer.wte.weight":
            value = rng.standard_normal(dims)
        else:
            value = 0.02 * rng.standard_normal(dims) * (10.0 if len(dims) == 2 else 1.0)
        weights[name] = value.astype(np.float32)
    return weights


def check_weights(weights: Mapping[str, npt.NDArray[Any]], shape: GptjShape) -> None:
    decoder_graph.check_weights(weights, weight_shapes(shape), "GPT-J")


# ---------------------------------------------------------------------------------------------------
# Rotary tables, shared by the graph and the NumPy forward


def rotary_tables(shape: GptjShape) -> tuple[Float32Array, Float32Array]:
    """cos and sin [max_positions, head_dim]: GPT-J's sinusoids repeated for each pair (2i, 2i+1),
    then cos 1 / sin 0 on the head's dims past rotary_dim (they pass through unrotated)."""
    half = shape.rotary_dim // 2
    inv_freq = 1.0 / (ROTARY_BASE ** (np.arange(0, shape.rotary_dim, 2) / shape.rotary_dim))
    # float32 products, as create_sinusoidal_positions computes them
    angles = (
        np.arange(shape.max_positions, dtype=np.float32)[:, None]
        * inv_freq.astype(np.float32)[None, :]
    )
    cos = np.ones((shape.max_positions, shape.head_dim), np.float32)
    sin = np.zeros((shape.max_positions, shape.head_dim), np.float32)
    cos[:, : 2 * half] = np.repeat(np.cos(angles), 2, axis=1)
    sin[:, : 2 * half] = np.repeat(np.sin(angles), 2, axis=1)
    return cos, sin


def rotate_every_two_matrix(head_dim: int, rotary_dim: int) -> Float32Array:
    """R with (x @ R)[2i] = -x[2i+1] and (x @ R)[2i+1] = x[2i] on the rotary dims, 0 elsewhere."""
    r = np.zeros((head_dim, head_dim), np.float32)
    for i in range(rotary_dim // 2):
        r[2 * i + 1, 2 * i] = -1.0
        r[2 * i, 2 * i + 1] = 1.0
    return r


# ---------------------------------------------------------------------------------------------------
# The NumPy forward: the reference the graph is checked against, and the build's feature extractor


def layer_norm(x: Float32Array, weight: Float32Array, bias: Float32Array) -> Float32Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: Float32Array = (x - mean) / np.sqrt(var + np.float32(LAYER_NORM_EPSILON)) * weight + bias
    return out


def gelu_new(x: Float32Array) -> Float32Array:
    c = np.float32(np.sqrt(2.0 / np.pi))
    out: Float32Array = (
        np.float32(0.5) * x * (1 + np.tanh(c * (x + np.float32(0.044715) * (x * x * x))))
    )
    return out


def apply_rotary(
    x: Float32Array, positions: Int64Array, tables: tuple[Float32Array, Float32Array]
) -> Float32Array:
    """x [batch, new, heads, head_dim] rotated by its tokens' positions [batch, new]."""
    cos, sin = (table[positions][:, :, None, :] for table in tables)
    rotated = np.empty_like(x)
    rotated[..., 0::2] = -x[..., 1::2]
    rotated[..., 1::2] = x[..., 0::2]  # past rotary_dim, sin is 0: those dims pass unrotated
    return np.asarray(x * cos + rotated * sin, dtype=np.float32)


def numpy_forward(
    weights: Mapping[str, Float32Array],
    shape: GptjShape,
    input_ids: Int64Array,
    position_ids: Int64Array,
    attention_mask: Int64Array,
    past: Sequence[decoder_graph.KeyValue] | None = None,
    upto: int | None = None,
) -> Forward:
    """The same computation as the ONNX graph, in float32 NumPy. With `upto`, only the input of
    block `upto` is computed (hidden[upto]; no logits): what a fit of that block needs."""
    batch, new = input_ids.shape
    h, hd = shape.heads, shape.head_dim
    tables = rotary_tables(shape)
    bias = attention_bias(attention_mask, new)

    def block(i: int, x: Float32Array) -> tuple[Float32Array, decoder_graph.KeyValue]:
        p = f"transformer.h.{i}"
        a = layer_norm(x, weights[f"{p}.ln_1.weight"], weights[f"{p}.ln_1.bias"])

        def heads(name: str) -> Float32Array:
            y: Float32Array = (a @ weights[f"{p}.attn.{name}.weight"].T).reshape(batch, new, h, hd)
            return y

        q = apply_rotary(heads("q_proj"), position_ids, tables).transpose(0, 2, 1, 3)
        k = apply_rotary(heads("k_proj"), position_ids, tables).transpose(0, 2, 1, 3)
        k, v = decoder_graph.with_past(k, heads("v_proj").transpose(0, 2, 1, 3), past, i)
        probs = decoder_graph.softmax(
            (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(hd)) + bias
        )
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, new, shape.hidden)
        attn = context @ weights[f"{p}.attn.out_proj.weight"].T
        inner = gelu_new(a @ weights[f"{p}.mlp.fc_in.weight"].T + weights[f"{p}.mlp.fc_in.bias"])
        mlp = inner @ weights[f"{p}.mlp.fc_out.weight"].T + weights[f"{p}.mlp.fc_out.bias"]
        return x + attn + mlp, (k, v)

    def head(x: Float32Array) -> Float32Array:
        final = layer_norm(x, weights["transformer.ln_f.weight"], weights["transformer.ln_f.bias"])
        logits: Float32Array = final @ weights["lm_head.weight"].T + weights["lm_head.bias"]
        return logits

    return decoder_graph.run_blocks(
        weights["transformer.wte.weight"][input_ids], shape.layers, block, head, upto
    )


# ---------------------------------------------------------------------------------------------------
# The ONNX graph


class _GraphWriter(DecoderGraphWriter):
    def __init__(self, weights: Mapping[str, Float32Array], shape: GptjShape) -> None:
        super().__init__(weights)
        self.shape = shape

    def layer_norm(self, x: str, name: str) -> str:
        gamma = self.constant(f"{name}.weight", self.weights[f"{name}.weight"])
        beta = self.constant(f"{name}.bias", self.weights[f"{name}.bias"])
        return self.node(
            "LayerNormalization",
            [x, gamma, beta],
            f"{name}/out",
            axis=-1,
            epsilon=LAYER_NORM_EPSILON,
        )

    def gelu_new(self, x: str, p: str) -> str:
        c = self.constant(f"{p}/c", np.array(np.sqrt(2.0 / np.pi), np.float32))
        k = self.constant(f"{p}/k", np.array(0.044715, np.float32))
        one = self.constant(f"{p}/one", np.array(1.0, np.float32))
        half = self.constant(f"{p}/half", np.array(0.5, np.float32))
        cube = self.node("Mul", [self.node("Mul", [x, x], f"{p}/sq"), x], f"{p}/cube")
        inner = self.node("Add", [x, self.node("Mul", [cube, k], f"{p}/kcube")], f"{p}/inner")
        t = self.node("Tanh", [self.node("Mul", [inner, c], f"{p}/scaled")], f"{p}/tanh")
        y = self.node("Mul", [x, self.node("Add", [t, one], f"{p}/onep")], f"{p}/xt")
        return self.node("Mul", [y, half], f"{p}/out")

    def attention(self, a: str, layer: int, cos: str, sin: str, bias: str) -> str:
        s = self.shape
        p = f"transformer.h.{layer}.attn"
        split = self.constant(f"{p}/split", np.array([0, 0, s.heads, s.head_dim], np.int64))
        rotate = self.constant(f"{p}/rotate", rotate_every_two_matrix(s.head_dim, s.rotary_dim))

        def heads(name: str, rotary: bool) -> str:
            y = self.node(
                "Reshape", [self.linear(a, f"{p}.{name}", bias=False), split], f"{p}/{name}/heads"
            )
            if rotary:  # x * cos + rotate_every_two(x) * sin
                y = self.rotary(y, rotate, cos, sin, f"{p}/{name}")
            return self.node("Transpose", [y], f"{p}/{name}/bhsd", perm=[0, 2, 1, 3])

        q = heads("q_proj", True)
        k = self.node(
            "Concat", [past_key(layer), heads("k_proj", True)], present_key(layer), axis=2
        )
        v = self.node(
            "Concat", [past_value(layer), heads("v_proj", False)], present_value(layer), axis=2
        )
        kt = self.node("Transpose", [k], f"{p}/kt", perm=[0, 1, 3, 2])
        scale = self.constant(f"{p}/scale", np.array(np.sqrt(s.head_dim), np.float32))
        scores = self.node("Div", [self.node("MatMul", [q, kt], f"{p}/qk"), scale], f"{p}/scaled")
        scores = self.node("Add", [scores, bias], f"{p}/masked")
        probs = self.node("Softmax", [scores], f"{p}/probs", axis=-1)
        context = self.node("MatMul", [probs, v], f"{p}/context")
        return self.merge_heads(context, s.hidden, f"{p}.out_proj", p)

    def graph(self) -> onnx.GraphProto:
        s = self.shape
        x = self.embed("transformer.wte.weight")
        cos, sin = self.rotary_inputs(rotary_tables(s))
        bias = self.mask_bias()
        for i in range(s.layers):
            p = f"transformer.h.{i}"
            a = self.layer_norm(x, f"{p}.ln_1")
            attn = self.attention(a, i, cos, sin, bias)
            inner = self.gelu_new(self.linear(a, f"{p}.mlp.fc_in", bias=True), f"{p}.mlp.gelu")
            mlp = self.linear(inner, f"{p}.mlp.fc_out", bias=True)
            x = self.node(
                "Add", [self.node("Add", [x, attn], f"{p}/attn_residual"), mlp], f"{p}/out"
            )
        final = self.layer_norm(x, "transformer.ln_f")
        logits = self.linear(final, "lm_head", bias=True)
        return self.finish_graph(
            logits, "gptj_stand_in", s.layers, s.heads, s.head_dim, s.vocab_size
        )


def gptj_model(
    weights: Mapping[str, Float32Array],
    shape: GptjShape,
    doc: str = "",
    metadata: Mapping[str, str] | None = None,
) -> onnx.ModelProto:
    """GPT-J with a KV cache as ONNX (the module docstring gives the interface)."""
    shape.check()
    check_weights(weights, shape)
    return decoder_graph.checked_model(_GraphWriter(weights, shape).graph(), OPSET, doc, metadata)


__all__ = [  # the graph's interface, named here for GPT-J's callers
    "ATTENTION_MASK",
    "INPUT_IDS",
    "LOGITS",
    "MASK_VALUE",
    "POSITION_IDS",
    "attention_bias",
    "past_key",
    "past_value",
    "present_key",
    "present_value",
]
