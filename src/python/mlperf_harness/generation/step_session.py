"""A decoder graph with a KV cache (generation/decoder_graph's interface) run by ONNX Runtime, one
call per prefill or decode step, and a NumPy forward behind the same call for tests: the StepModel
that generation/step_engine.StepModelEngine drives, for every decoder stand-in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.generation.decoder_graph import (
    ATTENTION_MASK,
    INPUT_IDS,
    LOGITS,
    POSITION_IDS,
    past_key,
    past_value,
    present_key,
    present_value,
)
from mlperf_harness.generation.engine import Float32Array, Int64Array
from mlperf_harness.generation.step_engine import Cache


@dataclass(frozen=True)
class CacheShape:
    """What one layer's cache holds per row: [kv_heads, length, head_dim]."""

    layers: int
    kv_heads: int
    head_dim: int

    def empty(self, batch: int) -> Cache:
        empty = np.zeros((batch, self.kv_heads, 0, self.head_dim), np.float32)
        return [(empty, empty) for _ in range(self.layers)]


class OrtStepModel:
    """An ONNX Runtime session of a decoder graph. Threads are the caller's choice; deterministic
    compute so that a rebuild decodes the same tokens."""

    def __init__(self, model: bytes, cache: CacheShape, threads: int = 1) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.use_deterministic_compute = True
        self.cache = cache
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.outputs = [LOGITS] + [
            name for i in range(cache.layers) for name in (present_key(i), present_value(i))
        ]

    def empty_cache(self, batch: int) -> Cache:
        return self.cache.empty(batch)

    def __call__(
        self,
        input_ids: Int64Array,
        position_ids: Int64Array,
        attention_mask: Int64Array,
        past: Cache,
    ) -> tuple[Float32Array, Cache]:
        feeds: dict[str, npt.NDArray[Any]] = {
            INPUT_IDS: input_ids,
            POSITION_IDS: position_ids,
            ATTENTION_MASK: attention_mask,
        }
        for i, (key, value) in enumerate(past):
            feeds[past_key(i)] = key
            feeds[past_value(i)] = value
        logits, *flat = self.session.run(self.outputs, feeds)
        return logits, [(flat[2 * i], flat[2 * i + 1]) for i in range(self.cache.layers)]


NumpyForward = Callable[
    [Int64Array, Int64Array, Int64Array, Sequence[tuple[Float32Array, Float32Array]]],
    tuple[Float32Array, Cache],
]


class NumpyStepModel:
    """A NumPy forward (logits and presents of new tokens given the past) behind the StepModel
    call: the reference a graph's tests decode with."""

    def __init__(self, forward: NumpyForward, cache: CacheShape) -> None:
        self.forward = forward
        self.cache = cache

    def empty_cache(self, batch: int) -> Cache:
        return self.cache.empty(batch)

    def __call__(
        self,
        input_ids: Int64Array,
        position_ids: Int64Array,
        attention_mask: Int64Array,
        past: Sequence[tuple[Float32Array, Float32Array]],
    ) -> tuple[Float32Array, Cache]:
        return self.forward(input_ids, position_ids, attention_mask, past)
