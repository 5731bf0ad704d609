"""Llama 2's architecture at any size: its weights by Hugging Face name, a NumPy forward, and the
same network written as ONNX with a KV cache (one graph for prefill and decode), the interface the
GPT-J stand-in's graph has, so that generation/step_engine.StepModelEngine drives both.

The architecture, as Hugging Face's `modeling_llama.py` and Llama-2-70b-chat-hf's config.json give
it (hidden_size 8192, num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8,
intermediate_size 28672, rms_norm_eps 1e-5, rope_theta 10000, vocab_size 32000,
max_position_embeddings 4096, hidden_act silu, no biases, untied lm_head):

- token embedding `model.embed_tokens`, no position embedding: position enters through rotary;
- per block, in sequence: h = x + attn(input_layernorm(x)); out = h + mlp(post_attention_layernorm(h)),
  both norms RMSNorm (x / sqrt(mean(x^2) + eps) * weight, no bias);
- attention: q, k, v, o projections without biases; grouped-query: `kv_heads` key/value heads,
  each shared by heads / kv_heads query heads; rotary position embedding on the WHOLE head in the
  "rotate_half" form (pairs (i, i + head_dim / 2) rotate by position x rope_theta^(-2i / head_dim));
  scores divided by sqrt(head_dim), causal mask, softmax in float32;
- MLP (SwiGLU): down_proj(silu(gate_proj(x)) * up_proj(x));
- final RMSNorm `model.norm`, then `lm_head` (no bias).

Weights use the checkpoint's names and PyTorch's Linear layout ([out, in]).

The ONNX graph's interface (Hugging Face's ONNX export of a decoder with past): inputs `input_ids`
[batch, new], `position_ids` [batch, new], `attention_mask` [batch, past + new] (1 = attend) and per
layer `past_key_values.{i}.key` / `.value` [batch, kv_heads, past, head_dim]; outputs `logits`
[batch, new, vocab] and `present.{i}.key` / `.value` [batch, kv_heads, past + new, head_dim].
Grouped-query attention is a broadcast MatMul over [batch, kv_heads, group, ...]: no copy of the
cache per query head. rotate_half is a MatMul with a signed permutation: exact in float32.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation import decoder_graph
from mlperf_harness.generation.decoder_graph import (
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

OPSET = 17
RMS_NORM_EPSILON = 1e-5  # Llama 2's rms_norm_eps
ROPE_THETA = 10_000.0  # Llama 2's


@dataclass(frozen=True)
class LlamaShape:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    inner: int  # the MLP's intermediate_size
    vocab_size: int
    rope_theta: float = ROPE_THETA
    max_positions: int = 4096

    def check(self) -> None:
        if (
            min(self.layers, self.hidden, self.heads, self.kv_heads, self.inner, self.vocab_size)
            < 1
        ):
            raise HarnessError(f"every Llama size must be at least 1, got {self}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise HarnessError(
                f"Llama needs hidden {self.hidden} a multiple of heads {self.heads}, and heads a "
                f"multiple of kv_heads {self.kv_heads}"
            )
        if self.head_dim % 2:
            raise HarnessError(f"rotary needs an even head_dim, not {self.head_dim}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.heads // self.kv_heads


# Llama-2-70b-chat-hf's config.json
LLAMA2_70B = LlamaShape(layers=80, hidden=8192, heads=64, kv_heads=8, inner=28672, vocab_size=32000)


def weight_shapes(shape: LlamaShape) -> dict[str, tuple[int, ...]]:
    """Every parameter by its Hugging Face name, in PyTorch's layout ([out, in] for Linear)."""
    d, f, v = shape.hidden, shape.inner, shape.vocab_size
    kv = shape.kv_heads * shape.head_dim
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (v, d)}
    for i in range(shape.layers):
        p = f"model.layers.{i}"
        shapes[f"{p}.input_layernorm.weight"] = (d,)
        shapes[f"{p}.self_attn.q_proj.weight"] = (d, d)
        shapes[f"{p}.self_attn.k_proj.weight"] = (kv, d)
        shapes[f"{p}.self_attn.v_proj.weight"] = (kv, d)
        shapes[f"{p}.self_attn.o_proj.weight"] = (d, d)
        shapes[f"{p}.post_attention_layernorm.weight"] = (d,)
        shapes[f"{p}.mlp.gate_proj.weight"] = (f, d)
        shapes[f"{p}.mlp.up_proj.weight"] = (f, d)
        shapes[f"{p}.mlp.down_proj.weight"] = (d, f)
    shapes["model.norm.weight"] = (d,)
    shapes["lm_head.weight"] = (v, d)
    return shapes


def random_weights(shape: LlamaShape, seed: int) -> dict[str, Float32Array]:
    """Seeded weights (normal, std 0.02 x 10 for matrices; norms near 1), so that tests exercise
    every term."""
    shape.check()
    rng = np.random.default_rng(np.random.SeedSequence([seed, 70]))
    weights: dict[str, Float32Array] = {}
    for name, dims in weight_shapes(shape).items():
        if len(dims) == 1:
            value = 1.0 + 0.1 * rng.standard_normal(dims)
        elif name == "model.embed_tokens.weight":
            value = rng.standard_normal(dims)
        else:
            value = 0.2 * rng.standard_normal(dims)
        weights[name] = value.astype(np.float32)
    return weights


def check_weights(weights: Mapping[str, npt.NDArray[Any]], shape: LlamaShape) -> None:
    decoder_graph.check_weights(weights, weight_shapes(shape), "Llama")


# ---------------------------------------------------------------------------------------------------
# Rotary tables, shared by the graph and the NumPy forward


def inverse_frequencies(shape: LlamaShape) -> npt.NDArray[np.float64]:
    """Pair i's angle per position: rope_theta^(-2i / head_dim)."""
    d = shape.head_dim
    return np.asarray(1.0 / (shape.rope_theta ** (np.arange(0, d, 2) / d)), np.float64)


def rotary_tables(shape: LlamaShape) -> tuple[Float32Array, Float32Array]:
    """cos and sin [max_positions, head_dim]: each pair's angle on dims i and i + head_dim / 2
    (Hugging Face's cat(freqs, freqs)), products in float32 as LlamaRotaryEmbedding computes them."""
    inv_freq = inverse_frequencies(shape).astype(np.float32)
    angles = np.arange(shape.max_positions, dtype=np.float32)[:, None] * inv_freq[None, :]
    both = np.concatenate([angles, angles], axis=1)
    return np.cos(both).astype(np.float32), np.sin(both).astype(np.float32)


def rotate_half_matrix(head_dim: int) -> Float32Array:
    """R with x @ R = rotate_half(x) = cat(-x[half:], x[:half])."""
    half = head_dim // 2
    r = np.zeros((head_dim, head_dim), np.float32)
    for i in range(half):
        r[i + half, i] = -1.0
        r[i, i + half] = 1.0
    return r


# ---------------------------------------------------------------------------------------------------
# The NumPy forward: the reference the graph is checked against, and the build's feature extractor


def rms_norm(x: Float32Array, weight: Float32Array) -> Float32Array:
    variance = (x * x).mean(-1, keepdims=True)
    out: Float32Array = x / np.sqrt(variance + np.float32(RMS_NORM_EPSILON)) * weight
    return out


def silu(x: Float32Array) -> Float32Array:
    out: Float32Array = x / (np.float32(1.0) + np.exp(-x))
    return out


def apply_rotary(
    x: Float32Array, positions: Int64Array, tables: tuple[Float32Array, Float32Array]
) -> Float32Array:
    """x [batch, new, heads, head_dim] rotated by its tokens' positions [batch, new]."""
    cos, sin = (table[positions][:, :, None, :] for table in tables)
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return np.asarray(x * cos + rotated * sin, dtype=np.float32)


def numpy_forward(
    weights: Mapping[str, Float32Array],
    shape: LlamaShape,
    input_ids: Int64Array,
    position_ids: Int64Array,
    attention_mask: Int64Array,
    past: Sequence[decoder_graph.KeyValue] | None = None,
    upto: int | None = None,
    product: Callable[[Float32Array, str], Float32Array] | None = None,
) -> Forward:
    """The same computation as the ONNX graph, in float32 NumPy. With `upto`, only the input of
    block `upto` is computed (hidden[upto]; no logits): what a fit of that block needs. `product(x,
    name)`: each linear layer, x [..., in] @ weights[name].T by default (the torch engine's tests
    pass one that quantizes as its FP8 layers do)."""
    if product is None:

        def product(a: Float32Array, name: str) -> Float32Array:
            y: Float32Array = a @ weights[name].T
            return y

    linear = product
    batch, new = input_ids.shape
    h, kv, hd, g = shape.heads, shape.kv_heads, shape.head_dim, shape.group
    tables = rotary_tables(shape)
    bias = attention_bias(attention_mask, new)  # [batch, 1, new, total]

    def block(i: int, x: Float32Array) -> tuple[Float32Array, decoder_graph.KeyValue]:
        p = f"model.layers.{i}"
        a = rms_norm(x, weights[f"{p}.input_layernorm.weight"])

        def project(name: str, heads: int) -> Float32Array:
            y = linear(a, f"{p}.self_attn.{name}.weight")
            return y.reshape(batch, new, heads, hd)

        q = apply_rotary(project("q_proj", h), position_ids, tables).transpose(0, 2, 1, 3)
        k = apply_rotary(project("k_proj", kv), position_ids, tables).transpose(0, 2, 1, 3)
        k, v = decoder_graph.with_past(k, project("v_proj", kv).transpose(0, 2, 1, 3), past, i)
        # [batch, kv, group, new, hd] against [batch, kv, 1, total, hd]
        qg = q.reshape(batch, kv, g, new, hd)
        scores = (qg @ k[:, :, None].transpose(0, 1, 2, 4, 3)) / np.float32(np.sqrt(hd))
        probs = decoder_graph.softmax(scores + bias[:, :, None])
        context = (probs @ v[:, :, None]).reshape(batch, h, new, hd)
        context = context.transpose(0, 2, 1, 3).reshape(batch, new, shape.hidden)
        x = x + linear(context, f"{p}.self_attn.o_proj.weight")
        m = rms_norm(x, weights[f"{p}.post_attention_layernorm.weight"])
        gate = silu(linear(m, f"{p}.mlp.gate_proj.weight"))
        up = linear(m, f"{p}.mlp.up_proj.weight")
        return x + linear(gate * up, f"{p}.mlp.down_proj.weight"), (k, v)

    def head(x: Float32Array) -> Float32Array:
        return linear(rms_norm(x, weights["model.norm.weight"]), "lm_head.weight")

    return decoder_graph.run_blocks(
        weights["model.embed_tokens.weight"][input_ids], shape.layers, block, head, upto
    )


# ---------------------------------------------------------------------------------------------------
# The ONNX graph


class _GraphWriter(DecoderGraphWriter):
    def __init__(self, weights: Mapping[str, Float32Array], shape: LlamaShape) -> None:
        super().__init__(weights)
        self.shape = shape

    def rms_norm(self, x: str, name: str) -> str:
        weight = self.constant(f"{name}.weight", self.weights[f"{name}.weight"])
        eps = self.constant(f"{name}/eps", np.array(RMS_NORM_EPSILON, np.float32))
        square = self.node("Mul", [x, x], f"{name}/square")
        mean = self.node("ReduceMean", [square], f"{name}/mean", axes=[-1], keepdims=1)
        root = self.node("Sqrt", [self.node("Add", [mean, eps], f"{name}/var")], f"{name}/root")
        return self.node(
            "Mul", [self.node("Div", [x, root], f"{name}/normed"), weight], f"{name}/out"
        )

    def attention(self, a: str, layer: int, cos: str, sin: str, bias: str) -> str:
        s = self.shape
        p = f"model.layers.{layer}.self_attn"
        hd, kv, g = s.head_dim, s.kv_heads, s.group
        rotate = self.constant(f"{p}/rotate", rotate_half_matrix(hd))

        def heads(name: str, count: int, rotary: bool) -> str:
            split = self.constant(f"{p}/{name}/split", np.array([0, 0, count, hd], np.int64))
            y = self.node(
                "Reshape", [self.linear(a, f"{p}.{name}", bias=False), split], f"{p}/{name}/heads"
            )
            if rotary:
                y = self.rotary(y, rotate, cos, sin, f"{p}/{name}")
            return self.node("Transpose", [y], f"{p}/{name}/bhsd", perm=[0, 2, 1, 3])

        q = heads("q_proj", s.heads, True)  # [batch, heads, new, hd]
        k = self.node(
            "Concat", [past_key(layer), heads("k_proj", kv, True)], present_key(layer), axis=2
        )
        v = self.node(
            "Concat", [past_value(layer), heads("v_proj", kv, False)], present_value(layer), axis=2
        )
        grouped = self.constant(f"{p}/grouped", np.array([0, kv, g, -1, hd], np.int64))
        axis2 = self.constant(f"{p}/axis2", np.array([2], np.int64))
        qg = self.node("Reshape", [q, grouped], f"{p}/q_grouped")  # [b, kv, g, new, hd]
        kt = self.node(
            "Unsqueeze",
            [self.node("Transpose", [k], f"{p}/kt", perm=[0, 1, 3, 2]), axis2],
            f"{p}/kt_grouped",
        )  # [b, kv, 1, hd, total]
        scale = self.constant(f"{p}/scale", np.array(np.sqrt(hd), np.float32))
        scores = self.node("Div", [self.node("MatMul", [qg, kt], f"{p}/qk"), scale], f"{p}/scaled")
        scores = self.node(
            "Add", [scores, self.node("Unsqueeze", [bias, axis2], f"{p}/bias5")], f"{p}/masked"
        )
        probs = self.node("Softmax", [scores], f"{p}/probs", axis=-1)
        vg = self.node("Unsqueeze", [v, axis2], f"{p}/v_grouped")  # [b, kv, 1, total, hd]
        context = self.node("MatMul", [probs, vg], f"{p}/context")  # [b, kv, g, new, hd]
        flat = self.constant(f"{p}/flat", np.array([0, s.heads, -1, hd], np.int64))
        context = self.node("Reshape", [context, flat], f"{p}/context/heads")
        return self.merge_heads(context, s.hidden, f"{p}.o_proj", p)

    def mlp(self, x: str, layer: int) -> str:
        p = f"model.layers.{layer}.mlp"
        gate = self.linear(x, f"{p}.gate_proj", bias=False)
        gate = self.node("Mul", [gate, self.node("Sigmoid", [gate], f"{p}/sigmoid")], f"{p}/silu")
        up = self.linear(x, f"{p}.up_proj", bias=False)
        return self.linear(self.node("Mul", [gate, up], f"{p}/glu"), f"{p}.down_proj", bias=False)

    def graph(self) -> onnx.GraphProto:
        s = self.shape
        x = self.embed("model.embed_tokens.weight")
        cos, sin = self.rotary_inputs(rotary_tables(s))
        bias = self.mask_bias()
        for i in range(s.layers):
            p = f"model.layers.{i}"
            attn = self.attention(self.rms_norm(x, f"{p}.input_layernorm"), i, cos, sin, bias)
            x = self.node("Add", [x, attn], f"{p}/attn_residual")
            mlp = self.mlp(self.rms_norm(x, f"{p}.post_attention_layernorm"), i)
            x = self.node("Add", [x, mlp], f"{p}/out")
        logits = self.linear(self.rms_norm(x, "model.norm"), "lm_head", bias=False)
        return self.finish_graph(
            logits, "llama_stand_in", s.layers, s.kv_heads, s.head_dim, s.vocab_size
        )


def llama_model(
    weights: Mapping[str, Float32Array],
    shape: LlamaShape,
    doc: str = "",
    metadata: Mapping[str, str] | None = None,
) -> onnx.ModelProto:
    """Llama with a KV cache as ONNX (the module docstring gives the interface)."""
    shape.check()
    check_weights(weights, shape)
    return decoder_graph.checked_model(_GraphWriter(weights, shape).graph(), OPSET, doc, metadata)
