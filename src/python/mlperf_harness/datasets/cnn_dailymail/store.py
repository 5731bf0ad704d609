"""GPT-J's preprocessed prompts on disk: each sample's prompt tokenized once, as the reference's
dataset.py does it (the Alpaca template, GPT-J's tokenizer, the first 1,919 tokens), and read back
by every run made from the same data and tokenizer.

    <dir>/tokens.npy      int32 [all tokens]: the prompts' ids, one prompt after another
    <dir>/offsets.npy     int64 [samples + 1]: where each sample's prompt starts (qsl_idx order)
    <dir>/manifest.json   counts, what the set was made from, each file's size and sha256

Tokenizing the 13,368 articles takes a while on a slow machine, so the work is kept as it goes:
chunks of samples are written whole (a temporary name renamed) into `.<name>-partial/` beside the
directory, with what they were made from; a run after an interruption keeps the chunks made from
the same inputs and tokenizes the rest. The set itself is then written in a staging directory and
renamed into place, the manifest last: a reader never sees half a set. Loading checks each file's
size and sha256 against the manifest, so a damaged set is one line, never wrong prompts.
"""

from __future__ import annotations

import io
import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import tokenizers
from tqdm import tqdm

from mlperf_harness.atomic import (
    remove_stale_staging,
    staging_directory,
    write_bytes_atomic,
    write_json_atomic,
)
from mlperf_harness.datasets.cnn_dailymail.samples import SummaryDataset
from mlperf_harness.datasets.cnn_dailymail.tokenizer import (
    ADDED_TOKENS_JSON,
    MERGES_TXT,
    SPECIAL_TOKENS_MAP_JSON,
    TOKENIZER_CONFIG_JSON,
    TOKENIZER_JSON,
    VOCAB_JSON,
)

# MANIFEST_NAME re-exported: readers of a set name its manifest through the set's module.
from mlperf_harness.datasets.set_manifest import MANIFEST_NAME as MANIFEST_NAME
from mlperf_harness.datasets.set_manifest import (
    check_files,
    file_records,
    finish_set,
    read_manifest,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256
from mlperf_harness.progress import bar_disabled
from mlperf_harness.scratch_lock import build_once
from mlperf_harness.write_errors import check_directory_path, writing

TOKENS_NAME, OFFSETS_NAME = "tokens.npy", "offsets.npy"
MANIFEST_VERSION = 1
# Bump when what a prompt tokenizes to changes (the template, the truncation): sets are remade.
PREPROCESSING_VERSION = "mlperf-gptj-cnndm/1"
CHUNK_SAMPLES = 500
_MADE_FROM = "made_from.json"
_TOKENIZER_FILES = (
    VOCAB_JSON,
    MERGES_TXT,
    TOKENIZER_JSON,
    ADDED_TOKENS_JSON,
    SPECIAL_TOKENS_MAP_JSON,
    TOKENIZER_CONFIG_JSON,
)

Encode = Callable[[str], list[int]]


@dataclass(frozen=True)
class PreprocessedPrompts:
    directory: Path
    tokens: npt.NDArray[np.int32]
    offsets: npt.NDArray[np.int64]
    made_from: dict[str, Any]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def prompts(self, count: int | None = None) -> list[npt.NDArray[np.int64]]:
        """The first `count` samples' prompts (all by default), as the run feeds them."""
        n = len(self) if count is None else count
        return [
            self.tokens[self.offsets[i] : self.offsets[i + 1]].astype(np.int64) for i in range(n)
        ]


@dataclass(frozen=True)
class PreprocessReport:
    directory: Path
    samples: int
    tokens: int
    truncated: int  # prompts cut at max_tokens
    made: bool  # False: the set was already there, made from the same inputs
    resumed_samples: int  # samples an interrupted run had already tokenized
    seconds: float


def made_from(data_file: Path, tokenizer_dir: Path, max_tokens: int) -> dict[str, Any]:
    """What a set is made from: the data file's and tokenizer files' digests, the code, the cut."""
    return {
        "preprocessing": PREPROCESSING_VERSION,
        "tokenizers": tokenizers.__version__,
        "max_tokens": max_tokens,
        "source_sha256": _digest(data_file, "data set"),
        "tokenizer_sha256": tokenizer_digests(tokenizer_dir),
    }


def tokenizer_digests(directory: Path) -> dict[str, str]:
    """The sha256 of each tokenizer file the directory has (vocab.json, merges.txt, ...)."""
    return {
        name: _digest(directory / name, "tokenizer file")
        for name in _TOKENIZER_FILES
        if (directory / name).is_file()
    }


def preprocess_prompts(
    dataset: SummaryDataset,
    encode: Encode,
    output_dir: Path,
    inputs: dict[str, Any],
    *,
    progress: bool = True,
) -> PreprocessReport:
    """Make output_dir the tokenized prompts of `dataset` (encode: a prompt's ids, already cut at
    max_tokens) unless it already is the set made from `inputs` (`made_from`). Runs sharing the
    directory make it once (the others wait for it)."""
    check_directory_path(output_dir, "the preprocessed prompts' directory")
    started = time.monotonic()

    def find() -> PreprocessReport | None:
        try:
            found = load_prompts(output_dir, inputs)
        except HarnessError:
            return None  # absent, of other inputs, or damaged: make it again
        manifest = _read_manifest(output_dir)
        return PreprocessReport(
            output_dir,
            len(found),
            int(found.tokens.size),
            int(manifest["truncated"]),
            made=False,
            resumed_samples=0,
            seconds=time.monotonic() - started,
        )

    def make() -> PreprocessReport:
        remove_stale_staging(
            output_dir.parent, output_dir.name, "preprocess: removing a half-made set"
        )
        lengths, chunks, resumed = _tokenize_in_chunks(
            dataset, encode, _partial_dir(output_dir), inputs, progress
        )
        tokens = np.concatenate(chunks) if chunks else np.zeros(0, np.int32)
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        truncated = int(np.count_nonzero(lengths >= inputs["max_tokens"]))
        _save(output_dir, tokens, offsets, inputs, truncated, dataset.source)
        shutil.rmtree(_partial_dir(output_dir), ignore_errors=True)
        return PreprocessReport(
            output_dir,
            len(lengths),
            int(tokens.size),
            truncated,
            made=True,
            resumed_samples=resumed,
            seconds=time.monotonic() - started,
        )

    return build_once(output_dir, "preprocessing GPT-J's prompts", find, make)


def load_prompts(directory: Path, inputs: dict[str, Any] | None = None) -> PreprocessedPrompts:
    """The set in directory, checked whole; and, if `inputs` is given, made from them."""
    manifest = _read_manifest(directory)
    if inputs is not None and manifest["made_from"] != inputs:
        differs = sorted(key for key in inputs if manifest["made_from"].get(key) != inputs.get(key))
        raise HarnessError(
            f"preprocessed prompts {directory} were made from other inputs ({', '.join(differs)} "
            "differ); preprocess them again"
        )
    check_files(directory, manifest, {TOKENS_NAME, OFFSETS_NAME}, _damaged)
    try:
        tokens = np.load(directory / TOKENS_NAME, allow_pickle=False)
        offsets = np.load(directory / OFFSETS_NAME, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise _damaged(directory, f"{type(error).__name__}: {error}") from error
    if (
        tokens.dtype != np.int32
        or offsets.dtype != np.int64
        or len(offsets) != manifest["samples"] + 1
        or offsets[0] != 0
        or offsets[-1] != tokens.size
        or np.any(np.diff(offsets) <= 0)
    ):
        raise _damaged(directory, "its arrays do not match its manifest")
    return PreprocessedPrompts(directory, tokens, offsets, dict(manifest["made_from"]))


# --- making ---------------------------------------------------------------------------------


def _partial_dir(output_dir: Path) -> Path:
    # Not ".<name>.<...>": remove_stale_staging deletes those, and this must outlive a killed run.
    return output_dir.parent / f".{output_dir.name}-partial"


def _tokenize_in_chunks(
    dataset: SummaryDataset,
    encode: Encode,
    partial: Path,
    inputs: dict[str, Any],
    progress: bool,
) -> tuple[npt.NDArray[np.int64], list[npt.NDArray[np.int32]], int]:
    """Every prompt's ids, chunk by chunk, keeping each finished chunk in `partial` (and reusing the
    chunks an interrupted run made from the same inputs)."""
    with writing(partial):
        if _read_json(partial / _MADE_FROM) != inputs:
            shutil.rmtree(partial, ignore_errors=True)  # another run's work, or none: start over
            partial.mkdir(parents=True)
            write_json_atomic(partial / _MADE_FROM, inputs)
    samples = dataset.samples
    lengths: list[npt.NDArray[np.int64]] = []
    chunks: list[npt.NDArray[np.int32]] = []
    resumed = 0
    with tqdm(
        total=len(samples),
        desc="tokenizing prompts",
        unit=" samples",
        disable=bar_disabled(progress),
    ) as bar:
        for start in range(0, len(samples), CHUNK_SAMPLES):
            part = samples[start : start + CHUNK_SAMPLES]
            path = partial / f"chunk-{start:06d}.npz"
            kept = _read_chunk(path, len(part))
            if kept is None:
                kept = _encode_chunk(part, encode, start, dataset.source)
                buffer = io.BytesIO()
                np.savez(buffer, lengths=kept[0], tokens=kept[1])
                write_bytes_atomic(path, buffer.getvalue())
            else:
                resumed += len(part)
            lengths.append(kept[0])
            chunks.append(kept[1])
            bar.update(len(part))
    return (np.concatenate(lengths) if lengths else np.zeros(0, np.int64)), chunks, resumed


def _encode_chunk(
    samples: Sequence[Any], encode: Encode, start: int, source: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    ids = []
    for number, sample in enumerate(samples, start=start):
        prompt = encode(sample.prompt())
        if not prompt:
            raise HarnessError(f"{source}: sample {number}'s prompt tokenizes to no tokens")
        ids.append(np.asarray(prompt, np.int32))
    lengths = np.array([len(p) for p in ids], np.int64)
    return lengths, np.concatenate(ids) if ids else np.zeros(0, np.int32)


def _read_chunk(
    path: Path, samples: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]] | None:
    """A chunk an earlier run finished, or None (absent or unreadable: made again)."""
    try:
        with np.load(path, allow_pickle=False) as chunk:
            lengths, tokens = chunk["lengths"], chunk["tokens"]
    except (OSError, ValueError, KeyError):
        return None
    if len(lengths) != samples or int(lengths.sum()) != tokens.size or np.any(lengths <= 0):
        return None
    return lengths.astype(np.int64), tokens.astype(np.int32)


def _save(
    output_dir: Path,
    tokens: npt.NDArray[np.int32],
    offsets: npt.NDArray[np.int64],
    inputs: dict[str, Any],
    truncated: int,
    source: str,
) -> None:
    staging = staging_directory(output_dir.parent, f".{output_dir.name}.")
    try:
        content = staging / "new"
        with writing(content):
            content.mkdir()
            np.save(content / TOKENS_NAME, tokens, allow_pickle=False)
            np.save(content / OFFSETS_NAME, offsets, allow_pickle=False)
            files = file_records(content, (TOKENS_NAME, OFFSETS_NAME))
            lengths = np.diff(offsets)
            manifest = {
                "manifest_version": MANIFEST_VERSION,
                "made_from": inputs,
                "source": source,
                "samples": len(offsets) - 1,
                "tokens": int(tokens.size),
                "longest_prompt": int(lengths.max()) if lengths.size else 0,
                "truncated": truncated,
                "files": files,
            }
            finish_set(content, manifest, output_dir, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --- checks ---------------------------------------------------------------------------------


def _read_manifest(directory: Path) -> dict[str, Any]:
    keys = ("made_from", "files", "samples", "truncated")
    return read_manifest(directory, "preprocessed prompts", MANIFEST_VERSION, keys, _damaged)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _damaged(directory: Path, what: str) -> HarnessError:
    return HarnessError(
        f"preprocessed prompts {directory} are incomplete or damaged: {what}; preprocess again"
    )


def _digest(path: Path, what: str) -> str:
    try:
        return file_sha256(path)
    except OSError as error:
        raise HarnessError(f"cannot read {what} {path}: {error.strerror or error}") from error
