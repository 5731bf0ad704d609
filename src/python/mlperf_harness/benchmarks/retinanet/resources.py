"""Find RetinaNet's model and the OpenImages MLPerf subset, or fall back to the embedded stand-in.

The model is by default `<scratch>/models/retinanet/resnext50_32x4d_fpn.onnx`, the data
`<scratch>/data/openimages/` in the subset's layout (datasets/openimages/layout.py). Without a model
the stand-in is built and runs on its own generated pictures. A model must have this harness's
interface (stand_in_model.py): input `images` [N, 3, 800, 800], output `head_outputs`
[N, 120087, 4 + classes]; anything else is refused in one line. Anything but a real model on the
full subset is marked stand-in (not a valid MLPerf result).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.accuracy.openimages import REFERENCE_MAP
from mlperf_harness.benchmarks.preprocessed_dirs import keyed_preprocessed_dir
from mlperf_harness.benchmarks.retinanet import stand_in
from mlperf_harness.benchmarks.retinanet.stand_in_model import INPUT_NAME, OUTPUT_NAME
from mlperf_harness.datasets.model_file import read_model_header
from mlperf_harness.datasets.model_sources import RETINANET_ONNX
from mlperf_harness.datasets.openimages.layout import OpenImagesSet, check_layout
from mlperf_harness.datasets.openimages.transform import preprocess_file
from mlperf_harness.engines.calibration import (
    CalibrationSet,
    calibration_from_list,
    calibration_from_names,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

MODEL_FILE_NAME = RETINANET_ONNX.filename
# MLCommons' calibration/openimages/ list (500 OpenImages training images), and where its
# openimages_calibration_mlperf.sh (-d <data_dir>) puts the images.
CALIBRATION_LIST = "openimages_cal_images_list.txt"
CALIBRATION_IMAGES = Path("calibration") / "data"


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    sha256: str
    stand_in: bool
    reference_map: float  # percent: what 99% is judged against
    origin: str


@dataclass(frozen=True)
class DataChoice:
    images: OpenImagesSet
    generated: bool
    origin: str
    preprocessed: Path | None = None  # the stand-in's pictures come preprocessed with it


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "retinanet" / MODEL_FILE_NAME


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "openimages"


def default_preprocessed_dir(scratch: Path, data_dir: Path) -> Path:
    return keyed_preprocessed_dir(scratch, "openimages", data_dir.name, [data_dir.resolve()])


def check_interface(path: Path) -> None:
    """One line unless the model has this harness's interface."""
    model = read_model_header(path)
    inputs = {node.name for node in model.graph.input}
    outputs = {node.name for node in model.graph.output}
    if INPUT_NAME in inputs and OUTPUT_NAME in outputs:
        return
    hint = (
        " (MLCommons' published ONNX ends in its own postprocessing: export the model's head "
        "outputs instead, docs/retinanet.md)"
        if {"boxes", "scores", "labels"} <= outputs
        else ""
    )
    raise HarnessError(
        f"{path} is not RetinaNet's interface here: inputs {', '.join(sorted(inputs))}, outputs "
        f"{', '.join(sorted(outputs))}; expected input {INPUT_NAME!r} and output {OUTPUT_NAME!r} "
        f"[N, 120087, 4 + classes]{hint}"
    )


def choose_model(model_path: Path | None, scratch: Path) -> ModelChoice:
    path = model_path or default_model_path(scratch)
    if model_path is None and not path.is_file():
        built = stand_in.ensure_stand_in(scratch)
        record = built.record
        return ModelChoice(
            path=built.model,
            sha256=record.sha256,
            stand_in=True,
            reference_map=record.heldout_map_percent,
            origin=f"stand-in model (RetinaNet at 1/{record.width_divisor} width, held-out mAP "
            f"{record.heldout_map_percent:.3f}%)",
        )
    if not path.is_file():
        raise HarnessError(f"model not found: {path}")
    check_interface(path)
    model = read_model_header(path)
    return ModelChoice(
        path=path,
        sha256=file_sha256(path),
        stand_in=stand_in.is_stand_in_model(model),
        reference_map=REFERENCE_MAP,
        origin=str(path),
    )


def choose_data(data_dir: Path | None, scratch: Path, model: ModelChoice) -> DataChoice:
    directory = data_dir or default_data_dir(scratch)
    if data_dir is not None or (directory.is_dir() and not model.stand_in):
        images = check_layout(directory)  # one line naming what is missing, and how to get it
        return DataChoice(images, generated=False, origin=images.describe())
    built = stand_in.ensure_stand_in(scratch)
    images = check_layout(built.data_dir)
    return DataChoice(
        images,
        generated=True,
        origin=f"generated pictures ({len(images)} in {built.data_dir})",
        preprocessed=built.preprocessed,
    )


def choose_calibration(model: ModelChoice, data: DataChoice, scratch: Path) -> CalibrationSet:
    """What int8 and fp8 calibration see: the stand-in's own calibration split for a stand-in model
    or generated data, else MLPerf's list of 500 images beside the subset."""
    if model.stand_in or data.generated:
        pictures = check_layout(stand_in.calibration_pictures(scratch))
        return calibration_from_names(
            pictures.image_dir,
            [str(image["file_name"]) for image in pictures.images],
            "the stand-in's own calibration split of generated pictures",
            preprocess_file,
        )
    data_dir = data.images.data_dir
    for list_file in (data_dir / "calibration" / CALIBRATION_LIST, data_dir / CALIBRATION_LIST):
        if list_file.is_file():
            return calibration_from_list(
                data_dir / CALIBRATION_IMAGES,
                list_file,
                f"MLPerf's calibration list {CALIBRATION_LIST} (OpenImages training images)",
                preprocess_file,
            )
    raise HarnessError(
        f"int8 and fp8 need MLPerf's calibration list {CALIBRATION_LIST} (calibration/openimages/ "
        f"in the MLCommons inference repository) in {data_dir / 'calibration'} and its images in "
        f"{data_dir / CALIBRATION_IMAGES} (MLCommons' openimages_calibration_mlperf.sh -d "
        f"{data_dir} fetches them)"
    )
