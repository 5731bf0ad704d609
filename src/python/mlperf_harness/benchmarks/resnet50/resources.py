"""Find ResNet-50's model and images, or fall back to the embedded stand-in for either.

Model and data fall back independently: a real model can run on the generated images, and the
stand-in model on a real image directory. Anything that is not the official model on the full
ImageNet validation set is marked stand-in (not a valid MLPerf result).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.atomic import remove_stale_temporaries, write_json_atomic
from mlperf_harness.benchmarks.preprocessed_dirs import keyed_preprocessed_dir
from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.datasets.imagenet import synthetic
from mlperf_harness.datasets.imagenet.layout import (
    IMAGENET_SUBDIR,
    VAL_MAP_NAME,
    ValSet,
    check_layout,
    parse_val_map,
)
from mlperf_harness.datasets.model_file import read_model_header
from mlperf_harness.datasets.model_sources import RESNET50_V1_5_ONNX
from mlperf_harness.engines.calibration import (
    CalibrationSet,
    calibration_from_list,
    calibration_from_names,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_digests, file_sha256
from mlperf_harness.records import read_record
from mlperf_harness.scratch_lock import build_once

REAL_FP32_TOP1 = 76.46  # the MLPerf reference accuracy of ResNet-50 v1.5 (percent)
STAND_IN_SEED = 0
STAND_IN_REPORT = "stand_in.json"
STAND_IN_ACTIVITY = "building the ResNet-50 stand-in"  # what a run waiting for its lock is told


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    sha256: str
    stand_in: bool
    reference_top1: float | None  # the FP32 accuracy (percent) that 99% is judged against
    origin: str


@dataclass(frozen=True)
class StandInRecord:
    """What a stand-in build measured, kept beside the model so later runs need not rebuild."""

    sha256: str
    seed: int
    heldout_top1_percent: float
    heldout_count: int
    build_seconds: float


@dataclass(frozen=True)
class DataChoice:
    val_set: ValSet
    generated: bool
    origin: str


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "resnet50" / RESNET50_V1_5_ONNX.filename


def default_data_dir(scratch: Path) -> Path:
    """Holds `imagenet/` (NVIDIA's layout) or the images and val_map.txt directly."""
    return scratch / "data"


def default_preprocessed_dir(scratch: Path, image_dir: Path) -> Path:
    # One directory per source directory, so two datasets never share (and clobber) outputs.
    return keyed_preprocessed_dir(scratch, "imagenet", image_dir.name, [image_dir.resolve()])


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "resnet50" / f"seed{STAND_IN_SEED}"


def ensure_stand_in(scratch: Path) -> tuple[Path, StandInRecord]:
    """The stand-in model and its build record, building both (about a minute) when absent. Runs
    sharing the scratch build it once: the others wait for that build and use its model."""
    work_dir = stand_in_dir(scratch)
    model_path = work_dir / stand_in_model.MODEL_FILE_NAME
    record_path = work_dir / STAND_IN_REPORT

    def find() -> tuple[Path, StandInRecord] | None:
        record = read_record(StandInRecord, record_path) if model_path.is_file() else None
        if record is not None and record.sha256 == file_sha256(model_path):
            return model_path, record
        return None

    def build() -> tuple[Path, StandInRecord]:
        remove_stand_in_temporaries(work_dir)
        print(
            "resnet50: no model or images given; building the stand-in (a generated ResNet-50 "
            f"v1.5 and image set, about a minute) in {work_dir}",
            file=sys.stderr,
        )
        built = stand_in_model.build_stand_in_model(model_path, work_dir, seed=STAND_IN_SEED)
        if not built.passed:
            raise HarnessError(
                f"the stand-in model reached only {built.heldout_top1:.1%} held-out top-1 "
                f"(needs {stand_in_model.REQUIRED_TOP1:.0%}); report this as a bug"
            )
        record = StandInRecord(
            sha256=built.sha256,
            seed=built.seed,
            heldout_top1_percent=100.0 * built.heldout_top1,
            heldout_count=built.heldout_count,
            build_seconds=round(built.seconds, 1),
        )
        write_json_atomic(record_path, dataclasses.asdict(record))
        return model_path, record

    return build_once(work_dir, STAND_IN_ACTIVITY, find, build)


def remove_stand_in_temporaries(work_dir: Path) -> None:
    """What a killed stand-in build left (we hold the stand-in's lock): the model it was measuring
    (~100 MB) and half-written images."""
    images = work_dir / "images"
    remove_stale_temporaries([work_dir, *(images / split for split in synthetic.SPLITS)])


def stand_in_split(scratch: Path, split: str) -> Path:
    """The val_map.txt of a generated split of the stand-in's images, generating it when absent
    (under the stand-in's lock: a stand-in build writes the same files)."""
    work_dir = stand_in_dir(scratch)
    val_map = work_dir / "images" / split / VAL_MAP_NAME

    def generate() -> Path:
        remove_stand_in_temporaries(work_dir)
        counts = stand_in_model.ImageCounts()
        count = {"calibration": counts.calibration, "validation": counts.validation}[split]
        return synthetic.generate_split(work_dir / "images", split, count, STAND_IN_SEED)

    def find() -> Path | None:
        return val_map if val_map.is_file() else None

    return build_once(work_dir, STAND_IN_ACTIVITY, find, generate)


def is_stand_in_model(path: Path) -> bool:
    model = read_model_header(path)
    return any(
        entry.key == "mlperf_harness.stand_in" and entry.value == "true"
        for entry in model.metadata_props
    )


def choose_model(model_path: Path | None, scratch: Path) -> ModelChoice:
    at_default_path = model_path is None
    if model_path is None:
        found = default_model_path(scratch)
        model_path = found if found.is_file() else None
    if model_path is None:
        path, record = ensure_stand_in(scratch)
        return ModelChoice(
            path, record.sha256, True, record.heldout_top1_percent, "stand-in (generated)"
        )
    if not model_path.is_file():
        raise HarnessError(
            f"model not found: {model_path}; download_model fetches it, or put "
            f"{RESNET50_V1_5_ONNX.filename} there"
        )
    if is_stand_in_model(model_path):  # a broken file is a one-line error here
        # A stand-in copied elsewhere still knows its measured accuracy if its report came along.
        copied = read_record(StandInRecord, model_path.parent / STAND_IN_REPORT)
        reference = copied.heldout_top1_percent if copied is not None else None
        return ModelChoice(
            model_path, file_sha256(model_path), True, reference, f"stand-in: {model_path}"
        )
    md5, sha256 = file_digests(model_path, "md5", "sha256")
    if md5 == RESNET50_V1_5_ONNX.md5:
        origin = "official MLPerf model"
    else:
        origin = "model failing the official checksum" if at_default_path else "user model"
        _warn_unofficial(model_path, md5, at_default_path)
    return ModelChoice(model_path, sha256, False, REAL_FP32_TOP1, f"{origin}: {model_path}")


def _warn_unofficial(model_path: Path, md5: str, at_default_path: bool) -> None:
    expected = RESNET50_V1_5_ONNX.md5
    if at_default_path:
        # Where download_model puts the official file: the user believes this is it.
        what = f"fails the official checksum (md5 {md5}, expected {expected})"
        fix = "; delete it and run download_model for the official one"
    else:
        what = f"is not the official MLPerf ResNet-50 v1.5 model (md5 {md5}, not {expected})"
        fix = ""
    print(
        f"resnet50: WARNING: {model_path} {what}: results with it are not valid MLPerf "
        f"results{fix}",
        file=sys.stderr,
    )


CALIBRATION_LIST = "cal_image_list_option_1.txt"  # MLPerf's official 500-image ResNet-50 list


def choose_calibration(model: ModelChoice, data: DataChoice, scratch: Path) -> CalibrationSet:
    """What INT8 calibration sees: the stand-in's own calibration split for a stand-in model or
    generated data, else MLPerf's official list over the real images."""
    if model.stand_in or data.generated:
        # A stand-in model given by path carries its image sets beside it (build_stand_in's layout).
        beside = model.path.parent / "images" / "calibration" / VAL_MAP_NAME
        val_map = beside if beside.is_file() else stand_in_split(scratch, "calibration")
        names = [name for name, _ in parse_val_map(val_map)]
        return calibration_from_names(
            val_map.parent, names, "the stand-in's own calibration split of generated images"
        )
    image_dir = data.val_set.image_dir
    for candidate in (image_dir / CALIBRATION_LIST, image_dir.parent / CALIBRATION_LIST):
        if candidate.is_file():
            return calibration_from_list(
                image_dir,
                candidate,
                f"MLPerf's calibration list {CALIBRATION_LIST} (ImageNet validation images)",
            )
    raise HarnessError(
        f"int8 needs MLPerf's calibration list {CALIBRATION_LIST} (calibration/ImageNet/ in the "
        f"MLCommons inference repository) in {image_dir}"
    )


def choose_data(data_dir: Path | None, scratch: Path) -> DataChoice:
    if data_dir is not None:
        return DataChoice(check_layout(data_dir), False, f"{data_dir}")
    default = default_data_dir(scratch)
    if (default / IMAGENET_SUBDIR).is_dir() or (default / VAL_MAP_NAME).is_file():
        val_set = check_layout(default)
        return DataChoice(val_set, False, str(val_set.image_dir))
    val_map = stand_in_split(scratch, "validation")
    return DataChoice(check_layout(val_map.parent), True, "generated images (stand-in)")
