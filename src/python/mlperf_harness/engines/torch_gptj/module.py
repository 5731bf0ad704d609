"""GPT-J's blocks in torch on one device, from weights by the checkpoint's names (`weights.py`) or
seeded random at any size (GPT-J 6B's for timing), in the engine's precision.

Per block the computation of Hugging Face's GPTJBlock (stand_in_model's docstring): one LayerNorm
feeding attention and the MLP in parallel. Because both read ln_1(x), the q, k, v and fc_in
projections are ONE GEMM here (their weights stacked, [3 hidden + inner, hidden]; zero bias on the
attention part, which has none): one pass over the activations instead of four. Rotary position
embedding in GPT-J's interleaved form on the first rotary_dim dims of each head (computed in
float32), gelu_new (the tanh approximation: torch's gelu(approximate="tanh")), the MLP's output
projection with its bias, and the attention's output projection added by the same addmm. The
final LayerNorm and lm_head (with its bias) give float32 logits.

Attention is not here: the engine runs it over its cache (attention.py); a block is split around it
(`project`, then `finish`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.gptj.stand_in_model import (
    LAYER_NORM_EPSILON,
    Float32Array,
    GptjShape,
    check_weights,
    rotary_tables,
    weight_shapes,
)

TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
INIT_STD = 0.02  # GPT-J's initializer_range: the random real-size weights' scale


@dataclass(frozen=True)
class Block:
    ln: tuple[Any, Any]
    qkv_in: Any  # [3 hidden + inner, hidden]: q, k, v, fc_in stacked
    qkv_in_bias: Any  # zeros for q, k, v; fc_in's bias
    out: Any  # attn.out_proj [hidden, hidden]
    fc_out: Any  # [hidden, inner]
    fc_out_bias: Any


class TorchGptj:
    """GPT-J's tensors on one device; `project` and `finish` are a block around its attention."""

    def __init__(self, torch: Any, shape: GptjShape, blocks: list[Block], rest: dict[str, Any]):
        self.torch = torch
        self.f = torch.nn.functional
        self.shape = shape
        self.blocks = blocks
        self.wte = rest["transformer.wte.weight"]
        self.ln_f = (rest["transformer.ln_f.weight"], rest["transformer.ln_f.bias"])
        self.lm_head = rest["lm_head.weight"]
        self.lm_head_bias = rest["lm_head.bias"]
        self.dtype = self.wte.dtype
        self.device = self.wte.device
        cos, sin = rotary_tables(shape)
        half = shape.rotary_dim // 2
        # one value per rotated pair (the tables repeat each for 2i and 2i + 1)
        self.cos = torch.from_numpy(np.ascontiguousarray(cos[:, 0 : 2 * half : 2])).to(self.device)
        self.sin = torch.from_numpy(np.ascontiguousarray(sin[:, 0 : 2 * half : 2])).to(self.device)

    @property
    def positions(self) -> int:
        return int(self.cos.shape[0])

    def embed(self, ids: Any) -> Any:
        return self.f.embedding(ids, self.wte)

    def project(self, x: Any, block: Block, positions: Any) -> tuple[Any, Any, Any, Any]:
        """x [tokens, hidden] -> q, k, v [tokens, heads, head_dim] (q and k rotated at
        `positions`) and the MLP's pre-activation [tokens, inner]."""
        s = self.shape
        a = self.f.layer_norm(x, (s.hidden,), *block.ln, eps=LAYER_NORM_EPSILON)
        h = self.f.linear(a, block.qkv_in, block.qkv_in_bias)
        q, k, v, inner = h.split([s.hidden, s.hidden, s.hidden, s.inner], dim=-1)
        tokens = x.shape[0]
        q = self.rotate(q.reshape(tokens, s.heads, s.head_dim), positions)
        k = self.rotate(k.reshape(tokens, s.heads, s.head_dim), positions)
        return q, k, v.reshape(tokens, s.heads, s.head_dim), inner

    def rotate(self, x: Any, positions: Any) -> Any:
        """GPT-J's rotate_every_two rotary on the first rotary_dim dims of each head."""
        rd = self.shape.rotary_dim
        cos = self.cos[positions][:, None, :]
        sin = self.sin[positions][:, None, :]
        even = x[..., 0:rd:2].float()
        odd = x[..., 1:rd:2].float()
        turned = self.torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1)
        return self.torch.cat([turned.flatten(-2).to(x.dtype), x[..., rd:]], dim=-1)

    def finish(self, x: Any, block: Block, context: Any, inner: Any) -> Any:
        """x + out_proj(context) + fc_out(gelu_new(inner)): the block's output."""
        tokens = x.shape[0]
        mlp = self.f.linear(self.f.gelu(inner, approximate="tanh"), block.fc_out, block.fc_out_bias)
        both = self.torch.addmm(mlp, context.reshape(tokens, self.shape.hidden), block.out.t())
        return x + both

    def logits(self, x: Any) -> Any:
        """[tokens, hidden] -> float32 [tokens, vocab]."""
        final = self.f.layer_norm(x, (self.shape.hidden,), *self.ln_f, eps=LAYER_NORM_EPSILON)
        return self.f.linear(final, self.lm_head, self.lm_head_bias).float()


def _stack_block(torch: Any, tensor: Any, shape: GptjShape, i: int) -> Block:
    """One block's tensors from `tensor(name)` (a device tensor in the engine's dtype)."""
    p = f"transformer.h.{i}"
    qkv_in = torch.cat(
        [tensor(f"{p}.attn.{n}.weight") for n in ("q_proj", "k_proj", "v_proj")]
        + [tensor(f"{p}.mlp.fc_in.weight")]
    )
    fc_in_bias = tensor(f"{p}.mlp.fc_in.bias")
    bias = torch.cat([fc_in_bias.new_zeros(3 * shape.hidden), fc_in_bias])
    return Block(
        ln=(tensor(f"{p}.ln_1.weight"), tensor(f"{p}.ln_1.bias")),
        qkv_in=qkv_in,
        qkv_in_bias=bias,
        out=tensor(f"{p}.attn.out_proj.weight"),
        fc_out=tensor(f"{p}.mlp.fc_out.weight"),
        fc_out_bias=tensor(f"{p}.mlp.fc_out.bias"),
    )


_REST = (
    "transformer.wte.weight",
    "transformer.ln_f.weight",
    "transformer.ln_f.bias",
    "lm_head.weight",
    "lm_head.bias",
)


def from_weights(
    torch: Any, weights: Mapping[str, Float32Array], shape: GptjShape, device: Any, precision: str
) -> TorchGptj:
    """The model from weights by the checkpoint's names (float32 arrays, [out, in] Linears)."""
    shape.check()
    check_weights(weights, shape)
    dtype = getattr(torch, TORCH_DTYPES[precision])

    def tensor(name: str) -> Any:
        # a copy: arrays read from ONNX are read-only, which torch.from_numpy warns of
        array = np.array(weights[name], dtype=np.float32, order="C")
        return torch.from_numpy(array).to(device=device, dtype=dtype)

    return from_tensors(torch, tensor, shape)


def from_tensors(torch: Any, tensor: Callable[[str], Any], shape: GptjShape) -> TorchGptj:
    """The model from `tensor(name)`: each weight by the checkpoint's name, already on the device in
    the engine's dtype (the official checkpoint's come shard by shard, never all in float32)."""
    shape.check()
    blocks = [_stack_block(torch, tensor, shape, i) for i in range(shape.layers)]
    return TorchGptj(torch, shape, blocks, {name: tensor(name) for name in _REST})


def random_gptj(torch: Any, shape: GptjShape, device: Any, precision: str, seed: int) -> TorchGptj:
    """Seeded random weights of GPT-J's initialisation (normal, std 0.02; LayerNorms 1 and 0) drawn
    on `device` itself: 6B parameters never pass through the host."""
    shape.check()
    dtype = getattr(torch, TORCH_DTYPES[precision])
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)

    def tensor(name: str, dims: tuple[int, ...]) -> Any:
        if name.endswith(("ln_1.weight", "ln_f.weight")):
            return torch.ones(dims, device=device, dtype=dtype)
        if name.endswith(("ln_1.bias", "ln_f.bias")):
            return torch.zeros(dims, device=device, dtype=dtype)
        values = torch.randn(dims, device=device, generator=generator, dtype=torch.float32)
        return (values * INIT_STD).to(dtype)

    dims = weight_shapes(shape)
    blocks = [
        _stack_block(torch, lambda name: tensor(name, dims[name]), shape, i)
        for i in range(shape.layers)
    ]
    return TorchGptj(torch, shape, blocks, {name: tensor(name, dims[name]) for name in _REST})
