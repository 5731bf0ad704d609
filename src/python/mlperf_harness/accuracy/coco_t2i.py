"""FID and CLIP score over an accuracy log of generated images, as MLCommons'
`text_to_image/tools/accuracy_coco.py` computes them (read there; written here without torch):

- the log is read in order; a `qsl_idx` already seen is skipped; each entry's hex data is the image
  as uint8 [H, W, 3] (the reference reshapes to 1024 x 1024 x 3; here the side follows from the
  length, which must be a square image's);
- CLIP score: for each image, 100 x the cosine of open_clip ViT-B/32's image feature (PIL bicubic
  resize of the shortest side to 224, centre crop, OpenAI's mean and std) and the text feature of
  its caption (`df.iloc[qsl_idx]["caption"]`, open_clip.tokenize); the score is their mean;
- FID: the Inception's 2,048 features of each image (ToTensor: / 255, CHW), their mean and
  covariance (np.cov, rowvar False) against the reference statistics file's `mu` and `sigma`, by
  `calculate_frechet_distance`: ||mu1 - mu2||^2 + Tr(S1) + Tr(S2) - 2 Tr(sqrtm(S1 S2)), sqrtm by
  scipy.linalg (with eps 1e-6 added to both diagonals when the product's root is not finite, the
  real part kept when the imaginary is within 1e-3 on the diagonal);
- the result line is the reference's: `Accuracy Results: {'FID_SCORE': '<fid>', 'CLIP_SCORE':
  '<clip>'}` (the numbers as Python's str prints them), which MLCommons' checker parses.

The feature extractors are t2i_features.py's graphs on ONNX Runtime: with the official weights
(t2i_weights.py) the same networks as the reference's; with seeded weights for the stand-in.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import linalg  # type: ignore[import-untyped]  # no stubs published

from mlperf_harness.accuracy.t2i_features import (
    CLIP_MEAN,
    CLIP_STD,
    FEATURES,
    PIXELS,
)
from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.benchmarks.sdxl.stand_in_model import INPUT_IDS, POOLED
from mlperf_harness.datasets.clip_bpe import ClipTokenizer
from mlperf_harness.errors import HarnessError

ACCURACY_TXT = "accuracy.txt"
FID_RANGE = (23.01085758, 23.95007626)  # v6.1's checker: the reference's FID bounds
CLIP_RANGE = (31.68631873, 31.81331801)  # and CLIP score bounds
FEATURE_BATCH = 8


def frechet_distance(
    mu1: npt.NDArray[np.float64],
    sigma1: npt.NDArray[np.float64],
    mu2: npt.NDArray[np.float64],
    sigma2: npt.NDArray[np.float64],
    eps: float = 1e-6,
) -> float:
    mu1, mu2 = np.atleast_1d(mu1), np.atleast_1d(mu2)
    sigma1, sigma2 = np.atleast_2d(sigma1), np.atleast_2d(sigma2)
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape:
        raise HarnessError(
            f"FID statistics of different sizes: {mu1.shape[0]} reference features against "
            f"{mu2.shape[0]} of the images' extractor"
        )
    diff = mu1 - mu2
    # The reference calls sqrtm(..., disp=False): no warning printed for a singular product (a
    # set of fewer images than features). SciPy 1.17 deprecates `disp`; the root is the same.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        covmean = linalg.sqrtm(sigma1.dot(sigma2))
        if not np.isfinite(covmean).all():
            offset = np.eye(sigma1.shape[0]) * eps
            covmean = linalg.sqrtm((sigma1 + offset).dot(sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=1e-3):
            raise HarnessError(
                f"FID: the covariances' product has an imaginary root ({np.max(np.abs(covmean.imag)):.3g})"
            )
        covmean = covmean.real
    return float(diff.dot(diff) + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean))


def statistics(
    features: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    return np.mean(features, axis=0), np.cov(features, rowvar=False)


def read_statistics(path: Path) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The reference statistics (`tools/val2014.npz`: mu, sigma), or one line."""
    if not path.is_file():
        raise HarnessError(
            f"the FID reference statistics are missing: {path} (MLCommons' text_to_image/tools/"
            "val2014.npz)"
        )
    try:
        with np.load(path) as stats:
            return np.asarray(stats["mu"]), np.asarray(stats["sigma"])
    except (OSError, ValueError, KeyError) as error:
        raise HarnessError(f"{path} is not FID statistics (mu, sigma): {error}") from error


def iter_log_images(path: Path) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
    """(qsl_idx, image [side, side, 3]) of each first occurrence, in the log's order."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot read the accuracy log {path}: {error}") from error
    seen: set[int] = set()
    for entry in entries:
        idx = int(entry["qsl_idx"])
        if idx in seen:
            continue
        seen.add(idx)
        data = np.frombuffer(bytes.fromhex(entry["data"]), np.uint8)
        side = math.isqrt(len(data) // 3)
        if side * side * 3 != len(data) or side == 0:
            raise HarnessError(
                f"{path}: sample {idx}'s response is {len(data)} bytes, not a square RGB image"
            )
        yield idx, data.reshape(side, side, 3)


def clip_pixels(image: npt.NDArray[np.uint8], size: int) -> npt.NDArray[np.float32]:
    """open_clip's image transform: bicubic resize of the shortest side (PIL), centre crop, RGB,
    / 255, OpenAI's normalisation -> [3, size, size]."""
    from PIL import Image

    picture = Image.fromarray(image)
    w, h = picture.size
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = size, int(size * long / short)
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    picture = picture.resize((new_w, new_h), Image.Resampling.BICUBIC)
    left, top = round((new_w - size) / 2.0), round((new_h - size) / 2.0)
    picture = picture.crop((left, top, left + size, top + size)).convert("RGB")
    x = np.asarray(picture, np.float32).transpose(2, 0, 1) / np.float32(255)
    mean = np.array(CLIP_MEAN, np.float32).reshape(3, 1, 1)
    std = np.array(CLIP_STD, np.float32).reshape(3, 1, 1)
    normalised: npt.NDArray[np.float32] = ((x - mean) / std).astype(np.float32)
    return normalised


def inception_pixels(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """torchvision's ToTensor of the RGB image: [3, H, W] in [0, 1]."""
    return (image.astype(np.float32) / np.float32(255)).transpose(2, 0, 1)


@dataclass
class Extractors:
    """ONNX Runtime sessions of the three graphs and the CLIP tokenizer."""

    inception: Any
    clip_image: Any
    clip_text: Any
    tokenizer: ClipTokenizer
    clip_size: int = 224

    def inception_features(
        self, images: Sequence[npt.NDArray[np.uint8]]
    ) -> npt.NDArray[np.float64]:
        out = []
        for start in range(0, len(images), FEATURE_BATCH):
            batch = np.stack([inception_pixels(im) for im in images[start : start + FEATURE_BATCH]])
            out.append(np.asarray(self.inception.run([FEATURES], {PIXELS: batch})[0], np.float64))
        return np.concatenate(out)

    def clip_scores(
        self, images: Sequence[npt.NDArray[np.uint8]], captions: Sequence[str]
    ) -> list[float]:
        scores: list[float] = []
        for start in range(0, len(images), FEATURE_BATCH):
            chunk = images[start : start + FEATURE_BATCH]
            pixels = np.stack([clip_pixels(im, self.clip_size) for im in chunk])
            (image_features,) = self.clip_image.run([FEATURES], {PIXELS: pixels})
            ids = np.stack(
                [self.tokenizer.row(c, pad_id=0) for c in captions[start : start + len(chunk)]]
            )
            (text_features,) = self.clip_text.run([POOLED], {INPUT_IDS: ids})
            image_features = image_features / np.linalg.norm(image_features, axis=-1, keepdims=True)
            text_features = text_features / np.linalg.norm(text_features, axis=-1, keepdims=True)
            similarity = np.sum(image_features * text_features, axis=-1)
            scores += [100.0 * float(s) for s in similarity.astype(np.float32)]
        return scores


@dataclass(frozen=True)
class T2iAccuracy:
    fid: float
    clip: float
    images: int
    total: int

    @property
    def complete(self) -> bool:
        return self.images == self.total

    def line(self) -> str:
        """The reference's words: its result dict, printed."""
        result = {"FID_SCORE": f"{self.fid}", "CLIP_SCORE": f"{self.clip}"}
        return f"Accuracy Results: {result}"


def score_images(
    indexed: Sequence[tuple[int, npt.NDArray[np.uint8]]],
    captions: Sequence[str],
    reference_stats: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    extractors: Extractors,
) -> T2iAccuracy:
    if not indexed:
        raise HarnessError("the accuracy log holds no images")
    for idx, _ in indexed:
        if not 0 <= idx < len(captions):
            raise HarnessError(
                f"the accuracy log answers sample {idx}, beyond the {len(captions)} captions: "
                "a caption list of another length than the run's"
            )
    images = [image for _, image in indexed]
    clip = extractors.clip_scores(images, [captions[idx] for idx, _ in indexed])
    mu, sigma = statistics(extractors.inception_features(images))
    fid = frechet_distance(reference_stats[0], reference_stats[1], mu, sigma)
    return T2iAccuracy(fid=fid, clip=float(np.mean(clip)), images=len(images), total=len(captions))


def score_accuracy_log(
    path: Path,
    captions: Sequence[str],
    reference_stats: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    extractors: Extractors,
) -> T2iAccuracy:
    return score_images(list(iter_log_images(path)), captions, reference_stats, extractors)


def write_accuracy_txt(log_dir: Path, accuracy: T2iAccuracy) -> Path:
    path = log_dir / ACCURACY_TXT
    write_text_atomic(path, accuracy.line() + "\n")
    return path


def in_reference_ranges(accuracy: T2iAccuracy) -> bool:
    return (
        FID_RANGE[0] <= accuracy.fid <= FID_RANGE[1]
        and CLIP_RANGE[0] <= accuracy.clip <= CLIP_RANGE[1]
    )


def write_compliance_images(
    path: Path,
    indexed: Sequence[tuple[int, npt.NDArray[np.uint8]]],
    ids: Sequence[int],
    captions: Sequence[str],
) -> list[Path]:
    """accuracy_coco.py --compliance-images-path: <id>.png of each listed sample in the log and
    captions.txt ("<id>  <caption>" per listed id)."""
    from PIL import Image

    from mlperf_harness.atomic import write_bytes_atomic

    path.mkdir(parents=True, exist_ok=True)
    by_index = dict(indexed)
    written = []
    for idx in ids:
        if idx in by_index:
            import io

            buffer = io.BytesIO()
            Image.fromarray(by_index[idx]).save(buffer, format="PNG")
            target = path / f"{idx}.png"
            write_bytes_atomic(target, buffer.getvalue())
            written.append(target)
    write_text_atomic(
        path / "captions.txt",
        "".join(f"{idx}  {captions[idx]}\n" for idx in ids if idx < len(captions)),
    )
    return written
