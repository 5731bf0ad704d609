"""Find RNN-T's model and LibriSpeech dev-clean, or fall back to the embedded stand-in.

The model is by default `<scratch>/models/rnnt/onnx/` (a model directory, model_files.py: what
`download_model --convert` makes from the published checkpoint `<scratch>/models/rnnt/rnnt.pt`); the
data `<scratch>/data/LibriSpeech/` with the reference's `dev-clean-wav.json` and WAV files. Without a
model the stand-in is built and runs on its own generated speech. The torch backend (GPU) also reads
the checkpoint `rnnt.pt` itself, and the real-size stand-in's directory (real_size.py, timing only).
Anything but a real model on the full dev-clean set (2,513 utterances) is marked stand-in (not a
valid MLPerf result).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.accuracy.librispeech_wer import REFERENCE_WER
from mlperf_harness.benchmarks.preprocessed_dirs import keyed_preprocessed_dir
from mlperf_harness.benchmarks.rnnt import stand_in
from mlperf_harness.benchmarks.rnnt.model_files import RnntModelFiles
from mlperf_harness.benchmarks.rnnt.real_size import RealSizeStandIn, find_real_size
from mlperf_harness.datasets.librispeech.manifest import LibriSpeechSet, read_manifest
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

CHECKPOINT_FILE = "rnnt.pt"


TORCH_ONLY = "torch"  # what reads a checkpoint or the real-size stand-in: torch_engine.py


@dataclass(frozen=True)
class ModelChoice:
    path: Path  # what the runners are given: a model directory, rnnt.pt or the real-size directory
    sha256: str
    stand_in: bool
    reference_accuracy: float | None  # 100 - WER, percent: what 99% is judged against
    origin: str
    real_size: RealSizeStandIn | None = None


@dataclass(frozen=True)
class DataChoice:
    dataset: LibriSpeechSet
    generated: bool
    origin: str
    preprocessed: Path | None = None  # the stand-in's utterances come preprocessed with it


def default_checkpoint_path(scratch: Path) -> Path:
    return scratch / "models" / "rnnt" / CHECKPOINT_FILE


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "rnnt" / "onnx"


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "LibriSpeech"


def default_preprocessed_dir(scratch: Path, data_dir: Path) -> Path:
    return keyed_preprocessed_dir(scratch, "librispeech", data_dir.name, [data_dir.resolve()])


def choose_model(
    model_path: Path | None, scratch: Path, backend: str = "onnxruntime"
) -> ModelChoice:
    """The run's model for `backend`; a checkpoint or the real-size stand-in on another backend
    than torch is refused in one line saying what to do instead."""
    path = model_path or default_model_path(scratch)
    if model_path is None and not path.exists():
        built = stand_in.ensure_stand_in(scratch)
        record = built.record
        return ModelChoice(
            path=built.model,
            sha256=record.sha256,
            stand_in=True,
            reference_accuracy=100.0 - record.heldout_wer_percent,
            origin=f"stand-in model (RNN-T at encoder width {record.encoder_hidden}, held-out "
            f"WER {record.heldout_wer_percent:.3f}%)",
        )
    real = find_real_size(path)
    if real is not None:
        if backend not in (TORCH_ONLY, "null"):
            raise HarnessError(
                f"{path} is the real-size stand-in (seeded weights, for GPU timing): it runs on "
                f"--backend torch, not {backend}"
            )
        return ModelChoice(
            path=path,
            sha256=file_sha256(real.path),
            stand_in=True,
            reference_accuracy=None,
            origin=f"real-size stand-in {path}",
            real_size=real,
        )
    if path.suffix == ".pt" and path.is_file() and backend in (TORCH_ONLY, "null"):
        return ModelChoice(
            path=path,
            sha256=file_sha256(path),
            stand_in=False,
            reference_accuracy=100.0 - REFERENCE_WER,
            origin=f"{path} (the published checkpoint, read by the torch engine)",
        )
    files = RnntModelFiles.read(path)  # one line unless it is a model directory
    return ModelChoice(
        path=files.directory,
        sha256=files.sha256,
        stand_in=files.stand_in,
        reference_accuracy=100.0 - REFERENCE_WER,
        origin=str(path),
    )


def choose_data(data_dir: Path | None, scratch: Path, model: ModelChoice) -> DataChoice:
    if model.real_size is not None:
        raise HarnessError("the real-size stand-in draws its own utterances (real_size.py)")
    directory = data_dir or default_data_dir(scratch)
    if data_dir is not None or (directory.is_dir() and not model.stand_in):
        dataset = read_manifest(directory)  # one line naming what is missing, and how to get it
        return DataChoice(dataset, generated=False, origin=dataset.describe())
    built = stand_in.ensure_stand_in(scratch)
    dataset = read_manifest(built.data_dir)
    return DataChoice(
        dataset,
        generated=True,
        origin=f"generated speech ({len(dataset)} utterances in {built.data_dir})",
        preprocessed=built.preprocessed,
    )
