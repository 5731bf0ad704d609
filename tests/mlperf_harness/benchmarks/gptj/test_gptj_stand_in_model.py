"""GPT-J's graph with a KV cache: ONNX Runtime equals the NumPy forward of the same weights, and
decoding token by token through the cache equals one forward over the whole sequence. Tiny sizes
(2 blocks, hidden 32, 4 heads, rotary on 4 of 8 dims) keep it fast; the graph code is the default's."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.benchmarks.gptj.session import NumpyGptj, OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import (
    GptjShape,
    apply_rotary,
    gptj_model,
    random_weights,
    rotary_tables,
)

TINY = GptjShape(
    layers=2, hidden=32, heads=4, rotary_dim=4, vocab_size=50, inner=64, max_positions=64
)


@pytest.fixture(scope="module")
def weights() -> dict[str, npt.NDArray[Any]]:
    return random_weights(TINY, seed=3)


@pytest.fixture(scope="module")
def session(weights: dict[str, npt.NDArray[Any]]) -> OrtGptj:
    return OrtGptj(gptj_model(weights, TINY).SerializeToString(), TINY)


def _ids(batch: int, length: int) -> npt.NDArray[Any]:
    return np.random.default_rng(7).integers(0, TINY.vocab_size, (batch, length)).astype(np.int64)


def _positions(batch: int, start: int, length: int) -> npt.NDArray[Any]:
    return np.tile(np.arange(start, start + length, dtype=np.int64), (batch, 1))


def test_onnx_runtime_equals_the_numpy_forward(
    session: OrtGptj, weights: dict[str, npt.NDArray[Any]]
) -> None:
    ids = _ids(2, 11)
    mask = np.ones_like(ids)
    mask[1, :3] = 0  # left padding on the second row
    reference = NumpyGptj(weights, TINY)
    incremental = []  # prefill 7 tokens, then 4 more over the cache, padding in the mask
    for model in (session, reference):
        first, cache = model(ids[:, :7], _positions(2, 0, 7), mask[:, :7], model.empty_cache(2))
        second, _ = model(ids[:, 7:], _positions(2, 7, 4), mask, cache)
        incremental.append(np.concatenate([first, second], axis=1))
    np.testing.assert_allclose(incremental[0], incremental[1], atol=2e-5, rtol=1e-5)
    ort_logits, ort_cache = session(ids, _positions(2, 0, 11), mask, session.empty_cache(2))
    np_logits, np_cache = reference(ids, _positions(2, 0, 11), mask, reference.empty_cache(2))
    np.testing.assert_allclose(ort_logits, np_logits, atol=2e-5, rtol=1e-5)
    for (ok, ov), (nk, nv) in zip(ort_cache, np_cache, strict=True):
        assert ok.shape == (2, TINY.heads, 11, TINY.head_dim)
        np.testing.assert_allclose(ok, nk, atol=2e-5)
        np.testing.assert_allclose(ov, nv, atol=2e-5)


def test_decoding_through_the_cache_equals_one_full_forward(session: OrtGptj) -> None:
    ids = _ids(3, 12)
    full, _ = session(ids, _positions(3, 0, 12), np.ones_like(ids), session.empty_cache(3))
    # prefill 5 tokens, then one token per step
    steps, cache = session(
        ids[:, :5], _positions(3, 0, 5), np.ones((3, 5), np.int64), session.empty_cache(3)
    )
    outputs = [steps]
    for t in range(5, 12):
        logits, cache = session(
            ids[:, t : t + 1], _positions(3, t, 1), np.ones((3, t + 1), np.int64), cache
        )
        outputs.append(logits)
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, atol=2e-5, rtol=1e-5)


def test_rotary_is_gpt_j_rotate_every_two_on_the_first_dims() -> None:
    """x * cos + rotate_every_two(x) * sin on dims < rotary_dim, as Hugging Face's modeling_gptj
    writes it; the other dims pass unchanged."""
    x = (
        np.random.default_rng(0)
        .standard_normal((1, 3, TINY.heads, TINY.head_dim))
        .astype(np.float32)
    )
    positions = np.array([[0, 5, 9]], np.int64)
    out = apply_rotary(x, positions, rotary_tables(TINY))
    theta = 1.0 / 10_000.0 ** (np.arange(0, TINY.rotary_dim, 2) / TINY.rotary_dim)
    for s, position in enumerate(positions[0]):
        for i, frequency in enumerate(theta):
            c, n = np.cos(position * frequency), np.sin(position * frequency)
            a, b = x[0, s, :, 2 * i], x[0, s, :, 2 * i + 1]
            np.testing.assert_allclose(out[0, s, :, 2 * i], a * c - b * n, atol=1e-5)
            np.testing.assert_allclose(out[0, s, :, 2 * i + 1], b * c + a * n, atol=1e-5)
    np.testing.assert_array_equal(out[..., TINY.rotary_dim :], x[..., TINY.rotary_dim :])
