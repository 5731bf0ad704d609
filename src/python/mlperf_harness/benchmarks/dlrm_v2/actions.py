"""DLRM-v2's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (a pex_binary in benchmarks/dlrm-v2/BUILD) with the run's flag
names and default paths (resources.py). Neither the checkpoint nor Criteo 1TB has a plain address
this harness can fetch from: MLCommons serves the 97 GB checkpoint from a Cloudflare R2 bucket
through rclone (MLCommons' DLRM-v2 README, "Downloading model weights") with no published checksum,
and Criteo's click logs come from Criteo's own site under its terms. download_model and
download_data check what is in place and say, in one line, what is missing and where it goes.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.action_cli import action_parser, add_progress_flag, run_action
from mlperf_harness.benchmarks.data_actions import main_check_data
from mlperf_harness.benchmarks.dlrm_v2.resources import (
    default_data_dir,
    default_model_path,
    default_preprocessed_dir,
)
from mlperf_harness.cli.parsing import non_negative_int
from mlperf_harness.datasets.criteo.preprocess import (
    DAY_23_ROWS,
    MATERIALIZED,
    RAW_DAY,
    TRACE_NAME,
    find_input,
    preprocess_day,
)
from mlperf_harness.datasets.criteo.store import MANIFEST_NAME
from mlperf_harness.errors import HarnessError

CHECKPOINT_HOW = (
    "MLCommons serves it through rclone only (its DLRM-v2 README, 'Downloading model weights': "
    "`rclone copy mlc-inference:mlcommons-inference-wg-public/model_weights ...`)"
)
DATA_HOW = (
    "Criteo 1TB comes from Criteo (ailab.criteo.com, 'Criteo 1TB click logs dataset for MLPerf'); "
    "MLCommons' training repo (recommendation_v2/torchrec_dlrm) makes the multi-hot files from it"
)


def main_download_model(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_model: check that the official checkpoint is where the run looks for it."""
    parser = action_parser(
        "download_model",
        "Check that DLRM-v2's official checkpoint (a 97 GB torchsnapshot directory) is in place; "
        "it cannot be fetched by this harness (the error says how to get it).",
    )

    def action(args: argparse.Namespace, scratch: Path) -> None:
        path = default_model_path(scratch)
        if not (path / ".snapshot_metadata").is_file():
            raise HarnessError(
                f"no DLRM-v2 checkpoint at {path} (a torchsnapshot directory holding "
                f".snapshot_metadata): {CHECKPOINT_HOW}; put its model_weights directory there"
            )
        print(f"download_model: {path}: the checkpoint is in place")

    return run_action(parser, action, argv, environ)


def main_download_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_data: check that day 23 of Criteo 1TB is in the data directory."""
    return main_check_data(
        argv,
        environ,
        "Check that Criteo 1TB's day 23 (MLCommons' multi-hot files, or the raw day file) is in "
        "the data directory (it cannot be fetched by this harness; the error says how).",
        _add_data_dir_flag,
        default_data_dir,
        _check_data,
    )


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: the preprocessed set the run reads, unless it is there already."""
    parser = action_parser(
        "preprocess_data",
        "Preprocess day 23's first half into the set the run reads (the raw day file made "
        "multi-hot, or MLCommons' multi-hot files as they are); resumes where it stopped.",
    )
    _add_data_dir_flag(parser)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="where the set goes (default: the directory the run uses, "
        "<scratch>/preprocessed/dlrm_v2/day_23)",
    )
    parser.add_argument(
        "--aggregation_trace_file",
        type=Path,
        help=f"the reference's {TRACE_NAME}: its samples' sizes (default: drawn, seeded, from "
        "the reference's quantiles)",
    )
    parser.add_argument(
        "--day_rows",
        type=non_negative_int,
        default=DAY_23_ROWS,
        help="rows the day's files must hold, so that a truncated one is refused (default: "
        "Criteo 1TB's day 23, %(default)s; 0: any)",
    )
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        directory: Path = args.data_dir or default_data_dir(scratch)
        output_dir: Path = args.preprocessed_dir or default_preprocessed_dir(scratch)
        print(f"preprocess_data: {directory}; output in {output_dir}")
        report = preprocess_day(
            directory,
            output_dir,
            trace=args.aggregation_trace_file,
            expected_rows=args.day_rows or None,
            progress=args.progress,
        )
        print(
            f"preprocess_data: {report.samples} samples, {report.pairs} pairs ({report.chunks} "
            f"chunks, {report.resumed_chunks} done before); manifest: {output_dir / MANIFEST_NAME}"
        )

    return run_action(parser, action, argv, environ)


def _check_data(directory: Path) -> str:
    try:
        kind = find_input(directory)
    except HarnessError:
        raise HarnessError(
            f"{directory} holds neither {', '.join(MATERIALIZED)} nor {RAW_DAY}: {DATA_HOW}; "
            "put them there"
        ) from None
    return f"{directory}: day 23 present ({kind})"


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help=f"day 23 of Criteo 1TB: {', '.join(MATERIALIZED)}, or the raw {RAW_DAY} "
        "(default: <scratch>/data/criteo)",
    )
