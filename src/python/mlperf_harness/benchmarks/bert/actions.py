"""BERT's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (a pex_binary in benchmarks/bert/BUILD) with the run command
line's flag names and default paths (resources.py), so that an action given no flags prepares
exactly what `benchmarks/bert:offline` looks for: <scratch>/models/bert/model.onnx with vocab.txt
beside it, <scratch>/data/squad/dev-v1.1.json, and the preprocessed set in the directory the run
computes for that pair. Like the run, an action reports a problem the user can fix as one line on
stderr and exits 2; anything else is a bug and keeps its traceback.

Files are fetched through datasets/download.py (progress bar, resume, md5 verification, a temporary
name renamed into place) from the addresses in datasets/model_sources.py, which also says where
each md5 was published.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.action_cli import (
    action_parser,
    add_mirror_flag,
    add_progress_flag,
    run_action,
)

# The run's own default paths and file names, imported rather than copied so the two never disagree.
from mlperf_harness.benchmarks.bert.resources import (
    SQUAD_FILE_NAME,
    VOCAB_FILE_NAME,
    default_data_dir,
    default_model_path,
    default_preprocessed_dir,
)
from mlperf_harness.benchmarks.download_action import checksum_words, fetch_and_report
from mlperf_harness.datasets.model_sources import (
    BERT_LARGE_FP32_ONNX,
    BERT_LARGE_INT8_ONNX,
    BERT_VOCAB,
    SQUAD_V1_1_DEV,
    ModelSource,
)
from mlperf_harness.datasets.squad.examples import read_examples
from mlperf_harness.datasets.squad.store import (
    FULL_DEV_EXAMPLES,
    MANIFEST_NAME,
    SquadPreprocessReport,
    preprocess_squad,
)
from mlperf_harness.datasets.squad.vocab import load_vocab
from mlperf_harness.errors import HarnessError
from mlperf_harness.write_errors import check_directory_path

# --- entry points ---------------------------------------------------------------------------


def main_download_model(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    model_source: ModelSource = BERT_LARGE_FP32_ONNX,
    vocab_source: ModelSource = BERT_VOCAB,
    int8_source: ModelSource = BERT_LARGE_INT8_ONNX,
) -> int:
    """download_model: the official fp32 model and its vocab.txt (and with --int8 the int8 model).

    The sources are the published files to fetch; tests pass ones whose checksums match what they
    serve.
    """
    parser = action_parser(
        "download_model",
        f"Download {model_source.description} and its vocabulary (with --int8 also "
        f"{int8_source.filename}) and verify their checksums.",
    )
    parser.add_argument(
        "--model_path",
        type=Path,
        help=f"where to put the fp32 model (default: <scratch>/models/bert/{model_source.filename}); "
        f"{VOCAB_FILE_NAME} (and with --int8 the int8 model) go beside it, where the run looks",
    )
    parser.add_argument(
        "--int8",
        action="store_true",
        help=f"also download the int8 model, {int8_source.filename}, beside the fp32 one "
        "(a run uses it with --model_path <that file>)",
    )
    add_mirror_flag(parser, "--url", model_source.url, "the fp32 model")
    add_mirror_flag(parser, "--vocab_url", vocab_source.url, VOCAB_FILE_NAME)
    add_mirror_flag(parser, "--int8_url", int8_source.url, "the int8 model")
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        _download_model(args, scratch, model_source, vocab_source, int8_source)

    return run_action(parser, action, argv, environ)


def main_download_data(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    source: ModelSource = SQUAD_V1_1_DEV,
) -> int:
    """download_data: SQuAD v1.1's dev-v1.1.json into the data directory (checksum verified)."""
    parser = action_parser(
        "download_data",
        f"Download {source.description} into the data directory and verify its checksum.",
    )
    _add_data_dir_flag(parser)
    add_mirror_flag(parser, "--url", source.url)
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        _download_data(args, scratch, source)

    return run_action(parser, action, argv, environ)


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: make the preprocessed SQuAD set the run reads, unless it is up to date."""
    parser = action_parser(
        "preprocess_data",
        f"Convert {SQUAD_FILE_NAME} with the model's {VOCAB_FILE_NAME} into the features the run "
        "reads (MLPerf's conversion: 384 tokens, stride 128, query at most 64), into the directory "
        "the run uses; a set already made from the same files is kept.",
    )
    parser.add_argument(
        "--model_path",
        type=Path,
        help=f"the model whose {VOCAB_FILE_NAME} (beside it) tokenizes the questions "
        "(default: <scratch>/models/bert/model.onnx)",
    )
    _add_data_dir_flag(parser)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="where the arrays and manifest.json go (default: the directory the run uses, "
        "<scratch>/preprocessed/squad/dev-v1.1-<hash of the SQuAD file's and vocabulary's paths>)",
    )
    add_progress_flag(parser)
    return run_action(parser, _preprocess_data, argv, environ)


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help=f"the directory of {SQUAD_FILE_NAME} (default: <scratch>/data/squad)",
    )


# --- the actions ----------------------------------------------------------------------------


def _download_model(
    args: argparse.Namespace,
    scratch: Path,
    model_source: ModelSource,
    vocab_source: ModelSource,
    int8_source: ModelSource,
) -> None:
    model: Path = args.model_path or default_model_path(scratch)
    if model.is_dir():
        # Caught before the download: otherwise the final rename would fail after all the bytes.
        raise HarnessError(f"--model_path {model} is a directory; give the model file's path")
    # The vocabulary goes where resources.choose_model looks for it: beside the model. The small
    # file first: a wrong mirror or no network shows at once.
    plan = [
        (dataclasses.replace(vocab_source, url=args.vocab_url), model.parent / VOCAB_FILE_NAME),
        (dataclasses.replace(model_source, url=args.url), model),
    ]
    if args.int8:
        int8 = model.parent / int8_source.filename
        plan.append((dataclasses.replace(int8_source, url=args.int8_url), int8))
    if [dest.name for _, dest in plan].count(model.name) > 1:
        raise HarnessError(
            f"--model_path {model} has the name of a file that goes beside the model; give the "
            f"fp32 model's path (default name {model_source.filename})"
        )
    for index, (source, dest) in enumerate(plan):
        try:
            path = fetch_and_report("download_model", source, dest, progress=args.progress)
        except HarnessError as error:
            # Without network every file is to be fetched by hand: one line names them all.
            rest = [(later, where) for later, where in plan[index + 1 :] if not where.is_file()]
            if not rest:
                raise
            also = "; ".join(
                f"{later.url} for {where} ({checksum_words(later)})" for later, where in rest
            )
            raise HarnessError(f"{error}; also not fetched: {also}") from error
        if dest.name == VOCAB_FILE_NAME:
            # Read as the run reads it: the special tokens must be there (the official has 30,522).
            print(f"download_model: {path}: {len(load_vocab(path)):,} WordPiece tokens")
    if args.int8:
        print(f"download_model: run the int8 model with --model_path {int8}")


def _download_data(args: argparse.Namespace, scratch: Path, source: ModelSource) -> None:
    directory: Path = args.data_dir or default_data_dir(scratch)
    check_directory_path(directory, "--data_dir" if args.data_dir else "the data directory")
    source = dataclasses.replace(source, url=args.url)
    path = fetch_and_report(
        "download_data", source, directory / SQUAD_FILE_NAME, progress=args.progress
    )
    # Read as the run reads it (one line naming what is wrong if it is no SQuAD v1.1 file).
    questions = len(read_examples(path))
    whole = (
        "the full dev set"
        if questions == FULL_DEV_EXAMPLES
        else f"not the full dev set of {FULL_DEV_EXAMPLES:,}"
    )
    print(f"download_data: {path}: {questions:,} questions ({whole})")


def _preprocess_data(args: argparse.Namespace, scratch: Path) -> None:
    # The run's choice of inputs (resources.choose_model and choose_data), without the stand-in:
    # with no model the run builds the stand-in, which preprocesses its own generated questions.
    # (A stand-in model copied to the model path is not recognised here: that would mean loading
    # the model, which preprocessing does not need.)
    model: Path = args.model_path or default_model_path(scratch)
    if not model.is_file():
        if args.model_path is not None:
            raise HarnessError(f"model not found: {model}")
        raise HarnessError(
            f"no model at {model}: without one the run uses the stand-in, which preprocesses its "
            "own generated questions; run download_model first, or give --model_path"
        )
    vocab = model.parent / VOCAB_FILE_NAME
    if not vocab.is_file():
        raise HarnessError(
            f"no {VOCAB_FILE_NAME} beside {model}: BERT's vocabulary comes with its model "
            "(download_model fetches both)"
        )
    directory: Path = args.data_dir or default_data_dir(scratch)
    squad_json = directory / SQUAD_FILE_NAME
    if not squad_json.is_file():
        hint = "" if args.data_dir else ", or give --data_dir"
        raise HarnessError(f"no {SQUAD_FILE_NAME} in {directory}; run download_data first{hint}")
    output_dir: Path = args.preprocessed_dir or default_preprocessed_dir(scratch, squad_json, vocab)
    print(f"preprocess_data: {squad_json} with {vocab}; output in {output_dir}")
    report = preprocess_squad(squad_json, vocab, output_dir, progress=args.progress)
    print(_format_report(report))


def _format_report(report: SquadPreprocessReport) -> str:
    done = "made" if report.made else "already up to date"
    return (
        f"preprocess_data: {report.examples:,} questions, {report.features:,} features ({done}) "
        f"in {report.seconds:.1f} s; manifest: {report.output_dir / MANIFEST_NAME}"
    )
