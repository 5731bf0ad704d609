"""A tiny seeded Llama 2 for the torch Llama engine's CPU checks (float32 weights of the NumPy model,
random_weights), its engine in any options, a workload of prompts and forced lengths, and the NumPy
model's tokens for it: shared by test_llama_engine_options_with_torch.py and the interpreted kernel
run (llama_interpreted_attention.py). torch is imported where an engine is made: CPU builds without
it import this module."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape, random_weights
from mlperf_harness.benchmarks.llama2_70b.session import numpy_llama
from mlperf_harness.engines.fp8_linear import Linear
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


def engine(slots: int, options: EngineOptions, kv_fp8: bool = False) -> TorchLlamaEngine:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    tensors = numpy_tensors(torch, WEIGHTS, SHAPE, torch.device("cpu"), torch.float32)
    model = from_tensors(torch, SHAPE, tensors, lambda w: Linear(weight=w))
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
