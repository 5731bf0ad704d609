"""A generated stand-in for the ImageNet validation set: ten procedurally distinct image classes.

Used when no real data is present (the embedded default). Each class has its own colour palette AND its
own texture (stripes at three angles, checkerboard, rings, dots, gradient, noise, spokes, blobs): with
texture alone, classes that differ only in texture were separated poorly by a random-feature model
(see DESIGN.md). Every image varies in size, aspect ratio, frequency, phase, colour and noise, so the
reference resize/crop path is exercised.

A set is written in the ImageNet layout: JPEG files plus `val_map.txt` with `<filename> <label>` lines.
Stand-in class k is ImageNet label k (labels 0..9; IMAGENET_LABELS). Output is deterministic: the same
seed gives byte-identical files, and image i depends only on (seed, i), so a larger count extends a
smaller one. The splits (train, calibration, validation) get distinct seeds and so never share images.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.datasets.imagenet.layout import VAL_MAP_NAME
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled

FloatImage = npt.NDArray[np.float32]
# A texture maps (rng, u, v) to a blend mask in [0, 1]; u and v are pixel coordinates centred on the
# image and divided by its short side, so a texture looks alike at every image size.
Texture = Callable[[np.random.Generator, FloatImage, FloatImage], FloatImage]

IMAGE_SUFFIX = ".JPEG"  # as the ImageNet validation files are named

# The splits of the generated set and their seed offsets: split seed = seed * len(SPLITS) + offset, which
# is one-to-one over (seed, split), so two splits never draw the same images.
SPLITS: dict[str, int] = {"train": 0, "calibration": 1, "validation": 2}

_SHORT_SIDE_RANGE = (150, 360)  # pixels; the reference resize scales the short side to 256
_ASPECT_RANGE = (0.6, 1.7)  # width / height
_JPEG_QUALITY_RANGE = (80, 96)
_COLOUR_JITTER = 22.0  # per channel, uniform +-, on 0..255
_PIXEL_NOISE_SIGMA = 6.0


def _uniform(rng: np.random.Generator, low: float, high: float) -> float:
    """A Python float, so that float32 images stay float32 (NumPy scalars would promote them)."""
    return float(rng.uniform(low, high))


def _phase(rng: np.random.Generator) -> float:
    return _uniform(rng, 0.0, 2 * math.pi)


def _square_wave(phase: FloatImage, sharpness: float = 6.0) -> FloatImage:
    """A smoothed square wave of sin(phase) in [0, 1]: hard edges without heavy aliasing."""
    wave: FloatImage = (0.5 + 0.5 * np.tanh(sharpness * np.sin(phase))).astype(
        np.float32, copy=False
    )
    return wave


def _along(u: FloatImage, v: FloatImage, angle: float) -> FloatImage:
    """The coordinate along direction `angle` (radians)."""
    return (u * math.cos(angle) + v * math.sin(angle)).astype(np.float32, copy=False)


def _stripes(angle_degrees: float) -> Texture:
    """Stripes whose waves run along `angle_degrees` (0: vertical stripes)."""

    def texture(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
        angle = math.radians(angle_degrees + _uniform(rng, -8.0, 8.0))
        frequency = _uniform(rng, 5.0, 9.0)
        return _square_wave(2 * math.pi * frequency * _along(u, v, angle) + _phase(rng))

    return texture


def _checkerboard(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
    angle = math.radians(_uniform(rng, -10.0, 10.0))
    frequency = 2 * math.pi * _uniform(rng, 3.0, 6.0)
    a = np.sin(frequency * _along(u, v, angle) + _phase(rng))
    b = np.sin(frequency * _along(u, v, angle + math.pi / 2) + _phase(rng))
    result: FloatImage = 0.5 + 0.5 * np.tanh(6.0 * a * b)
    return result


def _rings(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
    cu, cv = _uniform(rng, -0.2, 0.2), _uniform(rng, -0.2, 0.2)
    radius = np.hypot(u - cu, v - cv)
    return _square_wave(2 * math.pi * _uniform(rng, 4.0, 8.0) * radius + _phase(rng))


def _dots(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
    frequency = _uniform(rng, 4.0, 7.0)
    du = np.mod(frequency * u + _uniform(rng, 0.0, 1.0), 1.0) - 0.5
    dv = np.mod(frequency * v + _uniform(rng, 0.0, 1.0), 1.0) - 0.5
    radius = _uniform(rng, 0.22, 0.34)  # in cells
    result: FloatImage = 0.5 + 0.5 * np.tanh(25.0 * (radius - np.hypot(du, dv)))
    return result


def _gradient(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
    t = _along(u, v, _phase(rng))
    low, high = float(t.min()), float(t.max())
    result: FloatImage = (t - low) / max(high - low, 1e-6)
    return result


def _noise(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
    """Value noise: a coarse random grid, upsampled smoothly to the image."""
    cells = int(rng.integers(8, 16))
    coarse = rng.random((cells, cells), dtype=np.float32)
    height, width = u.shape
    result = cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC)
    return np.clip(result, 0.0, 1.0).astype(np.float32, copy=False)


def _spokes(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
    cu, cv = _uniform(rng, -0.15, 0.15), _uniform(rng, -0.15, 0.15)
    count = int(rng.integers(6, 13))
    return _square_wave(count * np.arctan2(v - cv, u - cu) + _phase(rng))


def _blobs(rng: np.random.Generator, u: FloatImage, v: FloatImage) -> FloatImage:
    mask: FloatImage = np.zeros(u.shape, dtype=np.float32)
    for _ in range(int(rng.integers(5, 12))):
        cu, cv = _uniform(rng, -0.6, 0.6), _uniform(rng, -0.6, 0.6)
        ru, rv = _uniform(rng, 0.06, 0.2), _uniform(rng, 0.06, 0.2)
        angle = _uniform(rng, 0.0, math.pi)
        along = _along(u - cu, v - cv, angle) / ru
        across = _along(u - cu, v - cv, angle + math.pi / 2) / rv
        mask = np.maximum(mask, 0.5 + 0.5 * np.tanh(8.0 * (1.0 - np.hypot(along, across))))
    return mask


# Class k: (name, texture, foreground RGB, background RGB). Palettes are far apart in colour so that
# colour alone nearly separates the classes; the textures make them differ in structure as well.
_CLASSES: tuple[tuple[str, Texture, tuple[int, int, int], tuple[int, int, int]], ...] = (
    ("stripes_0", _stripes(0.0), (200, 40, 40), (240, 230, 140)),
    ("stripes_60", _stripes(60.0), (40, 60, 200), (235, 235, 235)),
    ("stripes_120", _stripes(120.0), (30, 160, 60), (30, 30, 30)),
    ("checkerboard", _checkerboard, (20, 20, 20), (250, 150, 30)),
    ("rings", _rings, (190, 40, 160), (60, 200, 210)),
    ("dots", _dots, (240, 240, 240), (20, 30, 90)),
    ("gradient", _gradient, (110, 40, 150), (170, 220, 60)),
    ("noise", _noise, (230, 100, 20), (60, 20, 120)),
    ("spokes", _spokes, (240, 210, 30), (20, 110, 110)),
    ("blobs", _blobs, (240, 150, 170), (90, 100, 30)),
)

NUM_CLASSES = len(_CLASSES)
CLASS_NAMES: tuple[str, ...] = tuple(name for name, *_ in _CLASSES)
# The ImageNet label (0..999) that stand-in class k stands for: a fixed, documented mapping.
IMAGENET_LABELS: tuple[int, ...] = tuple(range(NUM_CLASSES))


def class_of_index(index: int) -> int:
    """The class of image `index` in a set: classes cycle, so every prefix of a set is balanced."""
    return index % NUM_CLASSES


def render_image(class_index: int, rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    """One image of class `class_index` as HxWx3 RGB uint8, its variation drawn from `rng`."""
    if not 0 <= class_index < NUM_CLASSES:
        raise ValueError(f"class index {class_index} out of range 0..{NUM_CLASSES - 1}")
    _, texture, foreground, background = _CLASSES[class_index]
    short_side = int(rng.integers(_SHORT_SIDE_RANGE[0], _SHORT_SIDE_RANGE[1] + 1))
    aspect = rng.uniform(*_ASPECT_RANGE)
    height, width = (short_side, round(short_side * aspect))
    if width < short_side:  # aspect < 1: portrait, the width is the short side
        height, width = round(short_side / aspect), short_side
    # float32 throughout: rendering is most of the generation time.
    column = ((np.arange(width, dtype=np.float32) - (width - 1) / 2) / short_side)[None, :]
    row = ((np.arange(height, dtype=np.float32) - (height - 1) / 2) / short_side)[:, None]
    u, v = np.broadcast_arrays(column, row)
    mask = texture(rng, u, v)[..., None]
    jitter = rng.uniform(-_COLOUR_JITTER, _COLOUR_JITTER, size=(2, 3))
    fg = (np.asarray(foreground) + jitter[0]).astype(np.float32)
    bg = (np.asarray(background) + jitter[1]).astype(np.float32)
    image: FloatImage = bg + mask * (fg - bg)
    image *= np.float32(rng.uniform(0.85, 1.15))  # overall brightness
    # Uniform pixel noise of the same spread as Gaussian noise, at a third of the cost.
    image += (
        (rng.random(image.shape, dtype=np.float32) - 0.5) * math.sqrt(12.0) * _PIXEL_NOISE_SIGMA
    )
    rgb: npt.NDArray[np.uint8] = np.clip(np.rint(image), 0, 255).astype(np.uint8)
    return rgb


def image_file_name(index: int) -> str:
    return f"synthetic_{index + 1:08d}{IMAGE_SUFFIX}"


def encode_jpeg(rgb: npt.NDArray[np.uint8], quality: int) -> bytes:
    ok, encoded = cv2.imencode(
        ".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
    if not ok:
        raise HarnessError(
            "OpenCV could not encode a JPEG image (is opencv-python-headless intact?)"
        )
    return bytes(encoded.tobytes())


def _write_image(out_dir: Path, seed: int, index: int) -> str:
    """Render, encode and write image `index` of the set; return its `val_map.txt` line."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    class_index = class_of_index(index)
    rgb = render_image(class_index, rng)
    quality = int(rng.integers(_JPEG_QUALITY_RANGE[0], _JPEG_QUALITY_RANGE[1] + 1))
    name = image_file_name(index)
    write_bytes_atomic(out_dir / name, encode_jpeg(rgb, quality))
    return f"{name} {IMAGENET_LABELS[class_index]}\n"


def generate_image_set(out_dir: Path, count: int, seed: int, progress: bool = True) -> Path:
    """Write `count` JPEGs and their `val_map.txt` into `out_dir`; return the path of `val_map.txt`.

    `val_map.txt` is written last, so its presence means the set is complete.
    """
    if count < 1:
        raise HarnessError(f"image count must be at least 1, got {count}")
    if seed < 0:
        raise HarnessError(f"seed must be non-negative, got {seed}")
    out_dir.mkdir(parents=True, exist_ok=True)
    # Threads overlap well here (NumPy and OpenCV release the GIL), and every image has its own
    # generator, so the files do not depend on the scheduling.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        lines = list(
            tqdm(
                pool.map(functools.partial(_write_image, out_dir, seed), range(count)),
                total=count,
                desc=f"generate {out_dir.name}",
                unit="img",
                disable=bar_disabled(progress),
            )
        )
    val_map = out_dir / VAL_MAP_NAME
    write_bytes_atomic(val_map, "".join(lines).encode("ascii"))
    return val_map


def split_seed(seed: int, split: str) -> int:
    """The seed of one split of the set generated from `seed`."""
    if split not in SPLITS:
        raise HarnessError(f"unknown split {split!r}: expected one of {', '.join(SPLITS)}")
    return seed * len(SPLITS) + SPLITS[split]


def generate_split(root: Path, split: str, count: int, seed: int, progress: bool = True) -> Path:
    """Generate one split into `root / split`; return the path of its `val_map.txt`."""
    return generate_image_set(root / split, count, split_seed(seed, split), progress=progress)
