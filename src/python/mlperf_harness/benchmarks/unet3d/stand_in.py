"""3D-UNet's embedded default: generated CT-like cases in KiTS19's layout, preprocessed as the
reference does it, and the KiTS19 U-Net at 1/8 width whose output layer is fitted on separate
generated training cases; built once per scratch path (about a minute on a 2-core CPU) and kept
with a record of its held-out DICE. Everything it makes is marked "stand-in: not a valid MLPerf
result".

`pants run benchmarks/unet3d:stand_in` builds it on its own and prints what it measured.
`build_real_width_model` writes the full-width U-Net (seeded, nothing fitted) for GPU timing.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.benchmarks.stand_in_cli import run_stand_in, stand_in_parser
from mlperf_harness.benchmarks.unet3d import stand_in_volumes
from mlperf_harness.benchmarks.unet3d.build_stand_in_model import (
    Case,
    build_stand_in_unet,
    heldout_dice,
)
from mlperf_harness.benchmarks.unet3d.stand_in_model import (
    CLASSES,
    REAL_WIDTH,
    STAND_IN_WIDTH,
    UNetWidth,
    random_weights,
    unet_model,
)
from mlperf_harness.datasets.kits19.preprocess import preprocess_dataset
from mlperf_harness.datasets.kits19.store import KitsPreprocessed, load_preprocessed
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256
from mlperf_harness.records import read_record
from mlperf_harness.scratch_lock import build_once

SEED = 0
WIDTH = STAND_IN_WIDTH
# Generated cases: the benchmark's samples (also the held-out set the DICE is measured on) and
# the training cases the output layer is fitted on, drawn from other indices of the same seed.
INFERENCE_CASE_INDICES = tuple(range(6))  # case_00000 .. case_00005
TRAINING_CASE_INDICES = tuple(range(100, 106))  # case_00100 .. case_00105
REQUIRED_MEAN_DICE = 0.6  # held-out mean of kidney and tumour DICE; chance is near 0
MODEL_FILE_NAME = "unet3d_stand_in.onnx"
REAL_WIDTH_MODEL_FILE_NAME = "unet3d_real_width_stand_in.onnx"
RECORD_FILE_NAME = "stand_in.json"
RAW_DIR, PREPROCESSED_DIR = "kits19", "preprocessed"
TRAINING_RAW_DIR, TRAINING_PREPROCESSED_DIR = "training/kits19", "training/preprocessed"
NOT_VALID = "stand-in: not a valid MLPerf result"
ACTIVITY = "building the 3D-UNet stand-in"  # what a run waiting for its lock is told
# Written into the model's metadata, so that a stand-in is known as one wherever it is copied.
STAND_IN_MARK = "mlperf_harness.unet3d_stand_in"


@dataclass(frozen=True)
class StandInRecord:
    """What a build measured, kept beside the model so that later runs need not rebuild."""

    sha256: str
    seed: int
    width_divisor: int
    filters: list[int]
    heldout_mean_dice: float
    heldout_kidney_dice: float
    heldout_tumour_dice: float
    heldout_cases: int
    training_cases: int
    training_voxels: int
    build_seconds: float
    note: str = NOT_VALID


@dataclass(frozen=True)
class BuiltStandIn:
    model: Path
    raw_data: Path  # KiTS19's raw layout: case_XXXXX/{imaging,segmentation}.nii.gz
    preprocessed: Path  # the reference's preprocessed layout (datasets.kits19)
    record: StandInRecord


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "unet3d" / f"w{WIDTH.divisor}-seed{SEED}"


def is_stand_in_model(model: onnx.ModelProto) -> bool:
    """A model this module built (its metadata says so), wherever it was copied to."""
    return any(entry.key == STAND_IN_MARK for entry in model.metadata_props)


def ensure_stand_in(scratch: Path, progress: bool = True) -> BuiltStandIn:
    """The stand-in's files, built when absent. Runs sharing the scratch build it once: the others
    wait for that build and use it."""
    work_dir = stand_in_dir(scratch)
    model_path = work_dir / MODEL_FILE_NAME
    record_path = work_dir / RECORD_FILE_NAME

    def built(record: StandInRecord) -> BuiltStandIn:
        return BuiltStandIn(model_path, work_dir / RAW_DIR, work_dir / PREPROCESSED_DIR, record)

    def find() -> BuiltStandIn | None:
        record = read_record(StandInRecord, record_path) if model_path.is_file() else None
        if record is None or record.sha256 != file_sha256(model_path):
            return None
        try:
            load_preprocessed(work_dir / PREPROCESSED_DIR)
        except HarnessError:
            return None
        return built(record)

    def build() -> BuiltStandIn:
        remove_stale_temporaries([work_dir])
        _say(
            f"3d-unet: no model given; building the stand-in (generated CT-like cases and the "
            f"KiTS19 U-Net at 1/{WIDTH.divisor} width fitted to them, about a minute) in "
            f"{work_dir}"
        )
        record = _build(work_dir, model_path, progress)
        write_json_atomic(record_path, dataclasses.asdict(record))
        return built(record)

    return build_once(work_dir, ACTIVITY, find, build)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _cases(dataset: KitsPreprocessed) -> Iterator[Case]:
    for index in range(len(dataset)):
        yield dataset.load_case(index)


def _generated_set(
    raw_dir: Path, preprocessed_dir: Path, indices: Sequence[int], progress: bool
) -> KitsPreprocessed:
    specs = stand_in_volumes.write_cases(raw_dir, SEED, indices)
    preprocess_dataset(
        raw_dir, preprocessed_dir, cases=[spec.name for spec in specs], progress=progress
    )
    return load_preprocessed(preprocessed_dir)


def _build(work_dir: Path, model_path: Path, progress: bool) -> StandInRecord:
    _say(
        f"3d-unet stand-in: generating and preprocessing {len(TRAINING_CASE_INDICES)} training cases"
    )
    training = _generated_set(
        work_dir / TRAINING_RAW_DIR,
        work_dir / TRAINING_PREPROCESSED_DIR,
        TRAINING_CASE_INDICES,
        progress,
    )
    _say(f"3d-unet stand-in: generating and preprocessing {len(INFERENCE_CASE_INDICES)} cases")
    heldout = _generated_set(
        work_dir / RAW_DIR, work_dir / PREPROCESSED_DIR, INFERENCE_CASE_INDICES, progress
    )
    _say("3d-unet stand-in: fitting the output layer on the training cases' windows")
    unet = build_stand_in_unet(_cases(training), WIDTH, SEED, {STAND_IN_MARK: NOT_VALID})
    _say("3d-unet stand-in: measuring DICE on the held-out cases (sliding window)")
    scores = heldout_dice(unet.serialized(), _cases(heldout))
    for case, (kidney, tumour) in zip(heldout.cases, scores, strict=True):
        _say(f"  {case}: kidney {kidney:.4f}, tumour {tumour:.4f}")
    kidney_mean = float(np.mean([kidney for kidney, _ in scores]))
    tumour_mean = float(np.mean([tumour for _, tumour in scores]))
    mean = float(np.mean([(kidney + tumour) / 2 for kidney, tumour in scores]))
    _say(
        f"3d-unet stand-in: held-out mean DICE {mean:.4f} (kidney {kidney_mean:.4f}, tumour {tumour_mean:.4f})"
    )
    if mean < REQUIRED_MEAN_DICE:
        raise HarnessError(
            f"the 3D-UNet stand-in reached only mean DICE {mean:.4f} on held-out cases (needs "
            f"{REQUIRED_MEAN_DICE}); report this as a bug"
        )
    write_bytes_atomic(model_path, unet.serialized())
    return StandInRecord(
        sha256=unet.sha256(),
        seed=SEED,
        width_divisor=WIDTH.divisor,
        filters=list(WIDTH.filters),
        heldout_mean_dice=round(mean, 5),
        heldout_kidney_dice=round(kidney_mean, 5),
        heldout_tumour_dice=round(tumour_mean, 5),
        heldout_cases=len(scores),
        training_cases=len(training),
        training_voxels=unet.layer.voxels,
        build_seconds=round(unet.seconds, 1),
    )


def real_width_model(seed: int = SEED, width: UNetWidth = REAL_WIDTH) -> onnx.ModelProto:
    """The KiTS19 U-Net at full width with seeded weights (its output layer seeded too, nothing
    fitted): the official model's cost per window, for timing where no official model is."""
    weights = random_weights(width, seed)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    channels = width.filters[0]
    weights["output/weight"] = rng.standard_normal(
        (CLASSES, channels, 1, 1, 1), dtype=np.float32
    ) / np.float32(np.sqrt(channels))
    doc = (
        "NOT the official MLPerf 3D-UNet: the KiTS19 U-Net's topology at full width with seeded, "
        f"unfitted weights (seed {seed}), for timing only; no valid MLPerf result."
    )
    return unet_model(
        weights, width, doc, {STAND_IN_MARK: NOT_VALID, "mlperf_harness.seed": str(seed)}
    )


def build_real_width_model(path: Path, seed: int = SEED) -> Path:
    """Write `real_width_model` to `path` atomically (about 125 MB)."""
    write_bytes_atomic(path, real_width_model(seed).SerializeToString())
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = stand_in_parser("3D-UNet")
    parser.add_argument(
        "--real_width_model",
        type=Path,
        help="also write the full-width U-Net (seeded, unfitted; for GPU timing) to this path",
    )

    def report(args: argparse.Namespace, built: BuiltStandIn) -> None:
        print(f"model {built.model}\nraw cases {built.raw_data}\npreprocessed {built.preprocessed}")
        if args.real_width_model is not None:
            print(f"real-width model {build_real_width_model(args.real_width_model)}")

    return run_stand_in(parser, argv, ensure_stand_in, report, NOT_VALID)


if __name__ == "__main__":
    sys.exit(main())
