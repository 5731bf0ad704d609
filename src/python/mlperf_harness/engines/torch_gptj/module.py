"""GPT-J's blocks in torch on one device, from weights by the checkpoint's names (`weights.py`) or
seeded random at any size (GPT-J 6B's for timing), in the engine's precision (precision.py): fp32,
fp16 or bf16 throughout, or "fp8": the projections' weights (the stacked q/k/v/fc_in, out_proj,
fc_out) quantized to e4m3 with one scale per output channel as they are loaded, from the float32
weights (never rounded to fp16 first; engines/fp8_linear.py; the weights' scales need no
calibration data), the rest in fp16; their activations are quantized per row on the fly, or by
static scales calibrated on the calibration samples (`with_projections`, calibrate.py).
lm_head stays fp16 in every precision: its logits choose the beams directly, where FP8's error
(about 2-3% per weight) would turn near-ties, and its GEMM is about 3.5% of a token's.

Per block the computation of Hugging Face's GPTJBlock (stand_in_model's docstring): one LayerNorm
feeding attention and the MLP in parallel. Because both read ln_1(x), the q, k, v and fc_in
projections are ONE GEMM here (their weights stacked, [3 hidden + inner, hidden]; zero bias on the
attention part, which has none): one pass over the activations instead of four. Rotary position
embedding in GPT-J's interleaved form on the first rotary_dim dims of each head (computed in
float32), gelu_new (the tanh approximation: torch's gelu(approximate="tanh")), the MLP's output
projection with its bias, and the attention's output projection added by the same addmm (with FP8
weights, added after its own product). The final LayerNorm and lm_head (with its bias) give
float32 logits.

Attention is not here: the engine runs it over its cache (attention.py); a block is split around it
(`project`, then `finish`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
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
from mlperf_harness.engines.fp8_linear import Linear, fp8_layers
from mlperf_harness.engines.torch_gptj.precision import COMPUTE_DTYPES, FP8, check_precision
from mlperf_harness.engines.torch_gptj.scale_artifact import PROJECTIONS

INIT_STD = 0.02  # GPT-J's initializer_range: the random real-size weights' scale
REAL_SIZE_SEED = 0  # the real-size stand-in's weights (factory, device checks, its calibration key)
# Makes a projection from its weight [out, in] and bias [out] (or None) on the device.
LinearMaker = Callable[..., Linear]


@dataclass(frozen=True)
class Block:
    ln: tuple[Any, Any]
    qkv_in: Linear  # [3 hidden + inner, hidden]: q, k, v, fc_in stacked; bias 0 for q, k, v
    out: Linear  # attn.out_proj [hidden, hidden], no bias
    fc_out: Linear  # [hidden, inner] with its bias


def compute_dtype(torch: Any, precision: str) -> Any:
    """The torch dtype of `precision`'s activations, KV cache and unquantized weights."""
    return getattr(torch, COMPUTE_DTYPES[check_precision(precision)])


def load_dtype(torch: Any, precision: str) -> Any:
    """The dtype weights are loaded in: float32 in fp8 (the projections are quantized from it),
    else the compute dtype."""
    return torch.float32 if check_precision(precision) == FP8 else compute_dtype(torch, precision)


def linear_maker(torch: Any, precision: str, device: Any) -> LinearMaker:
    """What turns a loaded projection (weight, bias) into the engine's layer: FP8 with per-channel
    scales in fp8 (torch._scaled_mm where a probe product runs, dequantized products elsewhere: a
    line on stderr says which), else the weight in the compute dtype; the bias in the compute
    dtype."""
    dtype = compute_dtype(torch, precision)
    fp8 = fp8_layers(torch, device, dtype, "torch_gptj") if precision == FP8 else None

    def make(weight: Any, bias: Any = None) -> Linear:
        bias = None if bias is None else bias.to(dtype)
        return Linear(weight=weight.to(dtype), bias=bias) if fp8 is None else fp8(weight, bias)

    return make


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

    def projections(self) -> dict[str, Linear]:
        """Each block's projection layers by the calibration artifact's names ('h.0.qkv_in')."""
        return {
            f"h.{i}.{name}": getattr(block, name)
            for i, block in enumerate(self.blocks)
            for name in PROJECTIONS
        }

    def with_projections(self, change: Callable[[str, Linear], Linear]) -> TorchGptj:
        """This model (its tensors shared) with each projection `change(name, layer)`: recording
        its inputs' maxima, or with static activation scales (calibrate.py)."""
        view = copy.copy(self)
        view.blocks = []
        for i, block in enumerate(self.blocks):
            changed: dict[str, Any] = {
                n: change(f"h.{i}.{n}", getattr(block, n)) for n in PROJECTIONS
            }
            view.blocks.append(replace(block, **changed))
        return view

    def embed(self, ids: Any) -> Any:
        return self.f.embedding(ids, self.wte)

    def project(self, x: Any, block: Block, positions: Any) -> tuple[Any, Any, Any, Any]:
        """x [tokens, hidden] -> q, k, v [tokens, heads, head_dim] (q and k rotated at
        `positions`) and the MLP's pre-activation [tokens, inner]."""
        s = self.shape
        a = self.f.layer_norm(x, (s.hidden,), *block.ln, eps=LAYER_NORM_EPSILON)
        h = block.qkv_in(self.torch, a)
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
        context = context.reshape(x.shape[0], self.shape.hidden)
        mlp = block.fc_out(self.torch, self.f.gelu(inner, approximate="tanh"))
        if block.out.weight is not None:  # one addmm: the output projection onto the MLP's
            return x + self.torch.addmm(mlp, context, block.out.weight.t())
        return x + (mlp + block.out(self.torch, context))

    def logits(self, x: Any) -> Any:
        """[tokens, hidden] -> float32 [tokens, vocab]."""
        final = self.f.layer_norm(x, (self.shape.hidden,), *self.ln_f, eps=LAYER_NORM_EPSILON)
        return self.f.linear(final, self.lm_head, self.lm_head_bias).float()


def _stack_block(
    torch: Any, tensor: Any, shape: GptjShape, i: int, make_linear: LinearMaker, dtype: Any
) -> Block:
    """One block from `tensor(name)` (a device tensor in the load dtype); its projections made by
    `make_linear` (in fp8 quantized here: the stacked float32 copy is dropped at once), the rest
    in the compute `dtype`."""
    p = f"transformer.h.{i}"
    qkv_in = torch.cat(
        [tensor(f"{p}.attn.{n}.weight") for n in ("q_proj", "k_proj", "v_proj")]
        + [tensor(f"{p}.mlp.fc_in.weight")]
    )
    fc_in_bias = tensor(f"{p}.mlp.fc_in.bias")
    bias = torch.cat([fc_in_bias.new_zeros(3 * shape.hidden), fc_in_bias])
    return Block(
        ln=(tensor(f"{p}.ln_1.weight").to(dtype), tensor(f"{p}.ln_1.bias").to(dtype)),
        qkv_in=make_linear(qkv_in, bias),
        out=make_linear(tensor(f"{p}.attn.out_proj.weight")),
        fc_out=make_linear(tensor(f"{p}.mlp.fc_out.weight"), tensor(f"{p}.mlp.fc_out.bias")),
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
    tensor = numpy_tensors(torch, weights, shape, device, load_dtype(torch, precision))
    make_linear = linear_maker(torch, precision, device)
    return from_tensors(torch, tensor, shape, make_linear, compute_dtype(torch, precision))


def numpy_tensors(
    torch: Any, weights: Mapping[str, Float32Array], shape: GptjShape, device: Any, dtype: Any
) -> Callable[[str], Any]:
    """`tensor(name)` of weights by the checkpoint's names: on `device` in `dtype`."""
    shape.check()
    check_weights(weights, shape)

    def tensor(name: str) -> Any:
        # a copy: arrays read from ONNX are read-only, which torch.from_numpy warns of
        array = np.array(weights[name], dtype=np.float32, order="C")
        return torch.from_numpy(array).to(device=device, dtype=dtype)

    return tensor


def from_tensors(
    torch: Any,
    tensor: Callable[[str], Any],
    shape: GptjShape,
    make_linear: LinearMaker,
    dtype: Any,
) -> TorchGptj:
    """The model from `tensor(name)`: each weight by the checkpoint's name, already on the device in
    the load dtype (the official checkpoint's come shard by shard, never all in float32), its
    projections made by `make_linear` (linear_maker), the rest in the compute `dtype`."""
    shape.check()
    blocks = [
        _stack_block(torch, tensor, shape, i, make_linear, dtype) for i in range(shape.layers)
    ]
    return TorchGptj(torch, shape, blocks, {name: tensor(name).to(dtype) for name in _REST})


def random_gptj(torch: Any, shape: GptjShape, device: Any, precision: str, seed: int) -> TorchGptj:
    """Seeded random weights of GPT-J's initialisation (normal, std 0.02; LayerNorms 1 and 0) drawn
    on `device` itself: 6B parameters never pass through the host (in fp8 each projection is
    quantized from its float32 draw at once: one float32 projection exists at a time)."""
    shape.check()
    dtype, loaded = compute_dtype(torch, precision), load_dtype(torch, precision)
    make_linear = linear_maker(torch, precision, device)
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)

    def tensor(name: str, dims: tuple[int, ...]) -> Any:
        if name.endswith(("ln_1.weight", "ln_f.weight")):
            return torch.ones(dims, device=device, dtype=dtype)
        if name.endswith(("ln_1.bias", "ln_f.bias")):
            return torch.zeros(dims, device=device, dtype=dtype)
        values = torch.randn(dims, device=device, generator=generator, dtype=torch.float32)
        return (values * INIT_STD).to(loaded)

    dims = weight_shapes(shape)
    blocks = [
        _stack_block(torch, lambda name: tensor(name, dims[name]), shape, i, make_linear, dtype)
        for i in range(shape.layers)
    ]
    rest = {name: tensor(name, dims[name]).to(dtype) for name in _REST}
    return TorchGptj(torch, shape, blocks, rest)
