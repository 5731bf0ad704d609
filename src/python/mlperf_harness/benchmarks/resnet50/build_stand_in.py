"""Build the embedded default for ResNet-50: generated image sets plus the stand-in model.

    python -m mlperf_harness.benchmarks.resnet50.build_stand_in --out_dir build/stand_in --seed 0

writes <out_dir>/resnet50_v1_stand_in.onnx and <out_dir>/images/{train,calibration,validation}/
(JPEGs + val_map.txt) and prints the measured held-out FP32 top-1. Exits 1 when the measured top-1 is
below the required one, 2 on a user error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlperf_harness.benchmarks.resnet50.resources import (
    STAND_IN_ACTIVITY,
    remove_stand_in_temporaries,
)
from mlperf_harness.benchmarks.resnet50.stand_in_model import (
    MODEL_FILE_NAME,
    REQUIRED_TOP1,
    build_stand_in_model,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.scratch_lock import exclusive

DEFAULT_OUT_DIR = Path("build/resnet50_stand_in")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="build_stand_in", description=__doc__.split("\n", 1)[0] if __doc__ else None
    )
    parser.add_argument(
        "--out_dir",
        type=Path,
        default=DEFAULT_OUT_DIR,
        help=f"where the model and the image sets go (default: {DEFAULT_OUT_DIR})",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the weights and images (default: 0)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out_dir: Path = args.out_dir
    try:
        # Two builds into one directory would write the same files: the second waits.
        with exclusive(out_dir, STAND_IN_ACTIVITY):
            remove_stand_in_temporaries(out_dir)
            report = build_stand_in_model(out_dir / MODEL_FILE_NAME, out_dir, seed=args.seed)
    except HarnessError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"stand-in model: {report.model_path} (sha256 {report.sha256}, seed {report.seed})")
    for split, val_map in report.val_maps.items():
        print(f"{split} images: {val_map.parent}")
    print(
        f"held-out FP32 top-1: {report.heldout_top1:.2%} ({report.heldout_correct}/"
        f"{report.heldout_count}, measured with ONNX Runtime); built in {report.seconds:.0f} s"
    )
    print("NOT the official MLPerf model: results with it are not valid MLPerf results.")
    if not report.passed:
        print(
            f"error: held-out top-1 {report.heldout_top1:.2%} is below the required "
            f"{REQUIRED_TOP1:.0%}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
