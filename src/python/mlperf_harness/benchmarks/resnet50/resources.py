"""Find ResNet-50's model and images, or fall back to the embedded stand-in for either.

Model and data fall back independently: a real model can run on the generated images, and the
stand-in model on a real image directory. Anything that is not the official model on the full
ImageNet validation set is marked stand-in (not a valid MLPerf result).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import onnx

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.datasets.imagenet import synthetic
from mlperf_harness.datasets.imagenet.layout import (
    IMAGENET_SUBDIR,
    VAL_MAP_NAME,
    ValSet,
    check_layout,
    parse_val_map,
)
from mlperf_harness.datasets.model_sources import RESNET50_V1_5_ONNX
from mlperf_harness.engines.calibration import (
    CalibrationSet,
    calibration_from_list,
    calibration_from_names,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_digests, file_sha256

REAL_FP32_TOP1 = 76.46  # the MLPerf reference accuracy of ResNet-50 v1.5 (percent)
STAND_IN_SEED = 0
STAND_IN_REPORT = "stand_in.json"


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

    @classmethod
    def read(cls, path: Path) -> StandInRecord | None:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None  # absent or from another version: the caller rebuilds


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
    key = hashlib.sha256(str(image_dir.resolve()).encode()).hexdigest()[:12]
    return scratch / "preprocessed" / "imagenet" / f"{image_dir.name}-{key}"


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "resnet50" / f"seed{STAND_IN_SEED}"


def ensure_stand_in(scratch: Path) -> tuple[Path, StandInRecord]:
    """The stand-in model and its build record, building both (about a minute) when absent."""
    work_dir = stand_in_dir(scratch)
    model_path = work_dir / stand_in_model.MODEL_FILE_NAME
    record_path = work_dir / STAND_IN_REPORT
    record = StandInRecord.read(record_path) if model_path.is_file() else None
    if record is not None and record.sha256 == file_sha256(model_path):
        return model_path, record
    print(
        "resnet50: no model or images given; building the stand-in (a generated ResNet-50 v1.5 "
        f"and image set, about a minute) in {work_dir}",
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


def is_stand_in_model(path: Path) -> bool:
    model = onnx.load(str(path), load_external_data=False)
    return any(
        entry.key == "mlperf_harness.stand_in" and entry.value == "true"
        for entry in model.metadata_props
    )


def choose_model(model_path: Path | None, scratch: Path) -> ModelChoice:
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
    try:
        stand_in = is_stand_in_model(model_path)
    except Exception as error:  # onnx raises DecodeError and others for files that are not ONNX
        raise HarnessError(f"not an ONNX model: {model_path} ({type(error).__name__})") from error
    if stand_in:
        # A stand-in copied elsewhere still knows its measured accuracy if its report came along.
        copied = StandInRecord.read(model_path.parent / STAND_IN_REPORT)
        reference = copied.heldout_top1_percent if copied is not None else None
        return ModelChoice(
            model_path, file_sha256(model_path), True, reference, f"stand-in: {model_path}"
        )
    md5, sha256 = file_digests(model_path, "md5", "sha256")
    origin = "official MLPerf model" if md5 == RESNET50_V1_5_ONNX.md5 else "user model"
    return ModelChoice(model_path, sha256, False, REAL_FP32_TOP1, f"{origin}: {model_path}")


CALIBRATION_LIST = "cal_image_list_option_1.txt"  # MLPerf's official 500-image ResNet-50 list


def choose_calibration(model: ModelChoice, data: DataChoice, scratch: Path) -> CalibrationSet:
    """What INT8 calibration sees: the stand-in's own calibration split for a stand-in model or
    generated data, else MLPerf's official list over the real images."""
    if model.stand_in or data.generated:
        # A stand-in model given by path carries its image sets beside it (build_stand_in's layout).
        beside = model.path.parent / "images"
        root = beside if (beside / "calibration").is_dir() else stand_in_dir(scratch) / "images"
        val_map = root / "calibration" / VAL_MAP_NAME
        if not val_map.is_file():
            counts = stand_in_model.ImageCounts()
            synthetic.generate_split(root, "calibration", counts.calibration, STAND_IN_SEED)
        names = [name for name, _ in parse_val_map(val_map)]
        return calibration_from_names(val_map.parent, names, "stand-in calibration split")
    image_dir = data.val_set.image_dir
    for candidate in (image_dir / CALIBRATION_LIST, image_dir.parent / CALIBRATION_LIST):
        if candidate.is_file():
            return calibration_from_list(image_dir, candidate, "MLPerf calibration list option 1")
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
    root = stand_in_dir(scratch) / "images"
    val_map = root / "validation" / VAL_MAP_NAME
    if not val_map.is_file():
        counts = stand_in_model.ImageCounts()
        synthetic.generate_split(root, "validation", counts.validation, STAND_IN_SEED)
    return DataChoice(check_layout(val_map.parent), True, "generated images (stand-in)")
