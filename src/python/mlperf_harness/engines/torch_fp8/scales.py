"""FP8 e4m3 scales and rounding, in numpy: what the engine's kernels assume, testable without a GPU.

The scheme is NVIDIA's INT8 recipe carried to FP8: symmetric, per-output-channel weight scales from
the weights' maxima, one scale per activation tensor from the calibration set's maxima. A tensor x
is stored as e4m3(x / s); a convolution of e4m3 input (scale s_x) and weights (scales s_w[k]) is
s_x * s_w[k] * sum(x8 * w8), so one factor per output channel (`alpha`) dequantizes the sum.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

E4M3_MAX = 448.0  # the largest finite float8_e4m3fn: scales map a tensor's maximum onto it

Floats = npt.NDArray[np.float32]


def round_to_e4m3(values: npt.NDArray[np.floating[Any]]) -> Floats:
    """The e4m3 value nearest each element (saturated at +-448), as float32: exactly what a cast to
    torch.float8_e4m3fn stores, kept in float32 so the ONNX side needs no fp8 type."""
    clipped = np.clip(np.asarray(values, dtype=np.float32), -E4M3_MAX, E4M3_MAX)
    return clipped.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)


def scale_for(amax: float) -> float:
    """The scale that maps `amax` onto e4m3's largest value; 1.0 for an all-zero tensor."""
    if not np.isfinite(amax) or amax < 0:
        raise ValueError(f"a tensor's maximum must be finite and non-negative, got {amax}")
    return float(amax) / E4M3_MAX if amax > 0 else 1.0


def weight_scales(weights: npt.NDArray[np.floating[Any]]) -> Floats:
    """Per output channel (axis 0) scales of a convolution's weights [K, C, R, S]."""
    amax = np.abs(np.asarray(weights, dtype=np.float32)).reshape(weights.shape[0], -1).max(axis=1)
    return np.array([scale_for(float(value)) for value in amax], dtype=np.float32)


def quantize_weights(weights: npt.NDArray[np.floating[Any]], scales: Floats) -> Floats:
    """[K, C, R, S] weights -> e4m3 values laid out [K, R, S, C] (the kernels' NHWC order)."""
    divided = np.asarray(weights, dtype=np.float32) / scales.reshape(-1, 1, 1, 1)
    return np.ascontiguousarray(round_to_e4m3(divided).transpose(0, 2, 3, 1))
