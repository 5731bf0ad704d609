"""The sliding window: window positions, the importance map, and the accumulation and argmax
checked against a direct (slow, obvious) computation on small volumes."""

from __future__ import annotations

import numpy as np
import pytest

from mlperf_harness.benchmarks.unet3d import sliding_window as sw
from mlperf_harness.errors import HarnessError


def test_window_starts_step_64_from_zero_axis_0_outermost() -> None:
    grid = sw.window_grid((192, 128, 256))
    assert grid.stride == 64
    assert grid.counts() == (2, 1, 3)
    starts = grid.starts()
    assert starts[:3] == [(0, 0, 0), (0, 0, 64), (0, 0, 128)]
    assert starts[-1] == (64, 0, 128)
    assert sw.window_count((192, 128, 256)) == 6
    # The last window ends exactly at the edge of a preprocessed (padded) volume.
    assert all(s + 128 <= n for start in starts for s, n in zip(start, grid.shape, strict=True))
    assert max(start[2] for start in starts) + 128 == 256


@pytest.mark.parametrize("shape", [(100, 128, 128), (160, 128, 128), (128, 128)])
def test_volumes_windows_do_not_cover_are_refused(shape: tuple[int, ...]) -> None:
    with pytest.raises(HarnessError, match=r"shape|3 axes"):
        sw.window_grid(shape)


def test_importance_map_is_the_cube_root_of_a_gaussian_normalised_to_one() -> None:
    patch = sw.importance_map()
    assert patch.shape == (128, 128, 128) and patch.dtype == np.float32
    assert patch.max() == np.float32(1.0)
    assert np.allclose(patch, patch.transpose(1, 2, 0)) and np.allclose(patch, patch[::-1])
    # Along an axis through the centre the profile is exp(-x^2 / (2 * 3 * 16^2)) up to the
    # other axes' constant: the cube root triples the Gaussian's variance.
    x = np.arange(128) - 63.5
    line = patch[:, 63, 63].astype(np.float64)
    expected = np.exp(-(x**2) / (2 * 3 * 16.0**2))
    assert np.allclose(line / line.max(), expected / expected.max(), rtol=1e-5)


class _Runner:
    """A stand-in for a model: per-voxel logits that depend on the value and the window position,
    counting the windows of each call."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.scale = rng.standard_normal(3).astype(np.float32)[None, :, None, None, None]
        self.shift = rng.standard_normal(3).astype(np.float32)[None, :, None, None, None]
        self.calls: list[int] = []

    def __call__(self, windows: sw.Float32Array) -> sw.Float32Array:
        self.calls.append(len(windows))
        ramp = np.linspace(-1.0, 1.0, windows.shape[-1], dtype=np.float32)
        logits = np.tanh(windows * self.scale) + self.shift + ramp * self.scale
        answer: sw.Float32Array = logits.astype(np.float32)
        return answer


def _direct_labels(image: sw.Float32Array, run: _Runner, roi: int) -> sw.UInt8Array:
    """Every voxel's Gaussian-weighted mean of the windows' logits, then argmax: the definition."""
    grid = sw.window_grid(image.shape, roi)
    patch = sw.importance_map(roi).astype(np.float64)
    total = np.zeros((3, *image.shape))
    weight = np.zeros(image.shape)
    for start in grid.starts():
        where = grid.slices(start)
        logits = run(image[where][None, None].astype(np.float32))[0].astype(np.float64)
        total[(slice(None), *where)] += logits * patch
        weight[where] += patch
    labels: sw.UInt8Array = np.argmax(total / weight, axis=0).astype(np.uint8)
    return labels


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_labels_are_the_weighted_mean_argmax_whatever_the_batch(batch_size: int) -> None:
    rng = np.random.default_rng(0)
    image = rng.standard_normal((16, 24, 32)).astype(np.float32)
    run = _Runner(1)
    labels = sw.sliding_window_labels(image, run, batch_size=batch_size, roi=16)
    assert labels.dtype == np.uint8 and labels.shape == image.shape
    assert set(np.unique(labels)) <= {0, 1, 2} and len(np.unique(labels)) > 1
    direct = _direct_labels(image, _Runner(1), 16)
    # float32 accumulation against float64: ties aside, the same labels
    assert np.mean(labels == direct) > 0.999
    assert sum(run.calls) == sw.window_count(image.shape, 16)
    assert max(run.calls) <= batch_size
    # A [1, D, H, W] volume (the preprocessed layout) gives the same answer.
    assert np.array_equal(
        sw.sliding_window_labels(image[None], _Runner(1), batch_size, roi=16), labels
    )


def test_a_runner_answering_the_wrong_shape_is_one_clear_error() -> None:
    image = np.zeros((16, 16, 16), dtype=np.float32)
    with pytest.raises(HarnessError, match="model answered a shape"):
        sw.sliding_window_labels(image, lambda w: np.zeros((1, 2, 16, 16, 16), np.float32), roi=16)
    with pytest.raises(HarnessError, match="float32"):
        sw.sliding_window_labels(image.astype(np.float64), _Runner(0), roi=16)
    with pytest.raises(HarnessError, match="batch size"):
        sw.sliding_window_labels(image, _Runner(0), batch_size=0, roi=16)
