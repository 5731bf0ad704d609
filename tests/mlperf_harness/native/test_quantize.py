"""NVIDIA's int8 linear quantizer in C++: byte for byte numpy's np.clip(x, -128, 127).astype(np.int8)."""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness import native
from mlperf_harness.datasets.imagenet.preprocess import quantize_int8_linear


def numpy_reference(values: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy warns on casting NaN
        return np.clip(values, -128.0, 127.0).astype(np.int8, order="C")


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 31, 33, 3 * 224 * 224])
def test_identical_bytes_for_any_length(size: int) -> None:
    # Lengths around the 16-wide vector step: the tail is done one value at a time.
    values = np.random.default_rng(size).uniform(-300, 300, size).astype(np.float32)
    assert native.quantize_int8_linear(values).tobytes() == numpy_reference(values).tobytes()


def test_edge_values() -> None:
    edges = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, -0.999, 0.999, -128.0, -128.5, -129.0]
    edges += [127.0, 127.999, 128.0, 1e30, -1e30, 126.9999, 1e-45]
    values = np.array(edges * 3, dtype=np.float32)  # vector path and scalar tail both see them
    assert native.quantize_int8_linear(values).tobytes() == numpy_reference(values).tobytes()


def test_shape_and_layout() -> None:
    chw = np.random.default_rng(0).uniform(-140, 160, (3, 224, 224)).astype(np.float32)
    hwc_view = np.transpose(chw, (1, 2, 0))  # not contiguous
    out = native.quantize_int8_linear(hwc_view)
    assert out.shape == (224, 224, 3) and out.flags.c_contiguous
    assert np.array_equal(out, numpy_reference(hwc_view))


def test_into_a_given_buffer_and_only_float32() -> None:
    values = np.array([1.5, -200.0, 300.0], dtype=np.float32)
    out = np.zeros(3, dtype=np.int8)
    assert native.quantize_int8_linear(values, out) is out
    assert out.tolist() == [1, -128, 127]
    with pytest.raises(TypeError):
        native.quantize_int8_linear(values.astype(np.float64))
    with pytest.raises(ValueError):
        native.quantize_int8_linear(values, np.zeros(2, dtype=np.int8))


def test_preprocessing_uses_it() -> None:
    values = np.array([-200.0, -0.7, 0.7, 126.9, 151.2], dtype=np.float32)
    assert quantize_int8_linear(values).tolist() == [-128, 0, 0, 126, 127]
