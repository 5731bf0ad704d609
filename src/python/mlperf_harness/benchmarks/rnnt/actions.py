"""RNN-T's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (a pex_binary in benchmarks/rnnt/BUILD) with the run's flag names
and default paths (resources.py): with no flags an action prepares exactly what
`benchmarks/rnnt:offline` looks for. LibriSpeech dev-clean is fetched and converted to WAV by
MLCommons' own scripts (download_librispeech.py, convert_librispeech.py: they write the
dev-clean-wav.json manifest): download_data checks the result and says, in one line, what is
missing."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.action_cli import action_parser, add_progress_flag, run_action
from mlperf_harness.benchmarks.data_actions import main_check_data, preprocessed_line
from mlperf_harness.benchmarks.download_action import fetch_and_report
from mlperf_harness.benchmarks.rnnt.resources import (
    default_checkpoint_path,
    default_data_dir,
    default_model_path,
    default_preprocessed_dir,
)
from mlperf_harness.datasets.librispeech.manifest import read_manifest
from mlperf_harness.datasets.librispeech.preprocess import MANIFEST_NAME, preprocess_librispeech
from mlperf_harness.datasets.model_sources import RNNT_CHECKPOINT, ModelSource
from mlperf_harness.errors import HarnessError


def main_download_model(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    source: ModelSource = RNNT_CHECKPOINT,
) -> int:
    """download_model: the published checkpoint, and (--convert) the model directory a run reads."""
    parser = action_parser(
        "download_model",
        f"Download {source.description} to <scratch>/models/rnnt/rnnt.pt; with --convert, also "
        "write the three ONNX graphs a run reads (needs torch to read the checkpoint).",
    )
    parser.add_argument("--checkpoint", type=Path, help="default: <scratch>/models/rnnt/rnnt.pt")
    parser.add_argument("--model_path", type=Path, help="default: <scratch>/models/rnnt/onnx")
    parser.add_argument("--convert", action="store_true", help="write the ONNX model directory")
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        checkpoint: Path = args.checkpoint or default_checkpoint_path(scratch)
        if not checkpoint.is_file():
            fetch_and_report("download_model", source, checkpoint, progress=args.progress)
        else:
            print(f"download_model: {checkpoint} is already there; nothing to download")
        if args.convert:
            from mlperf_harness.benchmarks.rnnt.checkpoint import convert_checkpoint

            model_dir: Path = args.model_path or default_model_path(scratch)
            files = convert_checkpoint(checkpoint, model_dir)
            print(f"download_model: wrote the model directory {files.directory} ({files.sizes})")

    return run_action(parser, action, argv, environ)


def main_download_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_data: check that LibriSpeech dev-clean (WAV, with its manifest) is in place."""
    return main_check_data(
        argv,
        environ,
        "Check that LibriSpeech dev-clean converted to WAV (dev-clean-wav.json and the files it "
        "names) is in the data directory; MLCommons' download_librispeech.py and "
        "convert_librispeech.py make it (docs/rnnt.md).",
        _add_data_dir_flag,
        default_data_dir,
        _check_data,
    )


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: the features the run reads, unless they are up to date."""
    parser = action_parser(
        "preprocess_data",
        "Compute each utterance's log-mel features as MLCommons' reference does into the "
        "directory the run uses; finished utterances are kept, an interrupted run resumes.",
    )
    _add_data_dir_flag(parser)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="where features/ and manifest.json go (default: the directory the run uses, "
        "<scratch>/preprocessed/librispeech/<data directory>-<hash of its path>)",
    )
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        directory: Path = args.data_dir or default_data_dir(scratch)
        output_dir: Path = args.preprocessed_dir or default_preprocessed_dir(scratch, directory)
        dataset = read_manifest(directory)
        print(f"preprocess_data: {dataset.describe()}; output in {output_dir}")
        report = preprocess_librispeech(dataset, output_dir, progress=args.progress)
        print(preprocessed_line(f"{report.total} utterances", report, output_dir / MANIFEST_NAME))

    return run_action(parser, action, argv, environ)


def _check_data(directory: Path) -> str:
    dataset = read_manifest(directory)
    missing = [u.audio for u in dataset.utterances if not u.audio.is_file()]
    if missing:
        raise HarnessError(
            f"{len(missing)} of the {len(dataset)} utterances' audio files are missing, the "
            f"first {missing[0]}: convert dev-clean with MLCommons' convert_librispeech.py"
        )
    return f"{dataset.describe()}: every audio file is present"


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help="LibriSpeech with dev-clean-wav.json and dev-clean-wav/ (default: "
        "<scratch>/data/LibriSpeech)",
    )
