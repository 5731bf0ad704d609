"""A decoder graph with a KV cache (generation/decoder_graph's interface) run by ONNX Runtime, one
call per prefill or decode step, and a NumPy forward behind the same call for tests: the StepModel
that generation/step_engine.StepModelEngine drives, for every decoder stand-in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from mlperf_harness.generation.decoder_graph import (
    ATTENTION_MASK,
    INPUT_IDS,
    LOGITS,
    POSITION_IDS,
    Forward,
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


ShapeT = TypeVar("ShapeT")

# A decoder's reference forward: numpy_forward(weights, shape, ids, positions, mask, past).
ReferenceForward = Callable[
    [
        Mapping[str, Float32Array],
        ShapeT,
        Int64Array,
        Int64Array,
        Int64Array,
        Sequence[tuple[Float32Array, Float32Array]],
    ],
    Forward,
]


@dataclass(eq=False)  # compared by identity: its weights are arrays
class NumpyStepModel(Generic[ShapeT]):
    """A decoder's reference forward of `weights` behind the StepModel call (the new tokens'
    logits and the presents): the reference a graph's tests decode with."""

    numpy_forward: ReferenceForward[ShapeT]
    weights: Mapping[str, Float32Array]
    shape: ShapeT
    cache: CacheShape

    def empty_cache(self, batch: int) -> Cache:
        return self.cache.empty(batch)

    def __call__(
        self,
        input_ids: Int64Array,
        position_ids: Int64Array,
        attention_mask: Int64Array,
        past: Sequence[tuple[Float32Array, Float32Array]],
    ) -> tuple[Float32Array, Cache]:
        result = self.numpy_forward(
            self.weights, self.shape, input_ids, position_ids, attention_mask, past
        )
        return result.logits, result.presents
