"""A GPT-J ONNX graph with a KV cache (`stand_in_model`'s interface) run by ONNX Runtime, one call
per prefill or decode step; the NumPy forward behind the same call, for tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.gptj.stand_in_model import (
    ATTENTION_MASK,
    INPUT_IDS,
    LOGITS,
    POSITION_IDS,
    Float32Array,
    GptjShape,
    Int64Array,
    numpy_forward,
    past_key,
    past_value,
    present_key,
    present_value,
)
from mlperf_harness.generation.step_engine import Cache


def empty_cache(shape: GptjShape, batch: int) -> Cache:
    empty = np.zeros((batch, shape.heads, 0, shape.head_dim), np.float32)
    return [(empty, empty) for _ in range(shape.layers)]


class OrtGptj:
    """An ONNX Runtime session of the graph. Threads are the caller's choice; deterministic compute
    so that a rebuild decodes the same tokens."""

    def __init__(self, model: bytes, shape: GptjShape, threads: int = 1) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.use_deterministic_compute = True
        self.shape = shape
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.outputs = [LOGITS] + [
            name for i in range(shape.layers) for name in (present_key(i), present_value(i))
        ]

    def empty_cache(self, batch: int) -> Cache:
        return empty_cache(self.shape, batch)

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
        return logits, [(flat[2 * i], flat[2 * i + 1]) for i in range(self.shape.layers)]


class NumpyGptj:
    """`numpy_forward` behind the StepModel call."""

    def __init__(self, weights: Mapping[str, Float32Array], shape: GptjShape) -> None:
        self.weights = weights
        self.shape = shape

    def empty_cache(self, batch: int) -> Cache:
        return empty_cache(self.shape, batch)

    def __call__(
        self,
        input_ids: Int64Array,
        position_ids: Int64Array,
        attention_mask: Int64Array,
        past: Sequence[tuple[Float32Array, Float32Array]],
    ) -> tuple[Float32Array, Cache]:
        forward = numpy_forward(
            self.weights, self.shape, input_ids, position_ids, attention_mask, past
        )
        return forward.logits, forward.presents
