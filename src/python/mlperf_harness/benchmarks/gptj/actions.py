"""GPT-J's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (benchmarks/gptj/BUILD) with the run's flag names and default
paths (benchmark.py), so that an action given no flags prepares exactly what `benchmarks/gptj:offline`
looks for: the checkpoint directory <scratch>/models/gptj, <scratch>/data/cnn_dailymail/cnn_eval.json
with nltk's punkt_tab under nltk_data/ beside it, and the tokenized prompts in the directory the run
computes for that pair. A problem the user can fix is one line on stderr and exit 2.

- download_model: MLCommons' checkpoint, file by file from the directory its R2 downloader reads
  (datasets/model_sources.py: the address and each file's published md5), with progress, resume
  and md5 verification (datasets/download.py). Offline: one line naming the files still to fetch,
  where from and where to put them.
- download_data: nltk's punkt_tab (a public copy of the package nltk.download fetches), unpacked
  where the run looks. cnn_eval.json has no published copy: the reference makes it with
  language/gpt-j/download_cnndm.py from Hugging Face's datasets; without it the action says so in
  one line.
- preprocess_data: each prompt tokenized and cut at 1,919 tokens, as the reference's dataset.py
  does (datasets/cnn_dailymail/store.py: manifest, resumable).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from mlperf_harness.accuracy.rouge import PUNKT_FOLDER, SentenceSplitter
from mlperf_harness.atomic import staging_directory
from mlperf_harness.benchmarks.action_cli import (
    action_parser,
    add_mirror_flag,
    add_progress_flag,
    run_action,
)
from mlperf_harness.benchmarks.download_action import fetch_and_report
from mlperf_harness.benchmarks.gptj.benchmark import (
    DATA_FILE_NAME,
    PERFORMANCE_SAMPLE_COUNT,
    default_data_dir,
    default_model_path,
    default_preprocessed_dir,
)
from mlperf_harness.benchmarks.rouge_runs import NLTK_DATA_DIR
from mlperf_harness.datasets.cnn_dailymail.samples import read_dataset
from mlperf_harness.datasets.cnn_dailymail.store import (
    MANIFEST_NAME,
    PreprocessReport,
    made_from,
    preprocess_prompts,
)
from mlperf_harness.datasets.cnn_dailymail.tokenizer import PROMPT_MAX_TOKENS, load_tokenizer
from mlperf_harness.datasets.model_sources import (
    GPTJ_CHECKPOINT_MD5,
    GPTJ_CHECKPOINT_MD5_SOURCE,
    GPTJ_CHECKPOINT_URL,
    PUNKT_TAB_ZIP,
    ModelSource,
    gptj_checkpoint_sources,
)
from mlperf_harness.engines.torch_gptj.checkpoint_files import check_checkpoint
from mlperf_harness.errors import HarnessError
from mlperf_harness.write_errors import check_directory_path, writing

# How the reference makes cnn_eval.json: nothing publishes the file itself.
CNN_EVAL_HOW = (
    "MLCommons publishes no copy: make it with the reference's language/gpt-j/download_cnndm.py "
    "(Hugging Face datasets' cnn_dailymail 3.0.0 validation split; it writes data/cnn_eval.json)"
)

# --- entry points ---------------------------------------------------------------------------


def main_download_model(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    base_url: str = GPTJ_CHECKPOINT_URL,
    md5s: Mapping[str, str] = GPTJ_CHECKPOINT_MD5,
) -> int:
    """download_model: MLCommons' GPT-J checkpoint directory, every file md5-verified. `md5s`: the
    files to fetch and their published md5s (tests pass those of what they serve)."""
    parser = action_parser(
        "download_model",
        "Download MLCommons' GPT-J 6B checkpoint (fine-tuned on CNN-DailyMail; 13 files, about "
        "24 GB: three pytorch_model-*.bin shards, their index, config and tokenizer) and verify "
        "each file's published md5.",
    )
    parser.add_argument(
        "--model_path",
        type=Path,
        help="the checkpoint directory to fill (default: <scratch>/models/gptj, where the run looks)",
    )
    add_mirror_flag(parser, "--url", base_url, "the checkpoint's files (a directory URL)")
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        _download_model(args, scratch, md5s)

    return run_action(parser, action, argv, environ)


def main_download_data(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    punkt_source: ModelSource = PUNKT_TAB_ZIP,
) -> int:
    """download_data: nltk's punkt_tab into <data_dir>/nltk_data, and a check of cnn_eval.json."""
    parser = action_parser(
        "download_data",
        f"Download nltk's punkt_tab sentence model (for ROUGE-Lsum) into <data_dir>/{NLTK_DATA_DIR} "
        f"and check {DATA_FILE_NAME}, MLCommons' CNN-DailyMail validation set, which has no "
        "published copy (the error says how to make it).",
    )
    _add_data_dir_flag(parser)
    add_mirror_flag(parser, "--punkt_url", punkt_source.url, "punkt_tab.zip")
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        _download_data(args, scratch, punkt_source)

    return run_action(parser, action, argv, environ)


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: the tokenized prompts the run reads, unless they are up to date."""
    parser = action_parser(
        "preprocess_data",
        f"Tokenize every prompt of {DATA_FILE_NAME} with the checkpoint's tokenizer, cut at "
        f"{PROMPT_MAX_TOKENS:,} tokens as MLCommons' reference does, into the directory the run "
        "reads; a set already made from the same files is kept, an interrupted one resumed.",
    )
    parser.add_argument(
        "--model_path",
        type=Path,
        help="the checkpoint directory whose tokenizer files tokenize the prompts "
        "(default: <scratch>/models/gptj)",
    )
    _add_data_dir_flag(parser)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="where tokens.npy, offsets.npy and manifest.json go (default: the directory the run "
        "uses, <scratch>/preprocessed/cnn_dailymail/cnn_eval-<hash of the two paths>)",
    )
    add_progress_flag(parser)
    return run_action(parser, _preprocess_data, argv, environ)


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help=f"the directory of {DATA_FILE_NAME} and {NLTK_DATA_DIR}/ "
        "(default: <scratch>/data/cnn_dailymail)",
    )


# --- the actions ----------------------------------------------------------------------------


def _download_model(args: argparse.Namespace, scratch: Path, md5s: Mapping[str, str]) -> None:
    directory: Path = args.model_path or default_model_path(scratch)
    check_directory_path(directory, "--model_path" if args.model_path else "the model directory")
    plan = gptj_checkpoint_sources(args.url, md5s)
    for index, source in enumerate(plan):
        try:
            fetch_and_report(
                "download_model", source, directory / source.filename, progress=args.progress
            )
        except HarnessError as error:
            # Without network every file is to be fetched by hand: one line names them all.
            rest = [s.filename for s in plan[index + 1 :] if not (directory / s.filename).is_file()]
            if not rest:
                raise
            raise HarnessError(
                f"{error}; also not fetched: {', '.join(rest)} from {args.url.rstrip('/')}/ into "
                f"{directory} (their md5s: {GPTJ_CHECKPOINT_MD5_SOURCE})"
            ) from error
    # Read as the run reads them: the tokenizer, and the layout from config.json and the index.
    tokenizer = load_tokenizer(directory)
    files = check_checkpoint(directory)
    shape = files.shape
    print(
        f"download_model: {directory}: GPT-J checkpoint ({shape.layers} blocks, hidden "
        f"{shape.hidden}, vocabulary {shape.vocab_size}; {len(files.shards)} shards), tokenizer "
        f"of {tokenizer.vocab_size:,} tokens"
    )


def _download_data(args: argparse.Namespace, scratch: Path, punkt_source: ModelSource) -> None:
    directory: Path = args.data_dir or default_data_dir(scratch)
    check_directory_path(directory, "--data_dir" if args.data_dir else "the data directory")
    problems = []
    try:
        _ensure_punkt_tab(directory, dataclasses.replace(punkt_source, url=args.punkt_url), args)
    except HarnessError as error:
        problems.append(str(error))
    data_file = directory / DATA_FILE_NAME
    if data_file.is_file():
        try:
            samples = len(read_dataset(data_file))  # read as the run reads it
        except HarnessError as error:
            problems.append(str(error))
        else:
            whole = (
                "the full validation set"
                if samples == PERFORMANCE_SAMPLE_COUNT
                else f"not the full validation set of {PERFORMANCE_SAMPLE_COUNT:,}"
            )
            print(f"download_data: {data_file}: {samples:,} samples ({whole})")
    else:
        problems.append(
            f"no {DATA_FILE_NAME} in {directory}: {CNN_EVAL_HOW}; put it at {data_file}"
        )
    if problems:
        raise HarnessError("; and ".join(problems))


def _ensure_punkt_tab(directory: Path, source: ModelSource, args: argparse.Namespace) -> None:
    """nltk's punkt_tab under directory/nltk_data as nltk.download puts it, checked by loading the
    English model with the scorer's own splitter."""
    nltk_data = directory / NLTK_DATA_DIR
    english = nltk_data / PUNKT_FOLDER
    by_hand = (
        f"without network run nltk.download('punkt_tab', download_dir='{nltk_data}') on another "
        f"machine and copy {nltk_data} here"
    )
    if english.is_dir():
        SentenceSplitter(nltk_data)  # one line if the folder is incomplete
        print(f"download_data: {english} is already there; nothing to download")
        return
    archive = directory / source.filename
    try:
        fetch_and_report("download_data", source, archive, progress=args.progress)
    except HarnessError as error:
        raise HarnessError(f"{error}; or {by_hand}") from error
    _unpack_punkt_tab(archive, nltk_data / "tokenizers")
    SentenceSplitter(nltk_data)
    archive.unlink()
    print(f"download_data: nltk's punkt_tab unpacked to {nltk_data / 'tokenizers' / 'punkt_tab'}")


def _unpack_punkt_tab(archive: Path, tokenizers_dir: Path) -> None:
    """The zip's punkt_tab/ folder into tokenizers_dir, whole (staged, then renamed) or not at all;
    a zip that is not nltk's punkt_tab package is deleted so that the next run fetches it again."""
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = [m for m in bundle.infolist() if not m.is_dir()]
            for member in members:
                parts = PurePosixPath(member.filename).parts
                if (
                    not parts
                    or parts[0] != "punkt_tab"
                    or ".." in parts
                    or member.filename[0] == "/"
                ):
                    raise zipfile.BadZipFile(f"unexpected member {member.filename!r}")
            if not any(m.filename.startswith("punkt_tab/english/") for m in members):
                raise zipfile.BadZipFile("no punkt_tab/english/ folder")
            staging = staging_directory(tokenizers_dir, ".punkt_tab.")
            try:
                with writing(staging):
                    for member in members:
                        bundle.extract(member, staging)
                    target = tokenizers_dir / "punkt_tab"
                    if target.exists():
                        os.replace(target, staging / "replaced")
                    os.replace(staging / "punkt_tab", target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except (zipfile.BadZipFile, EOFError) as error:
        archive.unlink(missing_ok=True)
        raise HarnessError(
            f"{archive} is not nltk's punkt_tab package ({error}): deleted it; run again, or put "
            "the right punkt_tab.zip there"
        ) from error


def _preprocess_data(args: argparse.Namespace, scratch: Path) -> None:
    # The run's choice of inputs (benchmark.choose), without the stand-in: with no checkpoint the
    # run builds the stand-in, which tokenizes its own generated articles.
    model: Path = args.model_path or default_model_path(scratch)
    if not model.is_dir():
        if args.model_path is not None:
            raise HarnessError(f"GPT-J checkpoint directory not found: {model}")
        raise HarnessError(
            f"no GPT-J checkpoint at {model}: its tokenizer tokenizes the prompts (without one the "
            "run uses the stand-in, which tokenizes its own articles); run download_model first, "
            "or give --model_path"
        )
    directory: Path = args.data_dir or default_data_dir(scratch)
    data_file = directory / DATA_FILE_NAME
    if not data_file.is_file():
        hint = "" if args.data_dir else ", or give --data_dir"
        raise HarnessError(f"no {DATA_FILE_NAME} in {directory}; run download_data first{hint}")
    tokenizer = load_tokenizer(model)
    dataset = read_dataset(data_file)
    output: Path = args.preprocessed_dir or default_preprocessed_dir(scratch, data_file, model)
    print(f"preprocess_data: {data_file} with {model}'s tokenizer; output in {output}")
    report = preprocess_prompts(
        dataset,
        lambda text: tokenizer.encode(text, PROMPT_MAX_TOKENS),
        output,
        made_from(data_file, model, PROMPT_MAX_TOKENS),
        progress=args.progress,
    )
    print(_format_report(report))


def _format_report(report: PreprocessReport) -> str:
    done = "made" if report.made else "already up to date"
    resumed = (
        f", {report.resumed_samples:,} of them kept from an interrupted run"
        if (report.resumed_samples)
        else ""
    )
    return (
        f"preprocess_data: {report.samples:,} prompts, {report.tokens:,} tokens, "
        f"{report.truncated:,} cut at {PROMPT_MAX_TOKENS:,} ({done}{resumed}) in "
        f"{report.seconds:.1f} s; manifest: {report.directory / MANIFEST_NAME}"
    )
