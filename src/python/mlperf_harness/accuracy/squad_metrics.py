"""Exact match and F1 as SQuAD v1.1's official `evaluate-v1.1.py` defines them.

Both compare normalized answers: lower case, ASCII punctuation removed, the articles a/an/the
removed, whitespace collapsed. A question scores its best over its reference answers; a question
without a prediction scores 0. The sums run in question order and are scaled as the script does,
so that the printed figures are the same to the last digit.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mlperf_harness.datasets.squad.examples import SquadExample
from mlperf_harness.errors import HarnessError

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@dataclass(frozen=True)
class SquadScores:
    exact_match: float  # percent
    f1: float  # percent


def normalize_answer(text: str) -> str:
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction: str, truth: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(truth)


def f1_score(prediction: str, truth: str) -> float:
    """Harmonic mean of token precision and recall (tokens counted with multiplicity)."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(truth).split()
    shared = sum((Counter(predicted) & Counter(expected)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(predicted)
    recall = shared / len(expected)
    return (2 * precision * recall) / (precision + recall)


def score_predictions(
    examples: Sequence[SquadExample], predictions: Mapping[str, str]
) -> SquadScores:
    """Every example is a question of the data set, in file order; predictions by question id."""
    if not examples:
        raise HarnessError("no questions to score")
    exact = 0
    f1 = 0.0
    for example in examples:
        prediction = predictions.get(example.qas_id)
        if prediction is None:
            continue
        truths = [answer.text for answer in example.answers]
        exact += max(exact_match_score(prediction, truth) for truth in truths)
        f1 += max(f1_score(prediction, truth) for truth in truths)
    return SquadScores(exact_match=100.0 * exact / len(examples), f1=100.0 * f1 / len(examples))
