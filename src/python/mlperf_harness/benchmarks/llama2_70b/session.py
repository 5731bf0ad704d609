"""A Llama ONNX graph with a KV cache (`model`'s interface) on ONNX Runtime, and its NumPy forward
behind the same call (generation/step_session)."""

from __future__ import annotations

from collections.abc import Mapping

from mlperf_harness.benchmarks.llama2_70b.model import Float32Array, LlamaShape, numpy_forward
from mlperf_harness.generation.step_session import CacheShape, NumpyStepModel, OrtStepModel


def cache_shape(shape: LlamaShape) -> CacheShape:
    return CacheShape(shape.layers, shape.kv_heads, shape.head_dim)


def ort_llama(model: bytes, shape: LlamaShape, threads: int = 1) -> OrtStepModel:
    return OrtStepModel(model, cache_shape(shape), threads)


def numpy_llama(
    weights: Mapping[str, Float32Array], shape: LlamaShape
) -> NumpyStepModel[LlamaShape]:
    return NumpyStepModel(numpy_forward, weights, shape, cache_shape(shape))
