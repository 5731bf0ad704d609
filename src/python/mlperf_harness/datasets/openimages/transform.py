"""MLCommons' RetinaNet preprocessing (vision/classification_and_detection/python/dataset.py,
pre_process_openimages_retinanet, dims 800x800, NCHW), written from its documented steps:

    OpenCV decode (BGR) -> float32 -> RGB -> cv2.resize to 800x800, INTER_LINEAR -> / 255 -> CHW

The resize ignores the aspect ratio (boxes are normalised, so they stretch with the image). The
mean/std normalisation is the model's own first step (torchvision's GeneralizedRCNNTransform inside
the published model; the stand-in's graph does the same), not the preprocessing's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError

OUTPUT_SIZE = 800
# int8 copies: round(x * 127), x in [0, 1]: the fp32 input at a fixed scale of 1/127.
INT8_SCALE = 1.0 / 127.0


def preprocess_bgr(bgr: npt.NDArray[Any], size: int = OUTPUT_SIZE) -> npt.NDArray[np.float32]:
    image: npt.NDArray[np.float32] = np.asarray(bgr, dtype=np.float32)
    if image.ndim < 3 or image.shape[2] != 3:
        rgb = cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)  # grey images, as the reference
    else:
        rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    resized = cv2.resize(rgb, (size, size), interpolation=cv2.INTER_LINEAR)
    scaled = np.asarray(resized, dtype=np.float32) / np.float32(255.0)
    return np.ascontiguousarray(scaled.transpose(2, 0, 1))


def preprocess_file(path: Path, size: int = OUTPUT_SIZE) -> npt.NDArray[np.float32]:
    """One image file -> float32 [3, size, size]; one line if it is absent or not an image."""
    if not path.is_file():
        raise HarnessError(f"image not found: {path}")
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise HarnessError(f"cannot decode image {path}: not an image, or corrupt")
    return preprocess_bgr(bgr, size)


def quantize_int8(chw: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    quantized: npt.NDArray[np.int8] = np.clip(
        np.rint(chw / np.float32(INT8_SCALE)), -128, 127
    ).astype(np.int8)
    return quantized
