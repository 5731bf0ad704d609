"""Find SDXL's model, data and metric files, or fall back to the embedded stand-in.

Defaults (the run's and the actions' alike):
- model: `<scratch>/models/sdxl/onnx/` for the CPU (our ONNX interface: text_encoder.onnx,
  text_encoder_2.onnx, unet.onnx, vae_decoder.onnx, and tokenizer/merges.txt,
  tokenizer_2/merges.txt), `<scratch>/models/sdxl/stable-diffusion-xl-base-1.0/` for GPUs (the
  published diffusers layout: unet/, vae/, text_encoder/, text_encoder_2/, tokenizer/, ...);
- data: `<scratch>/data/coco2014/` in the reference's layout (datasets/coco_t2i.py) with the FID
  statistics `val2014.npz` beside the captions;
- metric weights: `<scratch>/models/sdxl/metrics/` (accuracy/t2i_weights.py names the files).

With no model the stand-in is built and used with its own captions, latents and metrics; anything
but the real model on the real data is marked stand-in (not a valid MLPerf result).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.benchmarks.sdxl import stand_in
from mlperf_harness.benchmarks.sdxl.pipeline import MODEL_FILES
from mlperf_harness.benchmarks.sdxl.stand_in import BuiltStandIn
from mlperf_harness.datasets import coco_t2i
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

MERGES = ("tokenizer/merges.txt", "tokenizer_2/merges.txt")
STATISTICS_FILE = "val2014.npz"


@dataclass(frozen=True)
class SdxlFiles:
    model_dir: Path
    merges: tuple[Path, Path]
    data_dir: Path
    captions: Path
    latents: Path
    statistics: Path
    metrics_dir: Path  # the stand-in's seeded extractors, or the official weight files
    expected_captions: int | None  # the real set's 5,000; None: the stand-in's own
    stand_in: bool
    model_origin: str
    data_origin: str
    built: BuiltStandIn | None = None

    @property
    def sha256(self) -> str:
        """One digest of the pipeline: the UNet file's (it names the model in result.json)."""
        return file_sha256(self.model_dir / MODEL_FILES[2])


def default_model_dir(scratch: Path) -> Path:
    return scratch / "models" / "sdxl" / "onnx"


def default_checkpoint_dir(scratch: Path) -> Path:
    return scratch / "models" / "sdxl" / "stable-diffusion-xl-base-1.0"


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "coco2014"


def default_metrics_dir(scratch: Path) -> Path:
    return scratch / "models" / "sdxl" / "metrics"


def default_preprocessed_dir(scratch: Path, captions: Path) -> Path:
    key = hashlib.sha256(str(captions.resolve()).encode()).hexdigest()[:12]
    return scratch / "preprocessed" / "coco2014-sdxl" / key


def check_model_dir(model_dir: Path) -> tuple[Path, Path]:
    """One line unless the directory holds the ONNX pipeline and both tokenizers' merges."""
    needed = [model_dir / name for name in MODEL_FILES] + [model_dir / m for m in MERGES]
    missing = [str(p.relative_to(model_dir)) for p in needed if not p.is_file()]
    if missing:
        raise HarnessError(
            f"{model_dir} is not an SDXL pipeline of this harness's ONNX interface: missing "
            f"{', '.join(missing)} (docs/sdxl.md)"
        )
    return model_dir / MERGES[0], model_dir / MERGES[1]


def choose(
    model_path: Path | None, data_dir: Path | None, scratch: Path, backend: str = "onnxruntime"
) -> SdxlFiles:
    """The run's files. The torch backend's model is a diffusers checkpoint directory (or, absent,
    SDXL's real size with seeded weights: gpu_pipeline.py); its tokenizers, data and metrics are
    found the same way."""
    if backend == "torch":
        model_dir = model_path or default_checkpoint_dir(scratch)
    else:
        model_dir = model_path or default_model_dir(scratch)
    real_model = model_path is not None or model_dir.is_dir()
    if not real_model and data_dir is None:
        built = stand_in.ensure_stand_in(scratch)
        return SdxlFiles(
            model_dir=built.model_dir,
            merges=(built.merges, built.merges),
            data_dir=built.data_dir,
            captions=coco_t2i.captions_file(built.data_dir),
            latents=coco_t2i.latents_file(built.data_dir),
            statistics=built.statistics,
            metrics_dir=built.metrics_dir,
            expected_captions=None,
            stand_in=True,
            model_origin=(
                "real-size stand-in (SDXL's configurations, seeded random weights, 1024x1024 images)"
                if backend == "torch"
                else f"stand-in model (SDXL's networks at reduced size, {built.record.image_size}"
                f"x{built.record.image_size} images, seeded weights)"
            ),
            data_origin=f"{built.record.samples} generated captions in {built.data_dir}",
            built=built,
        )
    if not real_model:
        raise HarnessError(
            f"no SDXL model at {model_dir}: give --model_path, or leave --data_dir out to run the "
            "stand-in"
        )
    if backend == "torch":
        merges = (model_dir / MERGES[0], model_dir / MERGES[1])
        for path in merges:
            if not path.is_file():
                raise HarnessError(
                    f"{model_dir} lacks {path.relative_to(model_dir)} (SDXL's tokenizer)"
                )
    else:
        merges = check_model_dir(model_dir)
    directory = data_dir or default_data_dir(scratch)
    captions = coco_t2i.captions_file(directory)
    return SdxlFiles(
        model_dir=model_dir,
        merges=merges,
        data_dir=directory,
        captions=captions,
        latents=coco_t2i.latents_file(directory),
        statistics=directory / STATISTICS_FILE,
        metrics_dir=default_metrics_dir(scratch),
        expected_captions=coco_t2i.REFERENCE_CAPTIONS,
        stand_in=False,
        model_origin=str(model_dir),
        data_origin=str(directory),
    )
