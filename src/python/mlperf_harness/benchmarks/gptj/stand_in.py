"""GPT-J's embedded default: generated news articles with reference summaries, a BPE tokenizer in
GPT-J's file layout trained on them, and a small GPT-J (2 blocks, hidden 384) fitted to summarise
them by copying, built once per scratch path (about a minute on a 2-core CPU) and kept with the
ROUGE it measured on articles it never saw. The run's data set is those held-out articles; its
sentence model (for ROUGE-Lsum) is the small Punkt model of accuracy/punkt_tab.py, written beside
them, since nltk's English model is no wheel.

`pants run benchmarks/gptj:stand_in` builds it on its own and prints what it measured.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.accuracy.rouge import RougeTarget
from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.benchmarks import rouge_stand_in
from mlperf_harness.benchmarks.gptj.build_stand_in_model import build_and_measure, held_out_samples
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape
from mlperf_harness.benchmarks.rouge_stand_in import FileNames, require_rouge1, sentence_splitter
from mlperf_harness.datasets.cnn_dailymail.samples import write_dataset

SEED = 0
TRAIN_COUNT = 150
HELD_OUT_COUNT = 60  # the run's data set: every sample is scored in an accuracy run
# The data file has the reference's name and layout.
FILES = FileNames("gptj_stand_in.onnx", data="cnn_eval.json")
RECORD_FILE_NAME = FILES.record
ACTIVITY = "building the GPT-J stand-in"


@dataclass(frozen=True)
class StandInRecord:
    """What a build measured, kept beside the model so that later runs need not rebuild."""

    sha256: str
    seed: int
    shape: str
    layers: int
    hidden: int
    heads: int
    rotary_dim: int
    vocab_size: int
    inner: int
    heldout_rouge1: float
    heldout_rouge2: float
    heldout_rougeL: float
    heldout_rougeLsum: float
    heldout_gen_len: int
    heldout_samples: int
    noise_rouge1: float  # random tokens of the same lengths: what "far above noise" is against
    mean_new_tokens: float
    build_seconds: float


BuiltStandIn = rouge_stand_in.StandInFiles[StandInRecord]


def shape_of(record: StandInRecord) -> GptjShape:
    return GptjShape(
        record.layers,
        record.hidden,
        record.heads,
        record.rotary_dim,
        record.vocab_size,
        record.inner,
    )


def reference_target(record: StandInRecord) -> RougeTarget:
    """The stand-in's own held-out figures: what its runs' 99% (99.9%) is judged against."""
    return RougeTarget(
        record.heldout_rouge1,
        record.heldout_rouge2,
        record.heldout_rougeL,
        gen_len=record.heldout_gen_len,
    )


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "gptj" / f"seed{SEED}"


def ensure_stand_in(scratch: Path) -> BuiltStandIn:
    """The stand-in's files, built when absent; runs sharing the scratch build it once."""
    work_dir = stand_in_dir(scratch)
    return rouge_stand_in.ensure_stand_in_files(
        work_dir,
        FILES,
        [FILES.data],
        StandInRecord,
        ACTIVITY,
        "gptj: no model given; building the stand-in (generated news articles, a tokenizer and a "
        f"small GPT-J fitted to summarise them, about a minute) in {work_dir}",
        lambda: _build(work_dir),
    )


def _build(work_dir: Path) -> StandInRecord:
    splitter = sentence_splitter(work_dir / FILES.nltk_data)
    stand_in, held_out, _tokenizer = build_and_measure(
        splitter, TRAIN_COUNT, HELD_OUT_COUNT, SEED, tokenizer_dir=work_dir / FILES.tokenizer_dir
    )
    scores = held_out.scores
    require_rouge1(scores.rouge1, "GPT-J", "articles")
    write_dataset(work_dir / FILES.data, held_out_samples(HELD_OUT_COUNT))
    write_bytes_atomic(work_dir / FILES.model, stand_in.serialized())
    shape = stand_in.shape
    return StandInRecord(
        sha256=stand_in.sha256(),
        seed=SEED,
        shape=f"{shape.layers} layers x {shape.hidden} hidden",
        layers=shape.layers,
        hidden=shape.hidden,
        heads=shape.heads,
        rotary_dim=shape.rotary_dim,
        vocab_size=shape.vocab_size,
        inner=shape.inner,
        heldout_rouge1=scores.rouge1,
        heldout_rouge2=scores.rouge2,
        heldout_rougeL=scores.rougeL,
        heldout_rougeLsum=scores.rougeLsum,
        heldout_gen_len=scores.gen_len,
        heldout_samples=scores.gen_num,
        noise_rouge1=held_out.noise_scores.rouge1,
        mean_new_tokens=round(held_out.mean_new_tokens, 1),
        build_seconds=round(stand_in.seconds, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    return rouge_stand_in.stand_in_main(argv, "GPT-J", ensure_stand_in)


if __name__ == "__main__":
    sys.exit(main())
