"""A small ResNet-50 stand-in for tests that run the whole harness: the real build with reduced
image counts (seconds instead of a minute), and the record a real build leaves beside its model."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.benchmarks.resnet50.resources import STAND_IN_REPORT, StandInRecord

SMALL = stand_in_model.ImageCounts(bn_statistics=16, train=60, calibration=1, validation=40)


@dataclasses.dataclass(frozen=True)
class SmallStandIn:
    model: Path
    images: Path  # a generated validation split: JPEGs + val_map.txt

    def run_flags(self) -> list[str]:
        return ["--model_path", str(self.model), "--data_dir", str(self.images)]


def build_small_stand_in(work: Path, seed: int = 3) -> SmallStandIn:
    model = work / stand_in_model.MODEL_FILE_NAME
    report = stand_in_model.build_stand_in_model(
        model, work, seed=seed, counts=SMALL, progress=False
    )
    # The record a real build leaves beside its model, from this build's own measurement.
    record = StandInRecord(
        report.sha256, report.seed, 100.0 * report.heldout_top1, report.heldout_count, 0.0
    )
    write_json_atomic(work / STAND_IN_REPORT, dataclasses.asdict(record))
    return SmallStandIn(model, report.val_maps["validation"].parent)
