"""The FP8 engine's scale arithmetic (engines/torch_fp8/scales.py), against e4m3's definition."""

from __future__ import annotations

import numpy as np
import pytest

from mlperf_harness.engines.torch_fp8 import scales


def test_rounding_is_e4m3_nearest_even_and_saturates() -> None:
    values = np.array([1.0, 1.06, 1.07, 100.0, 104.0, 500.0, -1000.0, 2.0**-9, 2.0**-11])
    got = scales.round_to_e4m3(values)
    # 1.0625 and 100 are ties (between 1.0/1.125 and 96/104): nearest even mantissa wins.
    np.testing.assert_array_equal(
        got, np.array([1.0, 1.0, 1.125, 96.0, 104.0, 448.0, -448.0, 2.0**-9, 0.0], np.float32)
    )


def test_scales_map_each_maximum_onto_448() -> None:
    weights = np.zeros((3, 2, 3, 3), np.float32)
    weights[0, 1, 2, 2] = -8.96
    weights[1, 0, 0, 0] = 0.5
    per_channel = scales.weight_scales(weights)
    np.testing.assert_allclose(per_channel, [8.96 / 448, 0.5 / 448, 1.0])  # all-zero channel: 1
    assert scales.scale_for(0.0) == 1.0
    with pytest.raises(ValueError, match="finite and non-negative"):
        scales.scale_for(float("nan"))


def test_quantized_weights_are_nhwc_and_within_half_a_step() -> None:
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((4, 8, 3, 3)).astype(np.float32)
    per_channel = scales.weight_scales(weights)
    quantized = scales.quantize_weights(weights, per_channel)
    assert quantized.shape == (4, 3, 3, 8)
    assert np.abs(quantized).max() == 448.0  # each channel's maximum lands on e4m3's largest
    restored = quantized.transpose(0, 3, 1, 2) * per_channel.reshape(-1, 1, 1, 1)
    # e4m3 keeps 3 mantissa bits: relative error at most 2^-4 above the subnormal range.
    error = np.abs(restored - weights)
    assert np.all(error <= np.abs(weights) * 2.0**-4 + per_channel.reshape(-1, 1, 1, 1) * 2.0**-10)
