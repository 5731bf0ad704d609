"""3D-UNet's sliding-window inference as MLCommons' reference does it (inference_utils.py and
base_SUT.py of vision/medical_imaging/3d-unet-kits19), in NumPy around any window runner.

The reference, step by step, and what this module keeps of it:

1. Windows of 128³ start at 0 and step by int(128 x (1 - 0.5)) = 64 along each axis; an axis of
   size S holds (S - 128) // 64 + 1 of them. No window is moved to end at the volume's edge: the
   preprocessing pads every axis to at least 128 and to a multiple of 64, which makes the last
   window end exactly at the edge. Volumes of other shapes would leave voxels no window covers
   (the reference divides 0 by 0 there), so they are refused here.
2. The importance map: a 1-D Gaussian window of 128 points, standard deviation 0.125 x 128 = 16
   (scipy.signal's `gaussian`: exp(-½ ((n - 63.5) / 16)²)), its 3-D outer product, the cube root
   of that, divided by its maximum, cast to the volume's dtype (float32). The cube root makes each
   axis's profile a Gaussian of standard deviation 16 x √3, flatter than the sigma the issue names.
3. Windows in order i (axis 0) outermost, then j, then k; each window's logits [3, 128³] times the
   map are added into a float32 result [3, D, H, W], the map into a float32 normaliser of the same
   shape. The order is kept even when windows run in batches, so the sums round as the
   reference's do.
4. result / normaliser, argmax over the 3 classes, uint8: the labels of the whole padded volume,
   which is what the benchmark answers LoadGen with.

The window positions and the map are pure functions so that a GPU implementation uses the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.datasets.kits19.layout import LABEL_CLASSES
from mlperf_harness.datasets.kits19.transform import ROI_SHAPE, SLIDE_OVERLAP_FACTOR
from mlperf_harness.errors import HarnessError

Float32Array = npt.NDArray[np.float32]
UInt8Array = npt.NDArray[np.uint8]

ROI_SIZE = ROI_SHAPE[0]  # the reference's ROI_SHAPE, [128, 128, 128]
OVERLAP = SLIDE_OVERLAP_FACTOR  # 0.5
SIGMA_FRACTION = 0.125  # the importance map's sigma as a share of the window's edge
CLASSES = LABEL_CLASSES  # background, kidney, tumour

# Runs a batch of windows [n, 1, roi, roi, roi] and returns their logits [n, 3, roi, roi, roi].
WindowRunner = Callable[[Float32Array], Float32Array]


@dataclass(frozen=True)
class WindowGrid:
    """Where windows go over one volume: edge length, step and the volume's shape."""

    shape: tuple[int, int, int]
    roi: int = ROI_SIZE
    stride: int = int(ROI_SIZE * (1 - OVERLAP))

    def check(self) -> None:
        if len(self.shape) != 3:
            raise HarnessError(f"a volume must have 3 axes, got shape {self.shape}")
        if self.roi < 1 or not 0 < self.stride <= self.roi:
            raise HarnessError(f"window {self.roi} with stride {self.stride} is not usable")
        for size in self.shape:
            if size < self.roi or (size - self.roi) % self.stride:
                raise HarnessError(
                    f"volume shape {self.shape} is not covered by {self.roi}-voxel windows at "
                    f"stride {self.stride}: each axis must be at least {self.roi} and "
                    f"{self.roi} plus a multiple of {self.stride} (KiTS19 preprocessing pads so)"
                )

    def counts(self) -> tuple[int, int, int]:
        """Windows along each axis: (size - roi) // stride + 1, as the reference counts them."""
        a, b, c = ((size - self.roi) // self.stride + 1 for size in self.shape)
        return a, b, c

    def starts(self) -> list[tuple[int, int, int]]:
        """Every window's first voxel, axis 0 outermost: the reference's order."""
        self.check()
        a, b, c = self.counts()
        s = self.stride
        return [(i * s, j * s, k * s) for i in range(a) for j in range(b) for k in range(c)]

    def slices(self, start: tuple[int, int, int]) -> tuple[slice, slice, slice]:
        i, j, k = start
        return slice(i, i + self.roi), slice(j, j + self.roi), slice(k, k + self.roi)


def window_grid(
    shape: tuple[int, ...], roi: int = ROI_SIZE, overlap: float = OVERLAP
) -> WindowGrid:
    """The grid of `shape` for windows of `roi` overlapping by `overlap`, the stride rounded down
    as the reference does (int(roi x (1 - overlap)))."""
    if not 0.0 < overlap < 1.0:
        raise HarnessError(f"window overlap must lie in (0, 1), got {overlap}")
    if len(shape) != 3:
        raise HarnessError(f"a volume must have 3 axes, got shape {tuple(shape)}")
    grid = WindowGrid((int(shape[0]), int(shape[1]), int(shape[2])), roi, int(roi * (1 - overlap)))
    grid.check()
    return grid


def gaussian_window(points: int, std: float) -> npt.NDArray[np.float64]:
    """scipy.signal.windows.gaussian(points, std): exp(-½ ((n - (points - 1)/2) / std)²)."""
    n = np.arange(points, dtype=np.float64) - (points - 1) / 2.0
    window: npt.NDArray[np.float64] = np.exp(-0.5 * (n / std) ** 2)
    return window


def importance_map(roi: int = ROI_SIZE, dtype: type[np.floating[Any]] = np.float32) -> Float32Array:
    """The reference's norm_patch: the cube root of the 3-D Gaussian (sigma = 0.125 x roi), divided
    by its maximum, computed in float64 and cast to `dtype` last."""
    if roi < 1:
        raise HarnessError(f"window size must be at least 1, got {roi}")
    line = gaussian_window(roi, SIGMA_FRACTION * roi)
    cube = np.cbrt(line[:, None, None] * line[None, :, None] * line[None, None, :])
    cube /= cube.max()
    patch: Float32Array = cube.astype(dtype)
    return patch


def batches(starts: list[tuple[int, int, int]], size: int) -> Iterator[list[tuple[int, int, int]]]:
    for first in range(0, len(starts), size):
        yield starts[first : first + size]


def sliding_window_labels(
    image: Float32Array,
    run_windows: WindowRunner,
    batch_size: int = 1,
    roi: int = ROI_SIZE,
    overlap: float = OVERLAP,
) -> UInt8Array:
    """Labels (uint8 [D, H, W]) of a preprocessed volume `image` ([D, H, W] or [1, D, H, W]),
    its windows run `batch_size` at a time by `run_windows`."""
    if batch_size < 1:
        raise HarnessError(f"window batch size must be at least 1, got {batch_size}")
    volume = np.asarray(image)
    if volume.ndim == 4 and volume.shape[0] == 1:
        volume = volume[0]
    if volume.dtype != np.float32:
        raise HarnessError(f"a preprocessed volume must be float32, got {volume.dtype}")
    grid = window_grid(volume.shape, roi, overlap)
    patch = importance_map(roi)
    result = np.zeros((CLASSES, *grid.shape), dtype=np.float32)
    normaliser = np.zeros(grid.shape, dtype=np.float32)
    for batch in batches(grid.starts(), batch_size):
        windows = np.stack([volume[grid.slices(start)] for start in batch])[:, None]
        logits = np.asarray(run_windows(np.ascontiguousarray(windows)))
        expected = (len(batch), CLASSES, roi, roi, roi)
        if logits.shape != expected:
            raise HarnessError(f"the model answered a shape {logits.shape}, expected {expected}")
        for start, window_logits in zip(batch, logits, strict=True):
            where = grid.slices(start)
            result[(slice(None), *where)] += window_logits * patch
            normaliser[where] += patch
    result /= normaliser  # the reference divides each class channel by the one shared map
    labels: UInt8Array = np.argmax(result, axis=0).astype(np.uint8)
    return labels


def window_count(shape: tuple[int, ...], roi: int = ROI_SIZE, overlap: float = OVERLAP) -> int:
    """How many windows a volume of `shape` needs."""
    return math.prod(window_grid(shape, roi, overlap).counts())
