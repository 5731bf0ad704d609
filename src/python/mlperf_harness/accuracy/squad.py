"""SQuAD v1.1 exact match and F1 of a BERT run, from LoadGen's accuracy log.

The rules of MLCommons' `accuracy-squad.py`, whose printed line this prints:

- each response is one feature's logits (`qsl_idx` = feature index), [tokens, 2] with the start
  and end logit of each token side by side, float32 or float16 (`output_dtype`); it may cover only
  the feature's first tokens (a SUT that returns only real tokens), and a token it does not cover
  can be neither start nor end. A feature logged more than once counts once, with its last
  response (the reference keeps the last one it reads);
- per question, over its features that have a response: the 20 best start and 20 best end tokens
  of each (ties to the earlier token); a span counts if both ends are paragraph tokens, it starts
  where its feature gives the start token the most context, and it is 1 to 30 tokens long; the
  best span has the largest start + end logit (on a tie: the earlier feature, then the start
  ranked first, then the end ranked first);
- its text: the span's tokens joined, lined up with the paragraph words they came from
  (datasets.squad.answer_text); a question with no valid span (none of its features logged) is
  answered "empty", as the reference answers it;
- exact match and F1 over every question of the set (accuracy.squad_metrics).

The reference pads a short response with -10000 logits instead of excluding the missing tokens;
the two can differ only where a logit is -10000 or less, or a response is shorter than 20 tokens
and shorter than its feature's real tokens.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.squad_metrics import score_predictions
from mlperf_harness.atomic import write_bytes_atomic, write_text_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.datasets.squad.answer_text import final_text, wordpiece_text
from mlperf_harness.datasets.squad.store import SquadDataset, build_dataset, load_preprocessed
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.run_files import ACCURACY_TXT

OUTPUT_DTYPES: Mapping[str, type[np.floating[Any]]] = {
    "float32": np.float32,
    "float16": np.float16,
}
N_BEST_SIZE = 20  # start and end candidates per feature
MAX_ANSWER_LENGTH = 30  # tokens
NO_ANSWER = "empty"  # the reference's text for a question with no valid span
# MLPerf's FP32 reference F1 for BERT-Large on SQuAD v1.1 dev; targets are 99% and 99.9% of it.
REFERENCE_F1 = 90.874


@dataclass(frozen=True)
class SquadAccuracy:
    exact_match: float  # percent
    f1: float  # percent
    questions: int
    answered: int  # questions with at least one feature in the log

    def line(self) -> str:
        """The line MLCommons' script prints (evaluate-v1.1.py's), character for character."""
        return json.dumps({"exact_match": self.exact_match, "f1": self.f1})

    def meets(self, fraction: float) -> bool:
        return self.f1 >= REFERENCE_F1 * fraction


@dataclass(frozen=True)
class _Span:
    score: float  # start logit + end logit
    feature: int
    start: int  # token positions in the feature
    end: int


def read_logits(
    accuracy_log: Path, feature_count: int, max_seq_length: int, output_dtype: str = "float32"
) -> dict[int, npt.NDArray[np.float64]]:
    """Each logged feature's logits, [tokens, 2] (start, end) as float64, by feature index."""
    dtype = _dtype(output_dtype)
    logits: dict[int, npt.NDArray[np.float64]] = {}
    pair_bytes = 2 * dtype.itemsize
    for number, response in enumerate(read_accuracy_log(accuracy_log)):
        index, data = response.qsl_idx, response.data
        where = f"{accuracy_log}: response {number}"
        if not 0 <= index < feature_count:
            raise HarnessError(
                f"{where} has qsl_idx {index}, outside the {feature_count} features of the data "
                "set (a log of another data set?)"
            )
        where += f" (qsl_idx {index})"
        tokens = len(data) // pair_bytes
        if not data or len(data) % pair_bytes or tokens > max_seq_length:
            raise HarnessError(
                f"{where} holds {len(data)} bytes, not the {output_dtype} start and end logits of "
                f"1 to {max_seq_length} tokens (is --output_dtype right?)"
            )
        logits[index] = np.frombuffer(data, dtype).reshape(tokens, 2).astype(np.float64)
    return logits


def predict_answers(
    dataset: SquadDataset,
    logits: Mapping[int, npt.NDArray[np.float64]],
    *,
    n_best_size: int = N_BEST_SIZE,
    max_answer_length: int = MAX_ANSWER_LENGTH,
) -> dict[str, str]:
    """Each question's answer text by question id, in question order."""
    features = dataset.features
    predictions: dict[str, str] = {}
    for example, feature_indices in zip(
        dataset.examples, features.by_example(len(dataset.examples)), strict=True
    ):
        best: _Span | None = None
        for feature in feature_indices:
            if feature not in logits:
                continue
            span = _best_span(dataset, feature, logits[feature], n_best_size, max_answer_length)
            if span is not None and (best is None or span.score > best.score):
                best = span
        if best is None:
            predictions[example.qas_id] = NO_ANSWER
            continue
        ids = features.input_ids[best.feature, best.start : best.end + 1].tolist()
        first_word = int(features.token_to_orig[best.feature, best.start])
        last_word = int(features.token_to_orig[best.feature, best.end])
        predictions[example.qas_id] = final_text(
            wordpiece_text([dataset.vocab.tokens[i] for i in ids]),
            " ".join(example.doc_tokens[first_word : last_word + 1]),
        )
    return predictions


def score_accuracy_log(
    accuracy_log: Path,
    dataset: SquadDataset,
    output_dtype: str = "float32",
    predictions_file: Path | None = None,
) -> SquadAccuracy:
    """Exact match and F1 of the logged responses; their predictions written if asked."""
    features = dataset.features
    logits = read_logits(accuracy_log, len(features), features.max_seq_length, output_dtype)
    predictions = predict_answers(dataset, logits)
    if predictions_file is not None:
        # The reference's layout (json.dumps with indent 4), so that the files compare.
        write_text_atomic(predictions_file, json.dumps(predictions, indent=4) + "\n")
    scores = score_predictions(dataset.examples, predictions)
    logged_examples = {int(features.example_index[index]) for index in logits}
    return SquadAccuracy(
        exact_match=scores.exact_match,
        f1=scores.f1,
        questions=len(dataset.examples),
        answered=len(logged_examples),
    )


def write_accuracy_txt(log_dir: Path, accuracy: SquadAccuracy) -> Path:
    path = log_dir / ACCURACY_TXT
    write_bytes_atomic(path, (accuracy.line() + "\n").encode())
    return path


def _best_span(
    dataset: SquadDataset,
    feature: int,
    logits: npt.NDArray[np.float64],
    n_best_size: int,
    max_answer_length: int,
) -> _Span | None:
    """The feature's best valid span; the first of equal scores in the reference's order."""
    token_to_orig = dataset.features.token_to_orig[feature].tolist()
    max_context = dataset.features.max_context[feature].tolist()
    start_logits = logits[:, 0].tolist()
    end_logits = logits[:, 1].tolist()
    ends = _best_indexes(logits[:, 1], n_best_size)
    best: _Span | None = None
    for start in _best_indexes(logits[:, 0], n_best_size):
        if token_to_orig[start] < 0 or not max_context[start]:
            continue
        for end in ends:
            if token_to_orig[end] < 0 or not start <= end < start + max_answer_length:
                continue
            score = start_logits[start] + end_logits[end]
            if best is None or score > best.score:
                best = _Span(score, feature, start, end)
    return best


def _best_indexes(values: npt.NDArray[np.float64], count: int) -> list[int]:
    """Positions of the `count` largest values, largest first, ties to the earlier position."""
    order: list[int] = np.argsort(-values, kind="stable")[:count].tolist()
    return order


def _dtype(output_dtype: str) -> np.dtype[Any]:
    if output_dtype not in OUTPUT_DTYPES:
        raise HarnessError(
            f"output dtype {output_dtype!r} is not one of {', '.join(OUTPUT_DTYPES)}"
        )
    return np.dtype(OUTPUT_DTYPES[output_dtype])


def main(argv: Sequence[str] | None = None) -> int:
    """SQuAD v1.1 exact match and F1 of a BERT accuracy run's mlperf_log_accuracy.json."""
    parser = OneLineParser(prog="accuracy_squad", description=main.__doc__)
    parser.add_argument("--mlperf_accuracy_file", type=Path, required=True)
    parser.add_argument("--squad_json", type=Path, help="dev-v1.1.json (needs --vocab)")
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        help="the run's preprocessed SQuAD set (checked against --squad_json and --vocab if given)",
    )
    parser.add_argument("--vocab", type=Path, help="BERT's vocab.txt")
    parser.add_argument("--output_dtype", choices=list(OUTPUT_DTYPES), default="float32")
    parser.add_argument("--out_file", type=Path, help="write the predictions here (JSON)")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        if args.preprocessed_dir is not None:
            dataset = load_preprocessed(
                args.preprocessed_dir, vocab_path=args.vocab, squad_json=args.squad_json
            )
        elif args.squad_json is not None and args.vocab is not None:
            dataset = build_dataset(args.squad_json, args.vocab)
        else:
            parser.error("give --preprocessed_dir, or --squad_json with --vocab")
        accuracy = score_accuracy_log(
            args.mlperf_accuracy_file, dataset, args.output_dtype, args.out_file
        )
        if accuracy.answered < accuracy.questions:
            print(
                f"accuracy_squad: {accuracy.questions - accuracy.answered} of "
                f"{accuracy.questions} questions have no response in the log and score 0",
                file=sys.stderr,
            )
        print(accuracy.line())
        return 0

    return run_entry_point(parser.prog, run)


if __name__ == "__main__":
    raise SystemExit(main())
