"""BERT's embedded default: generated questions and vocabulary, and a small BERT of the official
interface whose span head is fitted on the generated training questions, built once per scratch
path (about a minute on a 2-core CPU) and kept with a record of its held-out F1.

`pants run benchmarks/bert:stand_in` builds it on its own and prints what it measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx

from mlperf_harness.accuracy.squad import predict_answers
from mlperf_harness.accuracy.squad_metrics import score_predictions
from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.benchmarks.bert import stand_in_data
from mlperf_harness.benchmarks.bert.build_stand_in_model import build_stand_in_bert
from mlperf_harness.benchmarks.bert.span_head import SpanFeatures, span_logits
from mlperf_harness.benchmarks.bert.stand_in_model import SHAPES
from mlperf_harness.benchmarks.stand_in_cli import run_stand_in, stand_in_parser
from mlperf_harness.datasets.squad.features import SquadFeatures
from mlperf_harness.datasets.squad.store import SquadDataset, build_dataset
from mlperf_harness.datasets.squad.tokenizer import BertWordPiece
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256
from mlperf_harness.records import read_record
from mlperf_harness.scratch_lock import build_once

SEED = 0
SHAPE = "tiny"  # 2 layers x 128 hidden: ~6-20 ms a sequence for ONNX Runtime on a 2-core CPU
MODEL_FILE_NAME = "bert_stand_in.onnx"
RECORD_FILE_NAME = "stand_in.json"
REQUIRED_F1 = 95.0  # held-out F1 the build must reach, or it is a bug
ACTIVITY = "building the BERT stand-in"  # what a run waiting for its lock is told
# Written into the model's metadata, so that a stand-in is known as one wherever it is copied.
STAND_IN_MARK = "mlperf_harness.span_head_answers"


@dataclass(frozen=True)
class StandInRecord:
    """What a build measured, kept beside the model so that later runs need not rebuild."""

    sha256: str
    seed: int
    shape: str
    heldout_f1: float
    heldout_exact_match: float
    heldout_questions: int
    build_seconds: float


@dataclass(frozen=True)
class BuiltStandIn:
    model: Path
    vocab: Path
    dev_json: Path
    train_json: Path  # the questions its span head was fitted on (int8 calibrates on them)
    record: StandInRecord


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "bert" / f"{SHAPE}-seed{SEED}"


def is_stand_in_model(model: onnx.ModelProto) -> bool:
    """A model this module built (its metadata says so), wherever it was copied to."""
    return any(entry.key == STAND_IN_MARK for entry in model.metadata_props)


def ensure_stand_in(scratch: Path) -> BuiltStandIn:
    """The stand-in's files, built when absent. Runs sharing the scratch build it once: the others
    wait for that build and use it."""
    work_dir = stand_in_dir(scratch)
    files = stand_in_data.StandInDataFiles(
        vocab=work_dir / stand_in_data.VOCAB_FILE_NAME,
        train=work_dir / stand_in_data.SPLIT_FILE_NAMES["train"],
        dev=work_dir / stand_in_data.SPLIT_FILE_NAMES["dev"],
    )
    model_path = work_dir / MODEL_FILE_NAME
    record_path = work_dir / RECORD_FILE_NAME

    def built(record: StandInRecord) -> BuiltStandIn:
        return BuiltStandIn(model_path, files.vocab, files.dev, files.train, record)

    def find() -> BuiltStandIn | None:
        present = all(path.is_file() for path in (model_path, files.vocab, files.dev, files.train))
        record = read_record(StandInRecord, record_path) if present else None
        if record is not None and record.sha256 == file_sha256(model_path):
            return built(record)
        return None

    def build() -> BuiltStandIn:
        remove_stale_temporaries([work_dir])
        print(
            "bert: no model given; building the stand-in (generated SQuAD questions and a "
            f"{SHAPE} BERT fitted to them, about a minute) in {work_dir}",
            file=sys.stderr,
        )
        record = _build(work_dir, model_path)
        write_json_atomic(record_path, dataclasses.asdict(record))
        return built(record)

    return build_once(work_dir, ACTIVITY, find, build)


def _build(work_dir: Path, model_path: Path) -> StandInRecord:
    files = stand_in_data.write_stand_in_data(work_dir, seed=SEED)
    vocabulary = stand_in_data.build_vocabulary(SEED)
    train = build_dataset(files.train, files.vocab)
    bert = build_stand_in_bert(
        _span_features(train), vocabulary.name_piece_ids(), SHAPES[SHAPE], SEED
    )
    write_bytes_atomic(model_path, bert.serialized())
    dev = build_dataset(files.dev, files.vocab)
    exact_match, f1 = heldout_scores(bert.serialized(), dev)
    if f1 < REQUIRED_F1:
        raise HarnessError(
            f"the BERT stand-in reached only F1 {f1:.2f} on held-out questions (needs "
            f"{REQUIRED_F1}); report this as a bug"
        )
    return StandInRecord(
        sha256=bert.sha256(),
        seed=SEED,
        shape=SHAPE,
        heldout_f1=round(f1, 3),
        heldout_exact_match=round(exact_match, 3),
        heldout_questions=len(dev.examples),
        build_seconds=round(bert.seconds, 1),
    )


def heldout_scores(model: bytes, dataset: SquadDataset) -> tuple[float, float]:
    """(exact match, F1) of the model on `dataset`, through the benchmark's own scorer."""
    features = dataset.features
    start, end = span_logits(model, _span_features(dataset, with_positions=False))
    logits = {
        index: np.stack([start[index], end[index]], axis=-1) for index in range(len(features))
    }
    scores = score_predictions(dataset.examples, predict_answers(dataset, logits))
    return scores.exact_match, scores.f1


def _span_features(dataset: SquadDataset, *, with_positions: bool = True) -> SpanFeatures:
    features = dataset.features
    starts, ends = (
        answer_positions(dataset) if with_positions else (np.zeros(len(features), np.int64),) * 2
    )
    return SpanFeatures(features.input_ids, features.input_mask, features.segment_ids, starts, ends)


def answer_positions(
    dataset: SquadDataset,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each feature's first and last answer token (0, 0 where its window lacks the answer): where
    the answer's own wordpieces stand in the window's context. The generated text holds each name
    once, so the first match is the answer; a "Zorbak." in the text gives the name's pieces
    without the full stop, as MLPerf's training conversion would."""
    features: SquadFeatures = dataset.features
    tokenizer = BertWordPiece(dataset.vocab)
    answers = [example.answers[0].text if example.answers else "" for example in dataset.examples]
    pieces_of = tokenizer.encode_texts(answers)
    starts = np.zeros(len(features), np.int64)
    ends = np.zeros(len(features), np.int64)
    for index in range(len(features)):
        pieces = pieces_of[int(features.example_index[index])]
        if not pieces:
            continue
        ids = features.input_ids[index].tolist()
        context = features.segment_ids[index] == 1
        for position in np.flatnonzero(context).tolist():
            if ids[position : position + len(pieces)] == pieces:
                starts[index], ends[index] = position, position + len(pieces) - 1
                break
    return starts, ends


def main(argv: Sequence[str] | None = None) -> int:
    def report(_args: argparse.Namespace, built: BuiltStandIn) -> None:
        print(f"model {built.model}\nvocab {built.vocab}\nquestions {built.dev_json}")

    # None: BERT's stand-in keeps no "not a valid MLPerf result" note (its record has no note field).
    return run_stand_in(stand_in_parser("BERT"), argv, ensure_stand_in, report, None)


if __name__ == "__main__":
    sys.exit(main())
