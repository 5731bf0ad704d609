"""A GPT-J ONNX graph with a KV cache (`stand_in_model`'s interface) run by ONNX Runtime, one call
per prefill or decode step; the NumPy forward behind the same call, for tests
(generation/step_session holds both, for every decoder stand-in)."""

from __future__ import annotations

from collections.abc import Mapping

from mlperf_harness.benchmarks.gptj.stand_in_model import Float32Array, GptjShape, numpy_forward
from mlperf_harness.generation.step_session import CacheShape, NumpyStepModel, OrtStepModel


def cache_shape(shape: GptjShape) -> CacheShape:
    return CacheShape(shape.layers, shape.heads, shape.head_dim)


class OrtGptj(OrtStepModel):
    def __init__(self, model: bytes, shape: GptjShape, threads: int = 1) -> None:
        super().__init__(model, cache_shape(shape), threads)
        self.shape = shape


class NumpyGptj(NumpyStepModel[GptjShape]):
    """`numpy_forward` behind the StepModel call."""

    def __init__(self, weights: Mapping[str, Float32Array], shape: GptjShape) -> None:
        super().__init__(numpy_forward, weights, shape, cache_shape(shape))
