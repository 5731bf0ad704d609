"""The preprocessed SQuAD set on disk: what a BERT run feeds the model and what its scorer reads.

    <dir>/input_ids.npy, input_mask.npy, segment_ids.npy   int32 [N, 384]: the model's inputs
                                                           (NVIDIA's names and layout)
    <dir>/example_index.npy, doc_span_index.npy            int32 [N]: each feature's question, window
    <dir>/token_to_orig.npy                                int32 [N, 384]: paragraph word, else -1
    <dir>/max_context.npy                                  bool [N, 384]: an answer may start there
    <dir>/examples.json                                    the paragraphs' words and the questions
    <dir>/vocab.txt                                        the vocabulary: token ids back to text
    <dir>/manifest.json                                    counts, settings, digests of all the above

A small set (the dev set: 10,833 features, about 75 MB) made in seconds, so the directory is made
whole: in a staging directory beside it, renamed into place at the end. An interrupted run leaves no
half-made set, and a reader never sees one. Loading checks every file against the manifest's size
and sha256 (a fraction of a second), so a truncated or damaged set is one clear line, never wrong
answers; the caller's vocabulary, source file and settings are checked against the manifest too.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import tokenizers

from mlperf_harness.atomic import remove_stale_staging, staging_directory

# MANIFEST_NAME re-exported: readers of a set name its manifest through the set's module.
from mlperf_harness.datasets.set_manifest import MANIFEST_NAME as MANIFEST_NAME
from mlperf_harness.datasets.set_manifest import (
    check_files,
    finish_set,
    read_manifest,
)
from mlperf_harness.datasets.squad.examples import Answer, SquadExample, read_examples
from mlperf_harness.datasets.squad.features import FeatureSettings, SquadFeatures, convert_examples
from mlperf_harness.datasets.squad.tokenizer import BertWordPiece
from mlperf_harness.datasets.squad.vocab import Vocabulary, load_vocab, parse_vocab
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256
from mlperf_harness.scratch_lock import build_once
from mlperf_harness.write_errors import check_directory_path, writing

EXAMPLES_NAME = "examples.json"
VOCAB_NAME = "vocab.txt"
MANIFEST_VERSION = 1
# Bump when features.py or tokenizer.py changes what they produce: every set is then remade. The
# tokenizers version is part of the freshness key too.
PREPROCESSING_VERSION = "mlperf-bert-squad-v1.1/1"
# SQuAD v1.1 dev: the set MLPerf's BERT accuracy is defined on.
FULL_DEV_EXAMPLES = 10_570
FULL_DEV_FEATURES = 10_833

# Each array of SquadFeatures, by field name, and whether it has a sequence axis.
_ARRAYS = {
    "input_ids": True,
    "input_mask": True,
    "segment_ids": True,
    "example_index": False,
    "doc_span_index": False,
    "token_to_orig": True,
    "max_context": True,
}


@dataclass(frozen=True)
class SquadDataset:
    """Questions, their features, and the vocabulary that made them."""

    examples: list[SquadExample]
    features: SquadFeatures
    vocab: Vocabulary
    settings: FeatureSettings
    source_sha256: str  # of the SQuAD JSON file

    @property
    def is_full_dev_set(self) -> bool:
        return len(self.examples) == FULL_DEV_EXAMPLES and len(self.features) == FULL_DEV_FEATURES


@dataclass(frozen=True)
class SquadPreprocessReport:
    output_dir: Path
    examples: int
    features: int
    made: bool  # False: the directory was already up to date
    seconds: float


def build_dataset(
    squad_json: Path,
    vocab_path: Path,
    settings: FeatureSettings | None = None,
    *,
    progress: bool = False,
) -> SquadDataset:
    """Read, tokenize and convert in memory (what the scorer does when given the JSON itself)."""
    settings = settings or FeatureSettings()
    vocab = load_vocab(vocab_path)
    examples = read_examples(squad_json)
    features = convert_examples(examples, BertWordPiece(vocab), settings, progress=progress)
    return SquadDataset(examples, features, vocab, settings, file_sha256(squad_json))


def preprocess_squad(
    squad_json: Path,
    vocab_path: Path,
    output_dir: Path,
    *,
    settings: FeatureSettings | None = None,
    progress: bool = True,
) -> SquadPreprocessReport:
    """Make output_dir the preprocessed set of squad_json with this vocabulary, unless it already
    is. Runs sharing the directory make it once (the others wait for it)."""
    settings = settings or FeatureSettings()
    settings.check()
    check_directory_path(output_dir, "the preprocessed SQuAD directory")
    started = time.monotonic()
    source_sha256 = _digest(squad_json, "SQuAD file")
    vocab_sha256 = _digest(vocab_path, "vocabulary")

    def find() -> SquadPreprocessReport | None:
        try:
            manifest = _read_manifest(output_dir)
            _check_made_from(
                output_dir,
                manifest,
                **_made_from(settings, vocab_sha256, source_sha256),
            )
            _check_files(output_dir, manifest)
        except HarnessError:
            return None  # absent, of another input or version, or damaged: make it again
        return SquadPreprocessReport(
            output_dir,
            int(manifest["examples"]),
            int(manifest["features"]),
            made=False,
            seconds=time.monotonic() - started,
        )

    def make() -> SquadPreprocessReport:
        remove_stale_staging(
            output_dir.parent, output_dir.name, "preprocess: removing a half-made set"
        )
        dataset = build_dataset(squad_json, vocab_path, settings, progress=progress)
        save_dataset(dataset, output_dir)
        return SquadPreprocessReport(
            output_dir,
            len(dataset.examples),
            len(dataset.features),
            made=True,
            seconds=time.monotonic() - started,
        )

    return build_once(output_dir, "preprocessing SQuAD", find, make)


def save_dataset(dataset: SquadDataset, output_dir: Path) -> None:
    """Write the set to a staging directory beside output_dir, then rename it into place (replacing
    what was there). Callers that share the directory hold its lock (preprocess_squad does)."""
    check_directory_path(output_dir, "the preprocessed SQuAD directory")
    parent = output_dir.parent
    staging = staging_directory(parent, f".{output_dir.name}.")
    try:
        content = staging / "new"
        with writing(content):
            content.mkdir()
            files = _write_files(dataset, content)
            manifest = {
                "manifest_version": MANIFEST_VERSION,
                "made_from": _made_from(
                    dataset.settings, dataset.vocab.sha256, dataset.source_sha256
                ),
                "examples": len(dataset.examples),
                "paragraphs": len({example.paragraph_index for example in dataset.examples}),
                "features": len(dataset.features),
                "full_squad_dev_set": dataset.is_full_dev_set,
                "files": files,
            }
            finish_set(content, manifest, output_dir, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_preprocessed(
    directory: Path,
    *,
    vocab_path: Path | None = None,
    squad_json: Path | None = None,
    settings: FeatureSettings | None = None,
) -> SquadDataset:
    """The set in directory, checked whole; and, for each of vocab_path, squad_json and settings
    given, checked to be made from it."""
    manifest = _read_manifest(directory)
    vocab_sha256 = None if vocab_path is None else _digest(vocab_path, "vocabulary")
    source_sha256 = None if squad_json is None else _digest(squad_json, "SQuAD file")
    _check_made_from(
        directory,
        manifest,
        # Not the tokenizers version: a set is what its files say, whichever library made it.
        preprocessing=PREPROCESSING_VERSION,
        settings=None if settings is None else settings.to_json(),
        vocab_sha256=vocab_sha256,
        source_sha256=source_sha256,
    )
    _check_files(directory, manifest)
    try:
        arrays = {name: np.load(directory / f"{name}.npy", allow_pickle=False) for name in _ARRAYS}
        copy = parse_vocab((directory / VOCAB_NAME).read_bytes(), str(directory / VOCAB_NAME))
        vocab = Vocabulary(copy.tokens, copy.ids, str(manifest["made_from"]["vocab_sha256"]))
        examples = _examples_from_json(json.loads((directory / EXAMPLES_NAME).read_bytes()))
        settings = FeatureSettings(**manifest["made_from"]["settings"])
        source = str(manifest["made_from"]["source_sha256"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise _damaged(directory, f"{type(error).__name__}: {error}") from error
    features = SquadFeatures(**arrays)
    if len(examples) != manifest["examples"] or len(features) != manifest["features"]:
        raise _damaged(directory, "its counts differ from the manifest's")
    if len(features) and not 0 <= int(features.example_index.max()) < len(examples):
        raise _damaged(directory, "a feature names a question that is not there")
    return SquadDataset(examples, features, vocab, settings, source)


# --- files ------------------------------------------------------------------------------------


def _write_files(dataset: SquadDataset, directory: Path) -> dict[str, Any]:
    """Write every file but the manifest; what the manifest records of each."""
    features = dataset.features
    for name in _ARRAYS:
        np.save(directory / f"{name}.npy", getattr(features, name), allow_pickle=False)
    (directory / EXAMPLES_NAME).write_text(json.dumps(_examples_to_json(dataset.examples)))
    (directory / VOCAB_NAME).write_bytes(_vocab_bytes(dataset.vocab))
    files: dict[str, Any] = {}
    for name, with_sequence in _ARRAYS.items():
        array: npt.NDArray[Any] = getattr(features, name)
        expected = [len(features), features.max_seq_length] if with_sequence else [len(features)]
        if list(array.shape) != expected:
            raise AssertionError(f"feature array {name} is {array.shape}, not {expected}")
        files[f"{name}.npy"] = {"dtype": str(array.dtype), "shape": expected}
    for name in (*files, EXAMPLES_NAME, VOCAB_NAME):
        path = directory / name
        files.setdefault(name, {}).update(bytes=path.stat().st_size, sha256=file_sha256(path))
    return files


def _vocab_bytes(vocab: Vocabulary) -> bytes:
    """The vocabulary as a vocab.txt that reads back the same tokens (the original's bytes may
    differ: "\r\n" line ends, no final newline); the manifest keeps the original's digest."""
    return "".join(token + "\n" for token in vocab.tokens).encode()


def _examples_to_json(examples: list[SquadExample]) -> dict[str, Any]:
    paragraphs: dict[int, tuple[str, ...]] = {}
    for example in examples:
        paragraphs.setdefault(example.paragraph_index, example.doc_tokens)
    order = {index: position for position, index in enumerate(paragraphs)}
    return {
        "paragraphs": [list(words) for words in paragraphs.values()],
        "questions": [
            {
                "id": example.qas_id,
                "question": example.question_text,
                "paragraph": order[example.paragraph_index],
                "answers": [[answer.text, answer.answer_start] for answer in example.answers],
            }
            for example in examples
        ],
    }


def _examples_from_json(document: Any) -> list[SquadExample]:
    paragraphs = [tuple(str(word) for word in words) for words in document["paragraphs"]]
    return [
        SquadExample(
            qas_id=str(question["id"]),
            question_text=str(question["question"]),
            doc_tokens=paragraphs[question["paragraph"]],
            answers=tuple(Answer(str(text), int(start)) for text, start in question["answers"]),
            paragraph_index=int(question["paragraph"]),
        )
        for question in document["questions"]
    ]


# --- checks -----------------------------------------------------------------------------------


def _made_from(settings: FeatureSettings, vocab_sha256: str, source_sha256: str) -> dict[str, Any]:
    return {
        "preprocessing": PREPROCESSING_VERSION,
        "tokenizers": tokenizers.__version__,
        "settings": settings.to_json(),
        "vocab_sha256": vocab_sha256,
        "source_sha256": source_sha256,
    }


# How an error line names each input a set is made from.
_MADE_FROM_WORDS = {
    "preprocessing": "by preprocessing",
    "tokenizers": "with tokenizers",
    "settings": "with settings",
    "vocab_sha256": "from a vocabulary of sha256",
    "source_sha256": "from a SQuAD file of sha256",
}


def _read_manifest(directory: Path) -> dict[str, Any]:
    keys = ("made_from", "files", "examples", "features")
    return read_manifest(directory, "preprocessed SQuAD data", MANIFEST_VERSION, keys, _damaged)


def _check_made_from(directory: Path, manifest: dict[str, Any], **wanted: Any) -> None:
    """Refuse a set made by other code or from other inputs than those given (None: any)."""
    made_from = manifest["made_from"]
    if not isinstance(made_from, dict):
        raise _damaged(directory, f"{MANIFEST_NAME} does not say what the set was made from")
    for key, value in wanted.items():
        if value is not None and made_from.get(key) != value:
            raise HarnessError(
                f"preprocessed SQuAD data {directory} was made {_MADE_FROM_WORDS[key]} "
                f"{_short(made_from.get(key))}, not {_short(value)}; preprocess it again"
            )


def _check_files(directory: Path, manifest: dict[str, Any]) -> None:
    """Every file the manifest lists, whole: its size, then its sha256."""
    expected = {f"{name}.npy" for name in _ARRAYS} | {EXAMPLES_NAME, VOCAB_NAME}
    check_files(directory, manifest, expected, _damaged)


def _damaged(directory: Path, what: str) -> HarnessError:
    return HarnessError(
        f"preprocessed SQuAD data {directory} is incomplete or damaged: {what}; preprocess it again"
    )


def _short(value: Any) -> str:
    """A value for an error line: digests cut to 12 characters."""
    text = json.dumps(value) if not isinstance(value, str) else value
    return f"{text[:12]}..." if isinstance(value, str) and len(value) == 64 else text


def _digest(path: Path, what: str) -> str:
    try:
        return file_sha256(path)
    except OSError as error:
        raise HarnessError(f"cannot read {what} {path}: {error.strerror or error}") from error
