"""Llama's graph with a KV cache: ONNX Runtime equals the NumPy forward of the same weights (grouped
query attention, RMSNorm, rotate_half rotary, SwiGLU), decoding token by token through the cache
equals one forward over the whole sequence, and padded rows decode as alone. Tiny sizes (2 blocks,
hidden 32, 4 query heads sharing 2 key/value heads) keep it fast; the graph code is the default's."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import (
    LLAMA2_70B,
    LlamaShape,
    apply_rotary,
    check_weights,
    llama_model,
    random_weights,
    rotary_tables,
    weight_shapes,
)
from mlperf_harness.benchmarks.llama2_70b.session import numpy_llama, ort_llama
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModelEngine

TINY = LlamaShape(
    layers=2, hidden=32, heads=4, kv_heads=2, inner=48, vocab_size=50, max_positions=64
)


@pytest.fixture(scope="module")
def weights() -> dict[str, npt.NDArray[Any]]:
    return random_weights(TINY, seed=3)


def _ids(batch: int, length: int) -> npt.NDArray[np.int64]:
    ids: npt.NDArray[np.int64] = (
        np.random.default_rng(7).integers(0, TINY.vocab_size, (batch, length)).astype(np.int64)
    )
    return ids


def test_onnx_runtime_equals_the_numpy_forward(weights: dict[str, npt.NDArray[Any]]) -> None:
    session = ort_llama(llama_model(weights, TINY).SerializeToString(), TINY)
    reference = numpy_llama(weights, TINY)
    ids = _ids(2, 9)
    positions = np.tile(np.arange(9, dtype=np.int64), (2, 1))
    mask = np.ones_like(ids)
    mask[1, :3] = 0  # row 1 left-padded
    logits, cache = session(ids, positions, mask, session.empty_cache(2))
    expected, expected_cache = reference(ids, positions, mask, reference.empty_cache(2))
    assert logits.shape == (2, 9, TINY.vocab_size)
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    for (key, value), (key_ref, value_ref) in zip(cache, expected_cache, strict=True):
        assert key.shape == (2, TINY.kv_heads, 9, TINY.head_dim)  # the cache per KV head
        np.testing.assert_allclose(key, key_ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(value, value_ref, rtol=1e-4, atol=1e-4)


def test_decoding_through_the_cache_equals_one_full_forward(
    weights: dict[str, npt.NDArray[Any]],
) -> None:
    session = ort_llama(llama_model(weights, TINY).SerializeToString(), TINY)
    ids = _ids(1, 8)
    full, _ = session(
        ids, np.arange(8, dtype=np.int64)[None], np.ones_like(ids), session.empty_cache(1)
    )
    cache = session.empty_cache(1)
    steps = []
    for position in range(8):
        logits, cache = session(
            ids[:, position : position + 1],
            np.array([[position]], np.int64),
            np.ones((1, position + 1), np.int64),
            cache,
        )
        steps.append(logits[:, 0])
    np.testing.assert_allclose(np.stack(steps, axis=1), full, rtol=1e-4, atol=1e-4)


def test_greedy_generation_on_the_engine_equals_the_numpy_model(
    weights: dict[str, npt.NDArray[Any]],
) -> None:
    eos = TINY.vocab_size - 1
    config = llama2_config(eos)
    prompts = [_ids(1, n)[0] for n in (3, 7, 5)]

    def run(model: Any) -> list[list[int]]:
        engine = StepModelEngine(model, eos, slots=2, beams=1, max_length=40)
        return generate(engine, prompts, [config.forced(20)] * 3)

    ort = run(ort_llama(llama_model(weights, TINY).SerializeToString(), TINY))
    assert ort == run(numpy_llama(weights, TINY))
    assert all(len(out) == 20 for out in ort)


def test_rotary_is_rotate_half_over_the_whole_head() -> None:
    x = np.random.default_rng(1).standard_normal((1, 1, 1, TINY.head_dim)).astype(np.float32)
    position = 5
    turned = apply_rotary(x, np.array([[position]]), rotary_tables(TINY))[0, 0, 0]
    half = TINY.head_dim // 2
    for i in range(half):  # pair (i, i + half) turns by position x theta^(-2i / head_dim)
        angle = position * TINY.rope_theta ** (-2 * i / TINY.head_dim)
        a, b = x[0, 0, 0, i], x[0, 0, 0, i + half]
        assert turned[i] == pytest.approx(a * np.cos(angle) - b * np.sin(angle), abs=1e-5)
        assert turned[i + half] == pytest.approx(b * np.cos(angle) + a * np.sin(angle), abs=1e-5)


def test_llama2_70b_shapes_and_wrong_weights_are_one_line(
    weights: dict[str, npt.NDArray[Any]],
) -> None:
    shapes = weight_shapes(LLAMA2_70B)
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (1024, 8192)  # 8 KV heads of 128
    assert shapes["model.layers.79.mlp.gate_proj.weight"] == (28672, 8192)
    parameters = sum(int(np.prod(dims)) for dims in shapes.values())
    assert 68.9e9 < parameters < 69.0e9  # Llama-2-70B: 68.98 billion
    broken = dict(weights)
    broken["model.norm.weight"] = np.zeros(3, np.float32)
    with pytest.raises(HarnessError, match=r"model.norm.weight is \(3,\), not \(32,\)"):
        check_weights(broken, TINY)
    with pytest.raises(HarnessError, match="a multiple of kv_heads"):
        LlamaShape(2, 32, 4, 3, 8, 10).check()
