"""The MLPerf reference image transform for ResNet-50 v1.5 (vision/classification_and_detection).

decode as BGR -> RGB -> resize keeping aspect ratio so the short side is 224 / 0.875 = 256 with area
interpolation -> centre-crop 224x224 -> subtract the per-channel means -> NCHW float32.
Integer truncation (int(), not round()) follows the reference so our arrays match it bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError

OUTPUT_SIZE = 224
CROP_FRACTION = 0.875
CHANNEL_MEANS_RGB = np.array([123.68, 116.78, 103.94], dtype=np.float32)


class ImageDecodeError(HarnessError):
    """An image file is missing, unreadable or not a decodable image."""


def read_bgr(path: Path) -> npt.NDArray[np.uint8]:
    """Decode an image file to HxWx3 BGR uint8 (grey images are expanded, as cv2.imread does)."""
    data = np.fromfile(path, dtype=np.uint8) if path.is_file() else None
    if data is None:
        raise ImageDecodeError(f"image not found: {path}")
    if data.size == 0:  # OpenCV asserts on an empty buffer instead of returning None
        raise ImageDecodeError(f"image file is empty (0 bytes): {path}")
    try:
        image = cv2.imdecode(data, cv2.IMREAD_COLOR)
    except cv2.error as error:  # OpenCV raises for some malformed inputs rather than returning None
        message = str(error).strip().splitlines()[-1]
        raise ImageDecodeError(f"not a decodable image ({message}): {path}") from error
    if image is None:
        raise ImageDecodeError(f"not a decodable image (corrupt or truncated?): {path}")
    # OpenCV's stubs type every result as a generic array; asarray pins the dtype without a copy.
    return np.asarray(image, dtype=np.uint8)


def resize_short_side(rgb: npt.NDArray[np.uint8], size: int = OUTPUT_SIZE) -> npt.NDArray[np.uint8]:
    """Resize so the short side is size / CROP_FRACTION, keeping the aspect ratio (area)."""
    height, width = rgb.shape[:2]
    target = int(100.0 * size / (CROP_FRACTION * 100.0))
    if height > width:
        new_w, new_h = target, int(target * height / width)
    else:
        new_h, new_w = target, int(target * width / height)
    resized = cv2.resize(rgb, (new_w, new_h), interpolation=cv2.INTER_AREA)
    return np.asarray(resized, dtype=np.uint8)


def center_crop(image: npt.NDArray[np.uint8], size: int = OUTPUT_SIZE) -> npt.NDArray[np.uint8]:
    height, width = image.shape[:2]
    left, top = int((width - size) / 2), int((height - size) / 2)
    return image[top : top + size, left : left + size]


def preprocess_bgr(bgr: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """One decoded BGR image -> float32 CHW (3, 224, 224), means subtracted."""
    rgb = np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)
    cropped = center_crop(resize_short_side(rgb))
    chw = (cropped.astype(np.float32) - CHANNEL_MEANS_RGB).transpose(2, 0, 1)
    return np.ascontiguousarray(chw)


def preprocess_file(path: Path) -> npt.NDArray[np.float32]:
    return preprocess_bgr(read_bgr(path))
