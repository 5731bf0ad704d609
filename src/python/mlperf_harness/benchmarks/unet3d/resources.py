"""Find 3D-UNet's model and KiTS19 cases, or fall back to the embedded stand-in.

The official model is MLCommons' KiTS19 U-Net, `3dUNetKiTS19.onnx` as NVIDIA names it (Zenodo 5597155),
by default under `<scratch>/models/3d-unet/`; KiTS19's raw cases are in `<scratch>/data/kits19/`
(`case_XXXXX/imaging.nii.gz`, `segmentation.nii.gz`; datasets/kits19/layout.py says how to get
them). Without a model the stand-in is built and runs on its own generated cases. The official
model without KiTS19 runs on the stand-in's cases (for timing). Anything but the official model on
the 43 inference cases is marked stand-in (not a valid MLPerf result).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.accuracy.kits19 import REFERENCE_DICE
from mlperf_harness.benchmarks.preprocessed_dirs import keyed_preprocessed_dir
from mlperf_harness.benchmarks.unet3d import stand_in
from mlperf_harness.benchmarks.unet3d.stand_in_model import INPUT_NAME, OUTPUT_NAME
from mlperf_harness.datasets.kits19.layout import INFERENCE_CASES, check_layout
from mlperf_harness.datasets.kits19.store import load_preprocessed
from mlperf_harness.datasets.model_file import read_model_header
from mlperf_harness.datasets.model_sources import UNET3D_KITS19_ONNX
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

MODEL_FILE_NAME = UNET3D_KITS19_ONNX.filename  # NVIDIA's name for it


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    sha256: str
    stand_in: bool
    reference_dice: float  # the mean DICE that 99% (99.9%) is judged against
    origin: str


@dataclass(frozen=True)
class DataChoice:
    data_dir: Path  # KiTS19's raw layout
    cases: tuple[str, ...]
    generated: bool
    origin: str
    preprocessed: Path | None = None  # the stand-in's cases come preprocessed with it

    @property
    def is_inference_set(self) -> bool:
        return not self.generated and tuple(self.cases) == tuple(INFERENCE_CASES)


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "3d-unet" / MODEL_FILE_NAME


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "kits19"


def default_preprocessed_dir(scratch: Path, data: DataChoice) -> Path:
    # One directory per (raw directory, case list): two sets never share outputs.
    made_from: list[Path | str] = [data.data_dir.resolve(), ",".join(data.cases)]
    return keyed_preprocessed_dir(scratch, "kits19", data.data_dir.name, made_from)


def choose_model(model_path: Path | None, scratch: Path) -> ModelChoice:
    path = model_path or default_model_path(scratch)
    if model_path is None and not path.is_file():
        built = stand_in.ensure_stand_in(scratch)
        record = built.record
        return ModelChoice(
            path=built.model,
            sha256=record.sha256,
            stand_in=True,
            reference_dice=record.heldout_mean_dice,
            origin=f"stand-in model (KiTS19 U-Net at 1/{record.width_divisor} width, held-out "
            f"mean DICE {record.heldout_mean_dice:.4f})",
        )
    if not path.is_file():
        raise HarnessError(f"model not found: {path}")
    model = read_model_header(path)
    inputs = {node.name for node in model.graph.input}
    outputs = {node.name for node in model.graph.output}
    if INPUT_NAME not in inputs or OUTPUT_NAME not in outputs:
        raise HarnessError(
            f"{path} is not 3D-UNet's interface: inputs {', '.join(sorted(inputs))}, outputs "
            f"{', '.join(sorted(outputs))}; expected input {INPUT_NAME!r} and output {OUTPUT_NAME!r}"
        )
    return ModelChoice(
        path=path,
        sha256=file_sha256(path),
        stand_in=stand_in.is_stand_in_model(model),
        reference_dice=REFERENCE_DICE,
        origin=str(path),
    )


def choose_data(data_dir: Path | None, scratch: Path, model: ModelChoice) -> DataChoice:
    directory = data_dir or default_data_dir(scratch)
    if directory.is_dir() and not (model.stand_in and data_dir is None):
        layout = check_layout(directory)  # one line naming what is missing, and how to get it
        return DataChoice(directory, tuple(layout.cases), generated=False, origin=str(directory))
    if data_dir is not None:
        check_layout(data_dir)  # raises: says what is missing and where KiTS19 comes from
    built = stand_in.ensure_stand_in(scratch)
    cases = tuple(load_preprocessed(built.preprocessed).cases)
    return DataChoice(
        built.raw_data,
        cases,
        generated=True,
        origin=f"generated CT volumes ({len(cases)} cases in {built.raw_data})",
        preprocessed=built.preprocessed,
    )
