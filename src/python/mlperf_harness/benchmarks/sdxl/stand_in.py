"""SDXL's embedded default: generated captions in the reference's data layout, a BPE vocabulary
learned from them, seeded latents, SDXL's four networks at reduced size with seeded weights
(stand_in_model.py), and the metrics' feature extractors at reduced width with seeded weights
(accuracy/t2i_features.py); built once per scratch path (seconds on a 2-core CPU) and kept with a
record of its FID and CLIP score, measured at build time by running the pipeline directly on
every sample.

What it can show of accuracy: nothing about image quality (nothing is fitted: its images are what
seeded networks draw). Its FID is measured against statistics of pictures rendered from the
captions (coloured shapes), through the same seeded Inception; a run passes when its FID and CLIP
score fall within the reference's relative range widths of the build-time figures (FID 23.01-23.95
is 23.48 +- 2.0%, CLIP 31.686-31.813 is 31.75 +- 0.2%): the harness must give the pipeline's own
images. Everything is marked "stand-in: not a valid MLPerf result".

`pants run benchmarks/sdxl:stand_in` builds it on its own and prints what it measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx

from mlperf_harness.accuracy import t2i_features as features
from mlperf_harness.accuracy.coco_t2i import Extractors, score_images, statistics
from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.backends.onnxruntime.session import cpu_session
from mlperf_harness.benchmarks.sdxl import stand_in_model as parts
from mlperf_harness.benchmarks.sdxl.pipeline import (
    MODEL_FILES,
    NEGATIVE_PROMPT,
    OnnxPipeline,
    PipelineInputs,
)
from mlperf_harness.benchmarks.stand_in_cli import run_stand_in, stand_in_parser
from mlperf_harness.datasets import coco_t2i
from mlperf_harness.datasets.clip_bpe import ClipTokenizer, merges_bytes, train_merges
from mlperf_harness.errors import HarnessError
from mlperf_harness.records import read_record
from mlperf_harness.scratch_lock import build_once

SEED = 0
SAMPLES = 64  # the stand-in's captions: its sample count and performance sample count
MERGES = 200
METRIC_WIDTH_DIVISOR = 4  # the stand-in's Inception gives 512 features, its CLIP 128
FID_TOLERANCE, CLIP_TOLERANCE = 0.020, 0.002  # the reference ranges' half widths, relative
NOT_VALID = "stand-in: not a valid MLPerf result"
STAND_IN_MARK = "mlperf_harness.sdxl_stand_in"
RECORD_FILE_NAME = "stand_in.json"
MODEL_DIR, DATA_DIR, METRICS_DIR = "model", "coco2014", "metrics"
MERGES_FILE = "merges.txt"
STATISTICS_FILE = "val2014.npz"
INCEPTION_ONNX, CLIP_IMAGE_ONNX, CLIP_TEXT_ONNX = (
    "inception.onnx",
    "clip_image.onnx",
    "clip_text.onnx",
)

_COLOURS = {
    "red": (220, 40, 40),
    "green": (40, 180, 60),
    "blue": (40, 70, 220),
    "yellow": (230, 210, 40),
    "purple": (140, 50, 170),
    "orange": (240, 140, 30),
    "white": (240, 240, 240),
    "black": (20, 20, 20),
}
_SHAPES = ("circle", "square", "triangle", "stripe")
_PLACES = ("above", "below", "left of", "right of")


@dataclass(frozen=True)
class StandInRecord:
    seed: int
    samples: int
    vocab: int
    image_size: int
    latent_size: int
    fid: float
    clip: float
    metric_width_divisor: int
    build_seconds: float
    note: str = NOT_VALID


@dataclass(frozen=True)
class BuiltStandIn:
    directory: Path
    record: StandInRecord

    @property
    def model_dir(self) -> Path:
        return self.directory / MODEL_DIR

    @property
    def data_dir(self) -> Path:
        return self.directory / DATA_DIR

    @property
    def merges(self) -> Path:
        return self.directory / MODEL_DIR / MERGES_FILE

    @property
    def metrics_dir(self) -> Path:
        return self.directory / METRICS_DIR

    @property
    def statistics(self) -> Path:
        return self.directory / METRICS_DIR / STATISTICS_FILE

    def fid_range(self) -> tuple[float, float]:
        f = self.record.fid
        return f * (1 - FID_TOLERANCE), f * (1 + FID_TOLERANCE)

    def clip_range(self) -> tuple[float, float]:
        c = self.record.clip
        low, high = c * (1 - CLIP_TOLERANCE), c * (1 + CLIP_TOLERANCE)
        return min(low, high), max(low, high)


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "sdxl" / f"seed{SEED}-n{SAMPLES}"


def is_stand_in_model(model: onnx.ModelProto) -> bool:
    return any(entry.key == STAND_IN_MARK for entry in model.metadata_props)


def generated_captions(seed: int, count: int) -> list[str]:
    """Captions of two coloured shapes and where one is, e.g. 'A red circle above a blue square.'"""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 21]))
    colours = list(_COLOURS)
    out = []
    for _ in range(count):
        c1, c2 = rng.choice(len(colours), 2, replace=False)
        s1, s2 = rng.integers(len(_SHAPES), size=2)
        place = _PLACES[int(rng.integers(len(_PLACES)))]
        out.append(f"A {colours[c1]} {_SHAPES[s1]} {place} a {colours[c2]} {_SHAPES[s2]}.")
    return out


def render(caption: str, size: int) -> npt.NDArray[np.uint8]:
    """The picture a caption describes: the first shape where the caption puts it relative to the
    second, on grey. The stand-in's "real images", whose statistics FID is measured against."""
    words = caption.rstrip(".").lower().split()
    c1, s1 = words[1], words[2]
    place = " ".join(words[3:-3]) if words[4] == "of" else words[3]
    c2, s2 = words[-2], words[-1]
    image = np.full((size, size, 3), 128, np.uint8)
    offsets = {"above": (-1, 0), "below": (1, 0), "left of": (0, -1), "right of": (0, 1)}
    dy, dx = offsets[place]
    quarter = size // 4
    centre = (size // 2, size // 2)
    for colour, shape, (oy, ox) in ((c2, s2, (-dy, -dx)), (c1, s1, (dy, dx))):
        cy, cx = centre[0] + oy * quarter, centre[1] + ox * quarter
        yy, xx = np.mgrid[0:size, 0:size]
        r = size // 6
        if shape == "circle":
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        elif shape == "square":
            mask = (abs(yy - cy) <= r) & (abs(xx - cx) <= r)
        elif shape == "triangle":
            mask = (yy - cy <= r) & (yy - cy >= -r) & (abs(xx - cx) <= (yy - cy + r) / 2)
        else:
            mask = (abs(yy - cy) <= r // 3) & (abs(xx - cx) <= r * 2)
        image[mask] = _COLOURS[colour]
    return image


def ensure_stand_in(scratch: Path) -> BuiltStandIn:
    """The stand-in's files, built when absent; runs sharing a scratch path build it once."""
    work_dir = stand_in_dir(scratch)
    record_path = work_dir / RECORD_FILE_NAME

    def find() -> BuiltStandIn | None:
        record = read_record(StandInRecord, record_path)
        if record is None:
            return None
        built = BuiltStandIn(work_dir, record)
        needed = [built.model_dir / n for n in MODEL_FILES] + [built.merges, built.statistics]
        needed += [built.metrics_dir / n for n in (INCEPTION_ONNX, CLIP_IMAGE_ONNX, CLIP_TEXT_ONNX)]
        return built if all(p.is_file() for p in needed) else None

    def build() -> BuiltStandIn:
        remove_stale_temporaries([work_dir, work_dir / MODEL_DIR, work_dir / METRICS_DIR])
        _say(
            f"sdxl: no model given; building the stand-in (SDXL's networks at reduced size with "
            f"seeded weights, {SAMPLES} generated captions, seconds) in {work_dir}"
        )
        record = _build(work_dir)
        write_json_atomic(record_path, dataclasses.asdict(record))
        return BuiltStandIn(work_dir, record)

    return build_once(work_dir, "building the SDXL stand-in", find, build)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def stand_in_extractors(metrics_dir: Path, tokenizer: ClipTokenizer) -> Extractors:
    return Extractors(
        inception=cpu_session(metrics_dir / INCEPTION_ONNX),
        clip_image=cpu_session(metrics_dir / CLIP_IMAGE_ONNX),
        clip_text=cpu_session(metrics_dir / CLIP_TEXT_ONNX),
        tokenizer=tokenizer,
    )


def _build(work_dir: Path) -> StandInRecord:
    started = time.monotonic()
    captions = generated_captions(SEED, SAMPLES)
    merges = train_merges([*captions, NEGATIVE_PROMPT], MERGES)
    tokenizer = ClipTokenizer(merges)
    shape = parts.stand_in_shape(tokenizer.vocab_size)
    model_dir, data_dir, metrics_dir = (work_dir / d for d in (MODEL_DIR, DATA_DIR, METRICS_DIR))
    write_bytes_atomic(model_dir / MERGES_FILE, merges_bytes(merges))
    coco_t2i.write_captions(
        data_dir / coco_t2i.CAPTION_FILES[0],
        [coco_t2i.Caption(i, text) for i, text in enumerate(captions)],
    )
    rng = np.random.default_rng(np.random.SeedSequence([SEED, 22]))
    latents = rng.standard_normal((1, 4, shape.latent_size, shape.latent_size), dtype=np.float32)
    write_bytes_atomic(data_dir / coco_t2i.LATENT_FILES[0], coco_t2i.npy_bytes(latents))
    _say("sdxl stand-in: writing the text encoders, the UNet and the VAE decoder")
    doc = "NOT the official SDXL: its architecture at reduced size, seeded weights; no valid MLPerf result."
    meta = {STAND_IN_MARK: NOT_VALID, "mlperf_harness.seed": str(SEED)}
    graphs = (
        parts.text_encoder_model(
            parts.text_weights(shape.text1, SEED, 1), shape.text1, tokenizer.end_id, doc
        ),
        parts.text_encoder_model(
            parts.text_weights(shape.text2, SEED, 2), shape.text2, tokenizer.end_id, doc
        ),
        parts.unet_model(parts.unet_weights(shape.unet, SEED), shape.unet, doc),
        parts.vae_decoder_model(parts.vae_decoder_weights(shape.vae, SEED), shape.vae, doc),
    )
    for name, graph in zip(MODEL_FILES, graphs, strict=True):
        for key, value in meta.items():
            entry = graph.metadata_props.add()
            entry.key, entry.value = key, value
        write_bytes_atomic(model_dir / name, graph.SerializeToString())
    _say("sdxl stand-in: writing the metrics' seeded Inception and CLIP ViT-B/32 (narrowed)")
    d = METRIC_WIDTH_DIVISOR
    clip_shape = features.narrowed_clip(tokenizer.vocab_size, d)
    metric_graphs = {
        INCEPTION_ONNX: features.inception_model(features.seeded_inception_weights(d, SEED), d),
        CLIP_IMAGE_ONNX: features.clip_image_model(
            features.seeded_clip_image_weights(clip_shape, SEED), clip_shape
        ),
        CLIP_TEXT_ONNX: features.clip_text_model(
            parts.text_weights(clip_shape.text, SEED, 13), clip_shape, tokenizer.end_id
        ),
    }
    for name, graph in metric_graphs.items():
        write_bytes_atomic(metrics_dir / name, graph.SerializeToString())
    extractors = stand_in_extractors(metrics_dir, tokenizer)
    pictures = [render(c, shape.image_size) for c in captions]
    mu, sigma = statistics(extractors.inception_features(pictures))
    buffer = io.BytesIO()
    np.savez(buffer, mu=mu, sigma=sigma)
    write_bytes_atomic(metrics_dir / STATISTICS_FILE, buffer.getvalue())
    _say(f"sdxl stand-in: generating its {SAMPLES} images directly, for its FID and CLIP score")
    rows = coco_t2i.token_rows(captions, tokenizer, tokenizer)
    negative = coco_t2i.token_rows([NEGATIVE_PROMPT], tokenizer, tokenizer)[0]
    pipeline = OnnxPipeline(model_dir, PipelineInputs(latents, negative, shape.vae_scaling_factor))
    pipeline.load()
    images = np.concatenate([pipeline.generate(rows[i : i + 8]) for i in range(0, len(rows), 8)])
    accuracy = score_images(list(enumerate(images)), captions, (mu, sigma), extractors)
    _say(f"sdxl stand-in: {accuracy.line()}")
    if not (np.isfinite(accuracy.fid) and np.isfinite(accuracy.clip)):
        raise HarnessError(
            "the SDXL stand-in's FID or CLIP score is not finite; report this as a bug"
        )
    return StandInRecord(
        seed=SEED,
        samples=SAMPLES,
        vocab=tokenizer.vocab_size,
        image_size=shape.image_size,
        latent_size=shape.latent_size,
        fid=accuracy.fid,
        clip=accuracy.clip,
        metric_width_divisor=d,
        build_seconds=round(time.monotonic() - started, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    def report(_args: argparse.Namespace, built: BuiltStandIn) -> None:
        print(f"model {built.model_dir}\ndata {built.data_dir}\nmetrics {built.metrics_dir}")

    return run_stand_in(stand_in_parser("SDXL"), argv, ensure_stand_in, report, NOT_VALID)


if __name__ == "__main__":
    sys.exit(main())
