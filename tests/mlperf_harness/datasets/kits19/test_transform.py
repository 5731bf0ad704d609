"""The reference's preprocessing steps on small volumes whose right answer is known by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.datasets.kits19.transform import (
    PADDING_VALUE,
    fit_to_windows,
    normalize_intensity,
    pad_to_min_shape,
    preprocess_case,
    resample,
    reshaped_affine,
    window_paddings,
)
from mlperf_harness.errors import HarnessError


def _volume(shape: tuple[int, int, int]) -> npt.NDArray[Any]:
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize(
    ("length", "final", "before"),
    [
        (100, 128, 14),  # short: edge-padded to 128 (14 before, 14 after), then nothing
        (128, 128, 0),
        (140, 128, -6),  # 12 over a multiple of 64 (< 32): cropped, 6 off each end
        (161, 192, 15),  # 33 over (>= 32): constant-padded to 192, 15 before, 16 after
        (200, 192, -4),  # 8 over: cropped to 192
        (230, 256, 13),
    ],
)
def test_window_shape_per_axis(length: int, final: int, before: int) -> None:
    image = _volume((length, 3, 4))[np.newaxis]
    label = np.ones_like(image, dtype=np.uint8)
    image, label = pad_to_min_shape(image, label)
    out_image, out_label = fit_to_windows(image, label)
    assert out_image.shape == out_label.shape == (1, final, 128, 128)
    if before >= 0 and length < 128:  # edge padding repeats the first slice
        np.testing.assert_array_equal(
            out_image[0, 0, 62:66, 62:66], out_image[0, before, 62:66, 62:66]
        )
    elif before >= 0:  # constant padding before the first slice
        assert np.all(out_image[0, :before, 62, 62] == np.float32(PADDING_VALUE))
        assert np.all(out_label[0, :before] == 0)
        assert out_image[0, before, 62, 62] == image[0, 0, 62, 62]
    else:  # cropped: the first -before slices are gone
        assert out_image[0, 0, 62, 62] == image[0, -before, 62, 62]


def test_window_paddings_reach_a_multiple_of_the_stride_and_the_window() -> None:
    assert window_paddings((128, 64, 65)) == [(0, 0), (0, 0), (32, 32), (31, 32)]


def test_normalisation_clips_to_the_window_and_scales_in_float32() -> None:
    image = np.array([-1000.0, -79.0, 101.0, 304.0, 3000.0], dtype=np.float32)
    out = normalize_intensity(image)
    assert out.dtype == np.float32
    expected = (np.array([-79, -79, 101, 304, 304], dtype=np.float32) - 101.0) / 76.9
    np.testing.assert_array_equal(out, expected.astype(np.float32))
    assert out[2] == 0.0


def test_resampling_follows_the_header_spacing_per_axis() -> None:
    image, label = _volume((10, 20, 30)), np.zeros((10, 20, 30), np.uint8)
    label[2:8, 5:15, 5:25] = 2
    out_image, out_label = resample(image, label, (3.2, 0.6, 1.2))
    # 10 * 3.2/1.6, 20 * 0.6/1.2, 30 * 1.2/1.2
    assert out_image.shape == out_label.shape == (20, 10, 30)
    assert out_image.dtype == np.float32 and out_label.dtype == np.uint8
    assert set(np.unique(out_label)) == {0, 2}  # nearest: no label made up between classes


def test_spacing_equal_to_the_target_skips_resampling_but_float32_spacing_does_not() -> None:
    image, label = _volume((5, 6, 7)), np.zeros((5, 6, 7), np.uint8)
    same_image, _ = resample(image, label, (1.6, 1.2, 1.2))
    assert same_image is image
    header_spacing = np.array([1.6, 1.2, 1.2], dtype=np.float32).tolist()
    zoomed, _ = resample(image, label, header_spacing)
    assert zoomed is not image and zoomed.shape == image.shape  # a factor of 1 + 1.5e-8


def test_preprocess_case_output_types_and_values() -> None:
    rng = np.random.default_rng(0)
    image = rng.normal(50, 200, (30, 90, 100)).astype(np.float32)
    label = (rng.random((30, 90, 100)) < 0.1).astype(np.uint8)
    out_image, out_label = preprocess_case(image, label, (4.0, 1.5, 0.9))
    assert out_image.dtype == np.float32 and out_label.dtype == np.uint8
    assert out_image.shape == out_label.shape == (1, 128, 128, 128)
    low, high = (-79 - 101) / 76.9, (304 - 101) / 76.9
    assert out_image.min() >= min(low, PADDING_VALUE) - 1e-6 and out_image.max() <= high + 1e-6
    assert set(np.unique(out_label)) <= {0, 1}


def test_bad_volumes_are_one_line() -> None:
    with pytest.raises(HarnessError, match="differ in shape"):
        preprocess_case(np.zeros((4, 5, 6)), np.zeros((4, 5, 7)), (1, 1, 1))
    with pytest.raises(HarnessError, match="3-D"):
        preprocess_case(np.zeros((4, 5)), np.zeros((4, 5)), (1, 1, 1))
    with pytest.raises(HarnessError, match="spacing"):
        preprocess_case(np.zeros((4, 5, 6)), np.zeros((4, 5, 6)), (1, 0, 1))


def test_reshaped_affine_keeps_signs_and_origin() -> None:
    # KiTS19's layout: array axes (z, y, x), x and y flipped.
    affine = np.array([[0, 0, -0.8, 10], [0, -0.8, 0, 20], [-5.0, 0, 0, 30], [0, 0, 0, 1]])
    np.testing.assert_array_equal(
        reshaped_affine(affine),
        np.array([[0, 0, -1.2, 10], [0, -1.2, 0, 20], [-1.6, 0, 0, 30], [0, 0, 0, 1]]),
    )


def test_an_oblique_affine_is_refused_in_one_line() -> None:
    affine = np.eye(4)
    affine[0, 1] = 0.1
    with pytest.raises(HarnessError, match="not axis-aligned") as caught:
        reshaped_affine(affine)
    assert "\n" not in str(caught.value)
