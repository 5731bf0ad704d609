"""RetinaNet's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (a pex_binary in benchmarks/retinanet/BUILD) with the run's flag
names and default paths (resources.py): with no flags an action prepares exactly what
`benchmarks/retinanet:offline` looks for. The OpenImages subset is fetched by MLCommons' own script
(from OpenImages' buckets, with its annotation tools), not by this harness: download_data checks the
layout and says, in one line, what is missing and how to get it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.action_cli import action_parser, add_progress_flag, run_action
from mlperf_harness.benchmarks.data_actions import main_check_data, preprocessed_line
from mlperf_harness.benchmarks.download_action import main_download_one_model
from mlperf_harness.benchmarks.retinanet.resources import (
    default_data_dir,
    default_model_path,
    default_preprocessed_dir,
)
from mlperf_harness.datasets.model_sources import RETINANET_ONNX, ModelSource
from mlperf_harness.datasets.openimages.layout import check_layout
from mlperf_harness.datasets.openimages.preprocess import (
    FORMATS,
    MANIFEST_NAME,
    preprocess_dataset,
)


def main_download_model(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    source: ModelSource = RETINANET_ONNX,
) -> int:
    """download_model: the published ONNX model where the run looks for it."""
    return main_download_one_model(
        argv, environ, source, default_model_path, f"<scratch>/models/retinanet/{source.filename}"
    )


def main_download_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_data: check that the OpenImages MLPerf subset is in the data directory."""
    return main_check_data(
        argv,
        environ,
        "Check that the OpenImages MLPerf subset (annotations/openimages-mlperf.json and the images "
        "it names under validation/data/) is in the data directory; MLCommons' "
        "openimages_mlperf.sh fetches it (the error says how).",
        _add_data_dir_flag,
        default_data_dir,
        _check_data,
    )


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: the preprocessed images the run reads, unless they are up to date."""
    parser = action_parser(
        "preprocess_data",
        "Preprocess the subset's images as MLCommons' reference does (800x800, / 255, NCHW) into "
        "the directory the run uses; finished images are kept, an interrupted run resumes.",
    )
    _add_data_dir_flag(parser)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="where fp32/, int8/ and manifest.json go (default: the directory the run uses, "
        "<scratch>/preprocessed/openimages/<data directory>-<hash of its path>)",
    )
    parser.add_argument(
        "--formats",
        default="fp32,int8",
        help=f"comma-separated, of {', '.join(FORMATS)} (default fp32,int8)",
    )
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        directory: Path = args.data_dir or default_data_dir(scratch)
        output_dir: Path = args.preprocessed_dir or default_preprocessed_dir(scratch, directory)
        formats = [fmt for fmt in args.formats.split(",") if fmt]
        print(f"preprocess_data: {directory}; output in {output_dir}")
        report = preprocess_dataset(directory, output_dir, formats, progress=args.progress)
        print(preprocessed_line(f"{report.total} images", report, output_dir / MANIFEST_NAME))

    return run_action(parser, action, argv, environ)


def _check_data(directory: Path) -> str:
    images = check_layout(directory)  # one line naming what is missing, and how to get it
    return f"{images.describe()}: every image the annotations name is present"


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help="the subset (annotations/openimages-mlperf.json, validation/data/; "
        "default: <scratch>/data/openimages)",
    )
