"""A generated stand-in for the OpenImages MLPerf subset: pictures of objects of a few classes at
several sizes, with COCO-format annotations in the subset's layout (layout.py).

Each class has its own colour and shape (rectangle or ellipse) and its own texture (plain, stripes
or a ring): an object is what a detector must find and box. Objects are sized and shaped as
RetinaNet's anchors are, measured on the 800x800 input the benchmark resizes every image to (side
32 to 460 px, height/width 0.5, 1 or 2 with some jitter), so every pyramid level has work; each
image has 1 to 5 of them, barely overlapping, on a smooth background with noise. Images are JPEGs of
480 to 1024 px a side (the resize to 800x800 stretches them, and their boxes with them). Files are
deterministic: image i of a split depends only on (seed, split, i).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_bytes_atomic, write_json_atomic
from mlperf_harness.datasets.openimages.layout import ANNOTATIONS_FILE, IMAGES_DIR
from mlperf_harness.errors import HarnessError

# name, BGR colour, shape, texture
CLASSES: tuple[tuple[str, tuple[int, int, int], str, str], ...] = (
    ("red box", (40, 40, 220), "rectangle", "plain"),
    ("green disc", (50, 200, 50), "ellipse", "plain"),
    ("blue box", (220, 90, 30), "rectangle", "stripes"),
    ("yellow disc", (30, 220, 230), "ellipse", "ring"),
    ("magenta box", (200, 40, 200), "rectangle", "ring"),
    ("cyan disc", (220, 220, 40), "ellipse", "stripes"),
    ("orange box", (20, 140, 250), "rectangle", "plain"),
    ("dark disc", (40, 40, 40), "ellipse", "plain"),
)
SPLITS = {"train": 0, "validation": 1, "calibration": 2}
INPUT_SIZE = 800  # what the object sizes are measured on (the benchmark's input)
_SIDE_RANGE = (32.0, 460.0)  # object scale sqrt(w h) on the 800x800 input, log-uniform
_RATIOS = (0.5, 1.0, 2.0)  # height / width, as the anchors
_IMAGE_SIDE_RANGE = (480, 1024)
_MAX_OBJECTS = 5
_MAX_OVERLAP = 0.1  # IoU between two objects of an image
_JPEG_QUALITY = 92


@dataclass(frozen=True)
class GeneratedObject:
    category: int
    box: tuple[float, float, float, float]  # x, y, width, height in the original image's pixels


def _rng(seed: int, split: str, index: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, SPLITS[split], index]))


def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _layout(rng: np.random.Generator) -> list[tuple[int, list[float]]]:
    """Objects as (category, [x1, y1, x2, y2] on the 800x800 input)."""
    objects: list[tuple[int, list[float]]] = []
    for _ in range(int(rng.integers(1, _MAX_OBJECTS + 1))):
        for _attempt in range(20):
            side = math.exp(float(rng.uniform(math.log(_SIDE_RANGE[0]), math.log(_SIDE_RANGE[1]))))
            ratio = float(rng.choice(_RATIOS)) * float(rng.uniform(0.9, 1.1))
            width, height = side / math.sqrt(ratio), side * math.sqrt(ratio)
            if width >= INPUT_SIZE - 2 or height >= INPUT_SIZE - 2:
                continue
            x1 = float(rng.uniform(0, INPUT_SIZE - width))
            y1 = float(rng.uniform(0, INPUT_SIZE - height))
            box = [x1, y1, x1 + width, y1 + height]
            if all(_iou(box, other) <= _MAX_OVERLAP for _, other in objects):
                objects.append((int(rng.integers(len(CLASSES))), box))
                break
    return objects


def render(
    seed: int, split: str, index: int
) -> tuple[npt.NDArray[np.uint8], list[GeneratedObject]]:
    """Image `index` of a split (BGR) and its objects."""
    rng = _rng(seed, split, index)
    height = int(rng.integers(_IMAGE_SIDE_RANGE[0], _IMAGE_SIDE_RANGE[1] + 1))
    width = int(rng.integers(_IMAGE_SIDE_RANGE[0], _IMAGE_SIDE_RANGE[1] + 1))
    # A smooth background: two grey-ish colours blended along a random direction.
    v, u = np.mgrid[0:height, 0:width].astype(np.float32)
    angle = float(rng.uniform(0, 2 * math.pi))
    ramp = (u * math.cos(angle) + v * math.sin(angle)) / float(max(height, width))
    ramp = (ramp - ramp.min()) / max(float(ramp.max() - ramp.min()), 1e-6)
    first = rng.uniform(90, 170, size=3).astype(np.float32)
    second = rng.uniform(90, 170, size=3).astype(np.float32)
    image = first[None, None, :] * (1 - ramp[..., None]) + second[None, None, :] * ramp[..., None]
    scale_x, scale_y = width / INPUT_SIZE, height / INPUT_SIZE
    objects = []
    for category, (x1, y1, x2, y2) in _layout(rng):
        _, colour, shape, texture = CLASSES[category]
        left, top = round(x1 * scale_x), round(y1 * scale_y)
        right, bottom = round(x2 * scale_x), round(y2 * scale_y)
        right, bottom = max(right, left + 2), max(bottom, top + 2)
        rows, cols = bottom - top, right - left
        if shape == "rectangle":
            mask = np.ones((rows, cols), dtype=bool)
        else:  # the ellipse inscribed in the box, touching all four sides
            ev, eu = np.mgrid[0:rows, 0:cols].astype(np.float32)
            ry, rx = rows / 2, cols / 2
            mask = ((eu + 0.5 - rx) / rx) ** 2 + ((ev + 0.5 - ry) / ry) ** 2 <= 1.0
        jitter = rng.uniform(-20, 20, size=3).astype(np.float32)
        fill = np.clip(np.asarray(colour, np.float32) + jitter, 0, 255)
        patch = np.broadcast_to(fill, (*mask.shape, 3)).copy()
        if texture != "plain":
            pv, pu = np.mgrid[0 : mask.shape[0], 0 : mask.shape[1]].astype(np.float32)
            if texture == "stripes":
                period = max(6.0, min(mask.shape) / 5)
                light = np.sin(2 * math.pi * (pu + pv) / period) > 0
            else:
                cy, cx = mask.shape[0] / 2, mask.shape[1] / 2
                radius = np.hypot((pu - cx) / max(cx, 1), (pv - cy) / max(cy, 1))
                light = (radius > 0.35) & (radius < 0.6)
            patch[light] = patch[light] * 0.45 + 255 * 0.55
        region = image[top:bottom, left:right]
        region[mask] = patch[mask]
        objects.append(GeneratedObject(category, (left, top, right - left, bottom - top)))
    image += rng.normal(0, 5, size=image.shape).astype(np.float32)
    return np.clip(image, 0, 255).astype(np.uint8), objects


def _file_name(split: str, index: int) -> str:
    return f"{split}_{index:06d}.jpg"


def write_set(data_dir: Path, seed: int, split: str, indices: Sequence[int]) -> Path:
    """Write the images `indices` of `split` and their annotations file in the subset's layout
    under data_dir; returns the annotations file. Images already there are rewritten only if
    absent (each depends only on its seed, split and index)."""
    if split not in SPLITS:
        raise HarnessError(f"unknown split {split!r}: choose from {', '.join(SPLITS)}")
    image_dir = data_dir / IMAGES_DIR
    image_dir.mkdir(parents=True, exist_ok=True)

    def one(index: int) -> tuple[dict[str, Any], list[GeneratedObject]]:
        bgr, objects = render(seed, split, index)
        name = _file_name(split, index)
        path = image_dir / name
        if not path.is_file():
            ok, encoded = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, _JPEG_QUALITY])
            if not ok:
                raise HarnessError(f"cannot encode generated image {name}")
            write_bytes_atomic(path, encoded.tobytes())
        height, width = bgr.shape[:2]
        return {"file_name": name, "height": height, "width": width}, objects

    # OpenCV and NumPy release the GIL: threads share the cores.
    with ThreadPoolExecutor(max_workers=4) as pool:
        made = list(pool.map(one, indices))
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for image_number, (image, objects) in enumerate(made, start=1):
        images.append({"id": image_number, **image, "license": None, "coco_url": None})
        for obj in objects:
            x, y, w, h = obj.box
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_number,
                    "category_id": obj.category,
                    "bbox": [float(x), float(y), float(w), float(h)],
                    "area": float(w * h),
                    "iscrowd": 0,
                    "IsOccluded": 0,
                    "IsInside": 0,
                    "IsDepiction": 0,
                    "IsTruncated": 0,
                    "IsGroupOf": 0,
                }
            )
    content = {
        "info": {"dataset": "generated stand-in for openimages_mlperf", "version": "v6"},
        "licenses": [],
        "categories": [
            {"id": i, "name": name, "supercategory": None}
            for i, (name, *_rest) in enumerate(CLASSES)
        ],
        "images": images,
        "annotations": annotations,
    }
    path = data_dir / ANNOTATIONS_FILE
    write_json_atomic(path, content)
    return path
