"""3D-UNet's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (a pex_binary in benchmarks/3d-unet/BUILD) with the run's flag
names and default paths (resources.py): with no flags an action prepares exactly what
`benchmarks/3d-unet:offline` looks for. KiTS19 itself cannot be downloaded by this harness (it
comes from the KiTS19 challenge's own repository): download_data checks the raw layout and says,
in one line, what is missing and how to get it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.action_cli import (
    action_parser,
    add_progress_flag,
    run_action,
)
from mlperf_harness.benchmarks.data_actions import main_check_data, preprocessed_line
from mlperf_harness.benchmarks.download_action import main_download_one_model
from mlperf_harness.benchmarks.unet3d.resources import (
    DataChoice,
    default_data_dir,
    default_model_path,
    default_preprocessed_dir,
)
from mlperf_harness.datasets.kits19.layout import check_layout
from mlperf_harness.datasets.kits19.preprocess import preprocess_dataset
from mlperf_harness.datasets.kits19.store import MANIFEST_NAME
from mlperf_harness.datasets.model_sources import UNET3D_KITS19_ONNX, ModelSource


def main_download_model(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    source: ModelSource = UNET3D_KITS19_ONNX,
) -> int:
    """download_model: the official ONNX model where the run looks for it."""
    return main_download_one_model(
        argv, environ, source, default_model_path, f"<scratch>/models/3d-unet/{source.filename}"
    )


def main_download_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_data: check that KiTS19's 43 inference cases are in the data directory."""
    return main_check_data(
        argv,
        environ,
        "Check that KiTS19's inference cases are in the data directory (KiTS19 is fetched with "
        "the KiTS19 challenge's own tools; the error says how).",
        _add_data_dir_flag,
        default_data_dir,
        _check_data,
    )


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: the preprocessed cases the run reads, unless they are up to date."""
    parser = action_parser(
        "preprocess_data",
        "Preprocess KiTS19's inference cases as MLCommons' reference does (resample to 1.6 x 1.2 "
        "x 1.2 mm, clip, normalise, pad) into the directory the run uses; finished cases are kept.",
    )
    _add_data_dir_flag(parser)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="where the cases and manifest.json go (default: the directory the run uses, "
        "<scratch>/preprocessed/kits19/<data directory>-<hash of its path and case list>)",
    )
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        directory: Path = args.data_dir or default_data_dir(scratch)
        layout = check_layout(directory)
        data = DataChoice(directory, tuple(layout.cases), generated=False, origin=str(directory))
        output_dir: Path = args.preprocessed_dir or default_preprocessed_dir(scratch, data)
        print(f"preprocess_data: {directory}; output in {output_dir}")
        report = preprocess_dataset(directory, output_dir, progress=args.progress)
        print(preprocessed_line(f"{report.cases} cases", report, output_dir / MANIFEST_NAME))

    return run_action(parser, action, argv, environ)


def _check_data(directory: Path) -> str:
    layout = check_layout(directory)  # one line naming what is missing, and how to get it
    return f"{directory}: all {len(layout.cases)} inference cases present"


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help="KiTS19's raw cases (case_XXXXX/imaging.nii.gz, segmentation.nii.gz; "
        "default: <scratch>/data/kits19)",
    )
