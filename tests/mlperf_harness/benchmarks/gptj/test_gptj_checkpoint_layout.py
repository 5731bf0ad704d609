"""The official checkpoint's layout onto the builder's weights: a state dict with Hugging Face's
GPT-J names and shapes maps by name (its attention-mask buffers ignored); the first wrong name or
shape is one line. A tiny fake state dict stands in for the 24 GB file."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from one_line_errors import raised_line

from mlperf_harness.benchmarks.gptj.checkpoint_layout import builder_weights
from mlperf_harness.benchmarks.gptj.stand_in_model import GPTJ_6B, GptjShape, weight_shapes

TINY = GptjShape(layers=2, hidden=16, heads=2, rotary_dim=4, vocab_size=30, inner=64)


def _state(shape: GptjShape) -> dict[str, npt.NDArray[Any]]:
    rng = np.random.default_rng(0)
    state = {
        name: rng.standard_normal(dims).astype(np.float16)
        for name, dims in weight_shapes(shape).items()
    }
    for i in range(shape.layers):  # buffers GPTJForCausalLM ignores on loading
        state[f"transformer.h.{i}.attn.bias"] = np.tril(np.ones((1, 1, 8, 8), bool))
        state[f"transformer.h.{i}.attn.masked_bias"] = np.array(-1e9, np.float32)
    return state


def test_hugging_face_names_map_onto_the_builder() -> None:
    state = _state(TINY)
    weights = builder_weights(state, TINY)
    assert set(weights) == set(weight_shapes(TINY))
    assert all(w.dtype == np.float32 for w in weights.values())
    np.testing.assert_array_equal(weights["lm_head.bias"], state["lm_head.bias"].astype(np.float32))


def test_gpt_j_6b_names_and_shapes() -> None:
    shapes = weight_shapes(GPTJ_6B)
    assert shapes["transformer.wte.weight"] == (50400, 4096)
    assert shapes["transformer.h.27.attn.q_proj.weight"] == (4096, 4096)
    assert shapes["transformer.h.0.mlp.fc_in.weight"] == (16384, 4096)
    assert shapes["transformer.h.0.mlp.fc_out.weight"] == (4096, 16384)
    assert shapes["lm_head.weight"] == (50400, 4096) and shapes["lm_head.bias"] == (50400,)
    assert "transformer.h.28.ln_1.weight" not in shapes
    assert not any(
        name.endswith(("q_proj.bias", "k_proj.bias", "v_proj.bias", "out_proj.bias"))
        for name in shapes
    )
    assert (GPTJ_6B.heads, GPTJ_6B.rotary_dim, GPTJ_6B.head_dim) == (16, 64, 256)


def test_a_wrong_shape_is_one_line_naming_it() -> None:
    state = _state(TINY)
    state["transformer.h.1.mlp.fc_in.weight"] = np.zeros((64, 17), np.float32)
    message = raised_line(builder_weights, state, TINY, "model.bin")
    assert "model.bin" in message
    assert "transformer.h.1.mlp.fc_in.weight is [64, 17], expected [64, 16]" in message


def test_a_missing_or_unknown_name_is_one_line() -> None:
    state = _state(TINY)
    state["transformer.h.0.attn.q_proj.bias"] = np.zeros(16, np.float32)  # GPT-J has none
    assert "unexpected tensor transformer.h.0.attn.q_proj.bias" in raised_line(
        builder_weights, state, TINY
    )
    state = _state(TINY)
    state["transformer.h.0.attn.query.weight"] = state.pop("transformer.h.0.attn.q_proj.weight")
    assert "no tensor transformer.h.0.attn.q_proj.weight [16, 16]" in raised_line(
        builder_weights, state, TINY
    )


def test_another_size_is_refused_at_the_first_tensor() -> None:
    message = raised_line(builder_weights, _state(TINY), GPTJ_6B)
    assert "transformer.wte.weight is [30, 16], expected [50400, 4096]" in message
