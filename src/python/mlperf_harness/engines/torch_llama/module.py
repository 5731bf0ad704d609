"""Llama 2's blocks in torch on one device, or one rank's shard of them under tensor parallelism,
from weights by the checkpoint's names (the CPU tests: the NumPy model's weights) or seeded random
at Llama-2-70B's size, drawn on the GPU itself (random.py).

Per block the computation of Hugging Face's LlamaDecoderLayer (benchmarks/llama2_70b/model.py): RMSNorm
(float32), the q, k and v projections as ONE GEMM (their weights stacked), rotary in the rotate_half
form on the whole head (float32), attention (the engine's, over its cache), o_proj, then RMSNorm
and the SwiGLU MLP with gate and up as ONE GEMM. Under tensor parallelism (Megatron's split) a rank
holds heads / world query heads with their kv_heads / world key/value heads and inner / world MLP
columns; o_proj and down_proj are split by their input, so each is followed by an all-reduce of its
output: two per block. The embedding, final norm and lm_head are whole on every rank.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.model import (
    RMS_NORM_EPSILON,
    LlamaShape,
    inverse_frequencies,
)
from mlperf_harness.engines.fp8_linear import Linear, scaled_mm_unavailable
from mlperf_harness.engines.torch_llama import elementwise
from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class Parallel:
    """This process's place in a tensor-parallel group (world 1: alone)."""

    rank: int = 0
    world: int = 1
    group: Any = None  # torch.distributed's process group: the all-reduces
    control: Any = None  # the group rank 0 tells each call over (CPU tensors: parallel.py)

    def all_reduce(self, torch: Any, tensor: Any) -> Any:
        if self.world > 1:
            torch.distributed.all_reduce(tensor, group=self.group)
        return tensor

    def check(self, shape: LlamaShape) -> None:
        for what, size in (("kv_heads", shape.kv_heads), ("inner", shape.inner)):
            if size % self.world:
                raise HarnessError(
                    f"tensor parallel over {self.world} GPUs needs {what} {size} divisible by it"
                )


@dataclass
class Block:
    input_norm: Any  # [hidden]
    qkv: Linear  # [(heads + 2 kv_heads) / world x head_dim, hidden]
    o: Linear  # [hidden, heads / world x head_dim]
    post_norm: Any
    gate_up: Linear  # [2 inner / world, hidden]
    down: Linear  # [hidden, inner / world]


class TorchLlama:
    def __init__(
        self,
        torch: Any,
        shape: LlamaShape,
        blocks: list[Block],
        embed: Any,
        norm: Any,
        lm_head: Linear,
        parallel: Parallel,
    ) -> None:
        parallel.check(shape)
        self.torch, self.f, self.shape, self.blocks = torch, torch.nn.functional, shape, blocks
        self.embedding, self.norm, self.lm_head, self.parallel = embed, norm, lm_head, parallel
        self.dtype, self.device = embed.dtype, embed.device
        # The FP8 products' quantized inputs and the rotary made in one step each (options.py's
        # `fused`): fused_kernels or its reference elementwise, modules of the same functions;
        # None: torch's kernels, each product quantizing its own input (Linear.__call__).
        self.fused: Any = None
        self.heads = shape.heads // parallel.world
        self.kv_heads = shape.kv_heads // parallel.world
        self.inner = shape.inner // parallel.world
        angles = (
            np.arange(shape.max_positions, dtype=np.float32)[:, None]
            * inverse_frequencies(shape).astype(np.float32)[None, :]
        )
        self.cos = torch.from_numpy(np.cos(angles)).to(self.device)  # [positions, head_dim / 2]
        self.sin = torch.from_numpy(np.sin(angles)).to(self.device)

    def with_activation_scale(self, form: str) -> TorchLlama:
        """This model (every tensor shared) with its FP8 layers' activations quantized in `form`
        (fp8_linear.py: "row" or "tensor"): what an engine of those options runs, while another
        engine over the same weights keeps its own form; itself where nothing changes."""
        layers = [layer for b in self.blocks for layer in (b.qkv, b.o, b.gate_up, b.down)]
        if all(layer.with_activation_scale(form) is layer for layer in [*layers, self.lm_head]):
            return self
        # On a GPU whose row-form probe passed, this form's own probe (a CPU test may force
        # scaled_mm on the CPU's _scaled_mm: no probe there)
        if self.device.type == "cuda" and any(layer.scaled_mm for layer in layers):
            why_not = scaled_mm_unavailable(self.torch, self.device, self.dtype, form)
            if why_not is not None:
                raise HarnessError(f"activation_scale={form} does not run here: {why_not}")
        view = copy.copy(self)
        view.blocks = [
            replace(
                b, qkv=b.qkv.with_activation_scale(form), o=b.o.with_activation_scale(form),
                gate_up=b.gate_up.with_activation_scale(form),
                down=b.down.with_activation_scale(form),
            )
            for b in self.blocks
        ]  # fmt: skip
        view.lm_head = self.lm_head.with_activation_scale(form)
        return view

    @property
    def _products(self) -> list[Any]:
        return [
            *(layer for b in self.blocks for layer in (b.qkv, b.o, b.gate_up, b.down)),
            self.lm_head,
        ]

    @property
    def fusable(self) -> bool:
        """Whether every product is FP8 with row-wise activations: what `with_fused_inputs` needs."""
        return all(
            layer.weight8 is not None and layer.activation_scale == "row"
            for layer in self._products
        )

    @property
    def fused_by_default(self) -> bool:
        """fused=auto's answer: where every product already quantizes each row of its input
        (torch._scaled_mm's row form), the fused kernels move that work, not change it; the CPU's
        row form without _scaled_mm models the weights alone, so fusing would change its numbers."""
        return self.fusable and all(layer.scaled_mm for layer in self._products)

    def with_fused_inputs(self, kernels: Any) -> TorchLlama:
        """This model (every tensor shared) with its products' inputs normalised, activated and
        quantized by `kernels` (fused_kernels, or elementwise where Triton does not run): FP8 layers
        with row-wise activations only, the form those functions make."""
        if not self.fusable:
            raise HarnessError(
                "Llama engine: fused=1 makes the FP8 products' row-wise inputs: it needs FP8 "
                "weights and activation_scale=row"
            )
        view = copy.copy(self)
        view.fused = kernels
        return view

    @property
    def positions(self) -> int:
        return int(self.cos.shape[0])

    def embed(self, ids: Any) -> Any:
        return self.f.embedding(ids, self.embedding)

    def rms_norm(self, x: Any, weight: Any) -> Any:
        return elementwise.rms_norm(self.torch, x, weight, RMS_NORM_EPSILON)

    def rope(self, positions: Any) -> tuple[Any, Any]:
        """The rotary tables of `positions` [tokens]: cos and sin [tokens, 1, head_dim / 2] float32,
        gathered once per forward and shared by its layers."""
        return self.cos[positions][:, None, :], self.sin[positions][:, None, :]

    def rotate(self, x: Any, rope: tuple[Any, Any]) -> Any:
        """rotate_half rotary of x [tokens, heads, head_dim], in float32."""
        return (self.fused or elementwise).rotated(self.torch, x, *rope)

    def project(self, x: Any, block: Block, rope: tuple[Any, Any]) -> tuple[Any, Any, Any]:
        """x [tokens, hidden] -> q [tokens, heads, head_dim], k and v [tokens, kv_heads, head_dim]
        (this rank's), q and k rotated (in one pass: the same arithmetic, half the kernels)."""
        hd, tokens, heads = self.shape.head_dim, x.shape[0], self.heads
        if self.fused is None:
            qkv = block.qkv(self.torch, self.rms_norm(x, block.input_norm))
        else:
            x8, scale = self.fused.norm_quantized(self.torch, x, block.input_norm, RMS_NORM_EPSILON)
            qkv = block.qkv.product(self.torch, x8, scale, x.dtype)
        qk, v = qkv.split([(heads + self.kv_heads) * hd, self.kv_heads * hd], dim=-1)
        qk = self.rotate(qk.reshape(tokens, heads + self.kv_heads, hd), rope)
        return qk[:, :heads], qk[:, heads:], v.reshape(tokens, self.kv_heads, hd)

    def finish(self, x: Any, block: Block, context: Any) -> Any:
        """The block's output from its attention's context [tokens, heads, head_dim]."""
        torch, tokens = self.torch, x.shape[0]
        context = context.reshape(tokens, self.heads * self.shape.head_dim)
        if self.fused is not None:
            return self._finish_fused(x, block, context)
        attn = block.o(torch, context)
        x = x + self.parallel.all_reduce(torch, attn)
        gate, up = block.gate_up(torch, self.rms_norm(x, block.post_norm)).split(
            [self.inner, self.inner], dim=-1
        )
        mlp = block.down(torch, self.f.silu(gate) * up)
        return x + self.parallel.all_reduce(torch, mlp)

    def _finish_fused(self, x: Any, block: Block, context: Any) -> Any:
        """`finish` with each product's input made by one call of `fused` (the residual add
        before the post-attention norm inside it)."""
        torch, fused, dtype = self.torch, self.fused, x.dtype
        c8, c_scale = fused.quantized(torch, context)
        attn = block.o.product(torch, c8, c_scale, dtype)
        x, x8, x_scale = fused.add_norm_quantized(
            torch, x, self.parallel.all_reduce(torch, attn), block.post_norm, RMS_NORM_EPSILON
        )
        gate_up = block.gate_up.product(torch, x8, x_scale, dtype)
        h8, h_scale = fused.swiglu_quantized(torch, gate_up)
        mlp = block.down.product(torch, h8, h_scale, dtype)
        return x + self.parallel.all_reduce(torch, mlp)

    def logits(self, x: Any) -> Any:
        """[tokens, hidden] -> float32 [tokens, vocab]."""
        if self.fused is None:
            return self.lm_head(self.torch, self.rms_norm(x, self.norm)).float()
        x8, scale = self.fused.norm_quantized(self.torch, x, self.norm, RMS_NORM_EPSILON)
        return self.lm_head.product(self.torch, x8, scale, x.dtype).float()


def shard_rows(shape: LlamaShape, parallel: Parallel) -> dict[str, tuple[slice, ...]]:
    """Which rows of each stacked weight this rank holds, as slices of the full matrices."""
    hd, w, r = shape.head_dim, parallel.world, parallel.rank
    q = shape.heads * hd // w
    kv = shape.kv_heads * hd // w
    f = shape.inner // w
    return {
        "q_proj": (slice(r * q, (r + 1) * q),),
        "k_proj": (slice(r * kv, (r + 1) * kv),),
        "v_proj": (slice(r * kv, (r + 1) * kv),),
        "o_proj": (slice(None), slice(r * q, (r + 1) * q)),
        "gate_proj": (slice(r * f, (r + 1) * f),),
        "up_proj": (slice(r * f, (r + 1) * f),),
        "down_proj": (slice(None), slice(r * f, (r + 1) * f)),
    }


def from_tensors(
    torch: Any,
    shape: LlamaShape,
    tensor: Callable[[str], Any],
    make_linear: Callable[[Any], Linear],
    parallel: Parallel | None = None,
) -> TorchLlama:
    """The model from `tensor(name)`: each weight by the checkpoint's name, already on the device,
    this rank's shard; `make_linear` turns a stacked weight into a layer (fp16/bf16, or FP8)."""
    shape.check()
    blocks = []
    for i in range(shape.layers):
        p = f"model.layers.{i}"
        attn, mlp = f"{p}.self_attn", f"{p}.mlp"
        qkv = torch.cat([tensor(f"{attn}.{n}_proj.weight") for n in "qkv"])
        gate_up = torch.cat([tensor(f"{mlp}.gate_proj.weight"), tensor(f"{mlp}.up_proj.weight")])
        blocks.append(
            Block(
                input_norm=tensor(f"{p}.input_layernorm.weight"),
                qkv=make_linear(qkv),
                o=make_linear(tensor(f"{attn}.o_proj.weight")),
                post_norm=tensor(f"{p}.post_attention_layernorm.weight"),
                gate_up=make_linear(gate_up),
                down=make_linear(tensor(f"{mlp}.down_proj.weight")),
            )
        )
        del qkv, gate_up  # the stacked copies: only the layers' own tensors stay
    return TorchLlama(
        torch,
        shape,
        blocks,
        tensor("model.embed_tokens.weight"),
        tensor("model.norm.weight"),
        make_linear(tensor("lm_head.weight")),
        parallel or Parallel(),
    )
