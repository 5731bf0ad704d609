"""What the ROUGE benchmarks (GPT-J, Llama2-70B) share to judge an accuracy run: the scoring of an
accuracy log with the run's tokenizer, references and sentence model, the target it is judged
against (the official figures, or a stand-in's own held-out ones), and the report: the line
MLCommons' script prints, written as accuracy.txt, and result.json's accuracy record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.accuracy.rouge import (
    Decode,
    RougeScores,
    RougeTarget,
    SentenceSplitter,
    score_accuracy_log,
)
from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.benchmarks.spec import AccuracyReport, PreparedRun
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.run_files import ACCURACY_TXT


@dataclass(frozen=True)
class Scoring:
    """What an accuracy log is scored with: the run's tokenizer, references and sentence model."""

    decode: Decode
    references: Sequence[str]
    nltk_data: Path | None
    reference: RougeTarget

    def score(self, accuracy_log: Path, dtype: str) -> RougeScores:
        return score_accuracy_log(
            accuracy_log, self.references, self.decode, SentenceSplitter(self.nltk_data), dtype
        )


def run_target(
    prepared: PreparedRun,
    official: RougeTarget,
    stand_in_target: Callable[[Path], RougeTarget | None],
) -> RougeTarget:
    """The target of a prepared run: a stand-in's own held-out figures (from the record its
    provenance names), else the official ones."""
    record = prepared.provenance.get("stand_in_record")
    if not (prepared.stand_in and record):
        return official
    target = stand_in_target(Path(record))
    if target is None:
        raise HarnessError(f"the stand-in's record {record} is gone")
    return target


def nltk_data_of(prepared: PreparedRun) -> Path | None:
    nltk_data = prepared.provenance.get("nltk_data_dir")
    return Path(nltk_data) if nltk_data else None


def accuracy_report(
    log_dir: Path,
    prepared: PreparedRun,
    scoring: Scoring,
    line: Callable[[RougeScores], str],
    default_fraction: float,
) -> AccuracyReport:
    """Score the run's accuracy log, write `line(scores)` as accuracy.txt, judge it."""
    scores = scoring.score(log_dir / ACCURACY_FILE, prepared.response_dtype or "int64")
    text = line(scores)
    write_text_atomic(log_dir / ACCURACY_TXT, text + "\n")
    fraction = prepared.accuracy_fraction or default_fraction
    reference = scoring.reference
    misses = reference.misses(scores, fraction)
    record: dict[str, Any] = {
        "rouge1": scores.rouge1,
        "rouge2": scores.rouge2,
        "rougeL": scores.rougeL,
        "rougeLsum": scores.rougeLsum,
        "gen_len": scores.gen_len,
        "gen_num": scores.gen_num,
        "gen_tok_len": scores.gen_tok_len,
        "tokens_per_sample": scores.tokens_per_sample,
        "reference": {
            "rouge1": reference.rouge1,
            "rouge2": reference.rouge2,
            "rougeL": reference.rougeL,
            "gen_len": reference.gen_len,
            "tokens_per_sample": reference.tokens_per_sample,
        },
        "target_fraction": fraction,
        "misses": misses,
        "passed": not misses,
    }
    return AccuracyReport(text, record, not misses)
