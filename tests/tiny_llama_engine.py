"""A tiny seeded Llama 2 for the torch Llama engine's CPU checks (float32 weights of the NumPy model,
random_weights), its engine in any options (float32 weights, or FP8 weights with per-channel
scales), a workload of prompts and forced lengths, the NumPy model's tokens for it, and NumPy's
products of the FP8 layers (`fp8_product`: the same quantization as engines/fp8_linear.py's, for
numpy_forward): shared by test_llama_engine_options_with_torch.py and the interpreted kernel run
(llama_interpreted_attention.py). torch is imported where an engine is made: CPU builds without it
import this module."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import (
    LlamaShape,
    numpy_forward,
    random_weights,
    rms_norm,
)
from mlperf_harness.benchmarks.llama2_70b.session import numpy_llama
from mlperf_harness.engines.fp8_linear import E4M3_MAX, Linear, quantize
from mlperf_harness.engines.torch_fp8.scales import round_to_e4m3
from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.engines.torch_llama.module import from_tensors
from mlperf_harness.engines.torch_llama.options import EngineOptions
from mlperf_harness.engines.torch_llama.weights import numpy_tensors
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModelEngine

SHAPE = LlamaShape(
    layers=2, hidden=64, heads=8, kv_heads=2, inner=96, vocab_size=97, max_positions=160
)
EOS = 5
WEIGHTS = random_weights(SHAPE, seed=3)


def engine(
    slots: int, options: EngineOptions, kv_fp8: bool = False, fp8: str = ""
) -> TorchLlamaEngine:
    """`fp8` "": float32 weights; "fallback": FP8 layers as on a host without torch._scaled_mm
    (the CPU's arithmetic); "scaled_mm": FP8 layers through this torch's _scaled_mm (on the CPU
    where it has one)."""
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    tensors = numpy_tensors(torch, WEIGHTS, SHAPE, torch.device("cpu"), torch.float32)

    def make(weight: Any) -> Linear:
        return quantize(torch, weight, fp8 == "scaled_mm") if fp8 else Linear(weight=weight)

    model = from_tensors(torch, SHAPE, tensors, make)
    return TorchLlamaEngine(model, slots, 48, 100, EOS, kv_fp8=kv_fp8, options=options)


def workload() -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(7)
    prompts = [rng.integers(0, SHAPE.vocab_size, n) for n in (5, 17, 9, 30, 1, 12, 3, 44)]
    # 2..90 new tokens: caches past one 256-entry bucket of the packed runs at 17 slots
    configs = [llama2_config(EOS).forced(int(n)) for n in (2, 20, 7, 90, 2, 11, 5, 60)]
    return prompts, configs


@functools.cache
def numpy_tokens() -> list[Any]:
    """The NumPy model's greedy tokens for `workload` (computed once)."""
    prompts, configs = workload()
    numpy = StepModelEngine(numpy_llama(WEIGHTS, SHAPE), EOS, slots=3, beams=1, max_length=148)
    return generate(numpy, prompts, configs)


def _quantized_weight(name: str) -> tuple[Any, Any]:
    """The e4m3 values (as float32) and per-channel scales of WEIGHTS[name], as quantize makes."""
    weight = WEIGHTS[name]
    scale = np.maximum(np.abs(weight).max(axis=1), np.float32(1e-12)) / np.float32(E4M3_MAX)
    return round_to_e4m3(weight / scale[:, None]), scale


def fp8_product(form: str) -> Callable[[Any, str], Any]:
    """numpy_forward's `product` for FP8 layers of WEIGHTS in `form`: "weights" (the weights
    quantized, the activations not: what the row form's CPU fallback computes), "row" (one
    activation scale per row, as _scaled_mm's row-wise form on a GPU) or "tensor" (one scale over
    every row of the product), in the order of fp8_linear's float32 arithmetic."""
    weights = {name: _quantized_weight(name) for name in WEIGHTS if name.endswith("proj.weight")}
    weights["lm_head.weight"] = _quantized_weight("lm_head.weight")

    def product(x: Any, name: str) -> Any:
        w8, scale_n = weights[name]
        rows = x.reshape(-1, x.shape[-1]).astype(np.float32)
        if form == "weights":
            y = rows @ (w8 * scale_n[:, None]).T
        else:
            axis = None if form == "tensor" else 1
            amax = np.abs(rows).max(axis=axis, keepdims=True)
            scale = np.maximum(amax, np.float32(1e-12)) / np.float32(E4M3_MAX)
            y = (round_to_e4m3(rows / scale) @ w8.T) * scale * scale_n
        return y.reshape(*x.shape[:-1], y.shape[-1])

    return product


def numpy_held(
    prompts: list[Any], steps: list[Any], product: Callable[[Any, str], Any]
) -> list[Any]:
    """The NumPy model's held logits [slots, vocab] (numpy_forward with `product` for its layers)
    after each prompt's prefill, one prompt at a time (the last position's logits alone through
    lm_head, as the engine's serial prefill computes them), then after each step of `steps` (one
    token per slot, every slot in one batch: the engine's eager decode step over all its slots)."""
    held, caches = [], []
    for prompt in prompts:
        n = prompt.size
        forward = numpy_forward(
            WEIGHTS, SHAPE, prompt[None], np.arange(n)[None], np.ones((1, n), np.int64),
            upto=SHAPE.layers, product=product,
        )  # fmt: skip
        last = rms_norm(forward.hidden[-1][:, -1:], WEIGHTS["model.norm.weight"])
        held.append(product(last, "lm_head.weight")[0, 0])
        caches.append(forward.presents)
    out = [np.stack(held)]
    lengths = np.array([p.size for p in prompts])
    longest, rows = int(lengths.max()), len(prompts)
    past = []  # each slot's cache at the left of a common length, the rest masked
    for layer in range(SHAPE.layers):
        k = np.zeros((rows, SHAPE.kv_heads, longest, SHAPE.head_dim), np.float32)
        v = np.zeros_like(k)
        for row, cache in enumerate(caches):
            k[row, :, : lengths[row]] = cache[layer][0][0]
            v[row, :, : lengths[row]] = cache[layer][1][0]
        past.append((k, v))
    mask = (np.arange(longest)[None, :] < lengths[:, None]).astype(np.int64)
    for tokens in steps:
        mask = np.concatenate([mask, np.ones((rows, 1), np.int64)], axis=1)
        forward = numpy_forward(
            WEIGHTS, SHAPE, tokens[:, None], lengths[:, None], mask, past, product=product
        )
        past, lengths = forward.presents, lengths + 1
        out.append(forward.logits[:, 0])
    return out
