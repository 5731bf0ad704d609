"""One KiTS19 case preprocessed as MLCommons' reference does it, step for step.

The reference is vision/medical_imaging/3d-unet-kits19/preprocess.py (class Preprocessor) with its
constants in global_vars.py. Each function below is one of its steps, in its order, with the same
NumPy and SciPy calls and arguments, so that the arrays come out bit for bit the same:

1. resample: scipy.ndimage.zoom to spacing (1.6, 1.2, 1.2) mm, linear for the image (order 1) and
   nearest for the label (order 0), points outside filled with the volume's minimum
   (mode "constant", grid_mode False). Skipped only when the header's spacing, as Python floats
   of its float32 values, equals [1.6, 1.2, 1.2] exactly (the reference's list comparison).
   There is no reorientation: array axis i is resampled with pixdim[i + 1].
2. normalize_intensity: clip to [-79, 304] HU, then (x - 101) / 76.9, in float32.
3. pad_to_min_shape: each axis shorter than 128 padded to 128 by repeating its edge values (image
   and label alike), the odd voxel after.
4. fit_to_windows: each axis cropped to a multiple of 64 where that removes fewer than 32 voxels,
   then padded to a multiple of 64 and at least 128 with the constant -2.2 (image) and 0 (label),
   half before and half after (the odd voxel after): the 128^3 windows at stride 64 then cover
   the volume exactly.

The image is float32 and the label uint8, both [1, D, H, W] (the reference's channel axis).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import ndimage  # type: ignore[import-untyped]  # no stubs published

from mlperf_harness.errors import HarnessError

# global_vars.py of the reference.
TARGET_SPACING = (1.6, 1.2, 1.2)  # mm, per array axis
ROI_SHAPE = (128, 128, 128)  # the model's window
SLIDE_OVERLAP_FACTOR = 0.5
WINDOW_STRIDE = tuple(int(size * (1 - SLIDE_OVERLAP_FACTOR)) for size in ROI_SHAPE)  # 64
MIN_CLIP_VALUE = -79.0
MAX_CLIP_VALUE = 304.0
MEAN_VALUE = 101.0
STDDEV_VALUE = 76.9
PADDING_VALUE = -2.2  # the image's constant padding, in normalised units
LABEL_PADDING_VALUE = 0  # background

Image = npt.NDArray[np.float32]
Label = npt.NDArray[np.uint8]


def preprocess_case(
    image: npt.ArrayLike, label: npt.ArrayLike, spacing: Sequence[float]
) -> tuple[Image, Label]:
    """A raw case ([D, H, W] CT in HU and its labels, voxel spacing in mm per axis as the NIfTI
    header gives it) as the model's input: image float32 and label uint8, both [1, D', H', W']."""
    image_array = np.asarray(image).astype(np.float32, copy=False)
    label_array = np.asarray(label).astype(np.uint8, copy=False)
    check_volumes(image_array, label_array, spacing)
    resampled_image, resampled_label = resample(image_array, label_array, spacing)
    normalized = normalize_intensity(resampled_image[np.newaxis].copy())
    padded_image, padded_label = pad_to_min_shape(normalized, resampled_label[np.newaxis])
    final_image, final_label = fit_to_windows(padded_image, padded_label)
    return final_image.astype(np.float32), final_label.astype(np.uint8)


def check_volumes(
    image: npt.NDArray[np.generic], label: npt.NDArray[np.generic], spacing: Sequence[float]
) -> None:
    """One line for what the reference would fail on later, or silently get wrong."""
    if image.ndim != 3:
        raise HarnessError(f"a KiTS19 image must be 3-D, this one has shape {list(image.shape)}")
    if label.shape != image.shape:
        raise HarnessError(
            f"image {list(image.shape)} and segmentation {list(label.shape)} differ in shape"
        )
    if len(spacing) != 3 or not all(math.isfinite(s) and s > 0 for s in spacing):
        raise HarnessError(f"voxel spacing must be 3 positive sizes in mm, not {list(spacing)}")


def zoom_factor(spacing: Sequence[float]) -> npt.NDArray[np.float64]:
    """Old spacing over new, per axis (what the reference stores as aux["zoom_factor"])."""
    factor: npt.NDArray[np.float64] = np.array([float(s) for s in spacing]) / np.array(
        TARGET_SPACING
    )
    return factor


def resample(image: Image, label: Label, spacing: Sequence[float]) -> tuple[Image, Label]:
    """Step 1: both volumes at TARGET_SPACING ([D, H, W] in, [D', H', W'] out)."""
    # A list comparison, as the reference's: header spacings are float32, so 1.6 read from a file
    # is 1.600000023841858 and the volume is resampled (by a factor 1 + 1.5e-8: same shape).
    if [float(s) for s in spacing] == list(TARGET_SPACING):
        return image, label
    factor = zoom_factor(spacing)
    zoomed_image = ndimage.zoom(
        image, factor, order=1, mode="constant", cval=image.min(), grid_mode=False
    )
    zoomed_label = ndimage.zoom(
        label, factor, order=0, mode="constant", cval=label.min(), grid_mode=False
    )
    return zoomed_image, zoomed_label


def normalize_intensity(image: Image) -> Image:
    """Step 2: the reference's intensity window and statistics; float32 stays float32."""
    clipped = np.clip(image, MIN_CLIP_VALUE, MAX_CLIP_VALUE)
    normalized: Image = (clipped - MEAN_VALUE) / STDDEV_VALUE
    return normalized


def pad_to_min_shape(image: Image, label: Label) -> tuple[Image, Label]:
    """Step 3: every spatial axis at least ROI_SHAPE, by repeating edge values ([1, D, H, W])."""
    shortfall = [max(0, ROI_SHAPE[axis] - image.shape[axis + 1]) for axis in range(3)]
    paddings = [(0, 0)] + [(short // 2, short - short // 2) for short in shortfall]
    return np.pad(image, paddings, mode="edge"), np.pad(label, paddings, mode="edge")


def fit_to_windows(image: Image, label: Label) -> tuple[Image, Label]:
    """Step 4: crop a small remainder, then pad to a multiple of the stride, at least ROI_SHAPE."""
    shape = image.shape[1:]
    excess = [shape[axis] % WINDOW_STRIDE[axis] for axis in range(3)]
    # Less than half a stride over a multiple: cropped (centred, the odd voxel off the end).
    excess = [e if e < WINDOW_STRIDE[axis] // 2 else 0 for axis, e in enumerate(excess)]
    d, h, w = (slice(e // 2, shape[axis] - (e - e // 2)) for axis, e in enumerate(excess))
    cropped_image = image[:, d, h, w]
    cropped_label = label[:, d, h, w]
    paddings = window_paddings(cropped_image.shape[1:])
    return (
        np.pad(cropped_image, paddings, mode="constant", constant_values=[PADDING_VALUE]),
        np.pad(cropped_label, paddings, mode="constant", constant_values=[LABEL_PADDING_VALUE]),
    )


def window_paddings(shape: Sequence[int]) -> list[tuple[int, int]]:
    """np.pad widths ([1, D, H, W]) that bring each axis to a multiple of the stride that is at
    least the window (the reference's constant_pad_volume)."""
    paddings = [(0, 0)]
    for axis in range(3):
        stride = WINDOW_STRIDE[axis]
        missing = (stride - shape[axis] % stride) % stride
        if shape[axis] + missing < ROI_SHAPE[axis]:
            missing += stride
        paddings.append((missing // 2, missing - missing // 2))
    return paddings


def reshaped_affine(affine: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The affine of the resampled volume: each axis's one non-zero entry replaced by the target
    spacing with its sign; the origin is kept (the reference's aux["reshaped_affine"]).

    The reference handles axis-aligned affines only (one non-zero per row of the 3x3 part; KiTS19's
    are): anything else is refused here rather than failing there with a NumPy truth-value error.
    """
    original = np.array(affine, dtype=np.float64)
    if original.shape != (4, 4) or not np.all(np.isfinite(original)):
        raise HarnessError(f"a NIfTI affine must be 4x4 and finite, not {original.tolist()}")
    reshaped = original.copy()
    for row in range(3):
        columns = np.flatnonzero(original[row, :3])
        if len(columns) != 1:
            raise HarnessError(
                f"affine row {row} {original[row, :3].tolist()} is not axis-aligned: MLCommons' "
                "preprocessing takes only affines with one non-zero per row (as KiTS19's have)"
            )
        column = int(columns[0])
        sign = -1 if original[row, column] < 0 else 1
        reshaped[row, column] = TARGET_SPACING[column] * sign
    return reshaped
