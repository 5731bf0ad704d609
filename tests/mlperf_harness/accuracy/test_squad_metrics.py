"""Exact match and F1 as SQuAD v1.1's evaluate-v1.1.py defines them."""

from __future__ import annotations

import pytest

from mlperf_harness.accuracy.squad_metrics import (
    exact_match_score,
    f1_score,
    normalize_answer,
    score_predictions,
)
from mlperf_harness.datasets.squad.examples import Answer, SquadExample
from mlperf_harness.errors import HarnessError


def _example(qas_id: str, *answers: str) -> SquadExample:
    return SquadExample(qas_id, "?", ("w",), tuple(Answer(text, 0) for text in answers), 0)


def test_normalization_drops_case_punctuation_articles_and_spaces() -> None:
    assert normalize_answer("  The Quick,  brown-fox! ") == "quick brownfox"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("theory another") == "theory another"  # whole words only
    assert normalize_answer("Café «x»") == "café «x»"  # ASCII punctuation only, accents kept


def test_exact_match_and_f1() -> None:
    assert exact_match_score("the Brown Fox.", "brown fox")
    assert not exact_match_score("brown fox jumps", "brown fox")
    assert f1_score("brown fox jumps", "brown fox") == pytest.approx(0.8)  # p 2/3, r 1
    assert f1_score("quick brown", "brown fox") == 0.5
    assert f1_score("dog", "brown fox") == 0.0
    assert f1_score("fox fox", "fox") == pytest.approx(2 / 3)  # tokens count with multiplicity
    # Both empty after normalization: equal (exact match) but no shared token (F1 0).
    assert exact_match_score("the", "a") and f1_score("the", "a") == 0.0


def test_each_question_scores_its_best_answer_and_a_missing_one_zero() -> None:
    examples = [
        _example("q1", "brown fox", "fox"),
        _example("q2", "Steve Smith"),
        _example("q3", "1895"),
    ]
    scores = score_predictions(examples, {"q1": "fox", "q2": "Steve"})
    assert scores.exact_match == 100.0 / 3
    assert scores.f1 == 100.0 * (1.0 + 2 / 3) / 3
    with pytest.raises(HarnessError):
        score_predictions([], {})
