"""ResNet-50's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (a pex_binary in benchmarks/resnet50/BUILD) with the run command
line's flag names and defaults (cli/options.py), so that an action given no flags prepares exactly
the files that `benchmarks/resnet50:offline` looks for, and a path given to an action means what it
means to the run. Like the run, an action reports a problem the user can fix as one line on stderr
and exits 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

# The run's own default paths, imported rather than copied so the two never disagree.
from mlperf_harness.benchmarks.action_cli import (
    action_parser,
    add_progress_flag,
    run_action,
)
from mlperf_harness.benchmarks.download_action import main_download_one_model
from mlperf_harness.benchmarks.resnet50.action_cli import add_data_dir_flag, comma_list, data_dir
from mlperf_harness.benchmarks.resnet50.resources import (
    default_model_path,
    default_preprocessed_dir,
)
from mlperf_harness.cli.parsing import positive_int
from mlperf_harness.datasets.imagenet.layout import WHERE_TO_GET, check_layout
from mlperf_harness.datasets.imagenet.preprocess import (
    DEFAULT_FORMATS,
    PreprocessReport,
    preprocess_data,
)
from mlperf_harness.datasets.model_sources import RESNET50_V1_5_ONNX, ModelSource

# --- entry points ---------------------------------------------------------------------------


def main_download_model(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    source: ModelSource = RESNET50_V1_5_ONNX,
) -> int:
    """download_model: fetch the official ONNX model (resumable, checksum verified).

    source is the published file to fetch; tests pass one whose checksum matches what they serve.
    """
    return main_download_one_model(
        argv, environ, source, default_model_path, f"<scratch>/models/resnet50/{source.filename}"
    )


def main_download_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_data: check the ImageNet validation set the user put in place (exit 2 if absent)."""
    parser = action_parser(
        "download_data",
        "Check the ImageNet 2012 validation set under the data directory. It cannot be downloaded "
        "automatically (a person must accept its license): this says what is there or what is "
        "missing, and where to get it.",
    )
    add_data_dir_flag(parser)
    return run_action(parser, _download_data, argv, environ)


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: bring the preprocessed samples the run reads up to date, incrementally."""
    parser = action_parser(
        "preprocess_data",
        "Preprocess the validation images into the arrays the run reads; images already "
        "preprocessed (same content, same transform) are skipped.",
    )
    add_data_dir_flag(parser)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="where the arrays and manifest.json go (default: the directory the run uses, "
        "<scratch>/preprocessed/imagenet/<image dir name>-<hash of its path>)",
    )
    parser.add_argument(
        "--formats",
        type=comma_list,
        default=DEFAULT_FORMATS,
        help=f"comma-separated output formats (default: {','.join(DEFAULT_FORMATS)})",
    )
    parser.add_argument(
        "--workers", type=positive_int, help="processes to use (default: one per available CPU)"
    )
    add_progress_flag(parser)
    return run_action(parser, _preprocess_data, argv, environ)


# --- the actions ----------------------------------------------------------------------------


def _download_data(args: argparse.Namespace, scratch: Path) -> None:
    val_set = check_layout(data_dir(args, scratch))  # raises with what is missing and where
    print(f"download_data: {val_set.describe()}")
    if val_set.is_full:
        print("download_data: nothing to download")
    else:
        print(f"download_data: for the full set, {WHERE_TO_GET}")


def _preprocess_data(args: argparse.Namespace, scratch: Path) -> None:
    # The run names its default output directory after the image directory that check_layout
    # finds (data_dir/imagenet or data_dir itself), so the same directory is resolved here.
    val_set = check_layout(data_dir(args, scratch))
    output_dir: Path = args.preprocessed_dir or default_preprocessed_dir(scratch, val_set.image_dir)
    print(f"preprocess_data: {val_set.describe()}; output in {output_dir}")
    report = preprocess_data(
        val_set.image_dir,
        output_dir,
        args.formats,
        workers=args.workers,
        progress=args.progress,
    )
    print(_format_report(report))


def _format_report(report: PreprocessReport) -> str:
    workers = f"{report.workers} worker{'s' if report.workers != 1 else ''}"
    return (
        f"preprocess_data: {report.processed} processed, {report.skipped} skipped (up to date) "
        f"of {report.total} in {report.seconds:.1f} s ({report.images_per_second:.1f} images/s, "
        f"{workers}); manifest: {report.manifest_path}"
    )
