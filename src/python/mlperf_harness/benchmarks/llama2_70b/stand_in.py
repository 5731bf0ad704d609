"""Llama2-70B's embedded default: generated instruction/answer pairs in Llama 2's chat template, a
tokenizer in Llama's format trained on them, and a small Llama (2 blocks, hidden 384, 4 query heads
sharing 2 key/value heads) fitted to answer by copying, built once per scratch path (under a minute
on a 2-core CPU) and kept with the ROUGE and tokens per sample it measured on pairs it never saw.
The run's data set is those held-out pairs, in the columns of MLCommons' processed OpenOrca set;
its sentence model (for ROUGE-Lsum) is the small Punkt model of accuracy/punkt_tab.py.

`pants run benchmarks/llama2-70b:stand_in` builds it on its own and prints what it measured.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.accuracy.rouge import RougeTarget
from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.benchmarks import rouge_stand_in
from mlperf_harness.benchmarks.llama2_70b.build_stand_in_model import build_and_measure
from mlperf_harness.benchmarks.llama2_70b.copy_fit import COPY_ROPE_THETA
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape
from mlperf_harness.benchmarks.rouge_stand_in import FileNames, require_rouge1, sentence_splitter
from mlperf_harness.datasets.open_orca.samples import write_dataset

SEED = 0
TRAIN_COUNT = 150
HELD_OUT_COUNT = 60  # the run's data set: every sample is scored in an accuracy run
FILES = FileNames("llama2_stand_in.onnx", data="open_orca_stand_in.json")
RECORD_FILE_NAME = FILES.record
ACTIVITY = "building the Llama2-70B stand-in"


@dataclass(frozen=True)
class StandInRecord:
    """What a build measured, kept beside the model so that later runs need not rebuild."""

    sha256: str
    seed: int
    shape: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    inner: int
    vocab_size: int
    rope_theta: float
    heldout_rouge1: float
    heldout_rouge2: float
    heldout_rougeL: float
    heldout_rougeLsum: float
    heldout_tokens_per_sample: float
    heldout_gen_len: int
    heldout_samples: int
    noise_rouge1: float  # random tokens of the same lengths: what "far above noise" is against
    min_new_tokens: int
    max_new_tokens: int
    build_seconds: float


BuiltStandIn = rouge_stand_in.StandInFiles[StandInRecord]


def shape_of(record: StandInRecord) -> LlamaShape:
    return LlamaShape(
        record.layers,
        record.hidden,
        record.heads,
        record.kv_heads,
        record.inner,
        record.vocab_size,
        rope_theta=record.rope_theta,
        max_positions=2048,
    )


def reference_target(record: StandInRecord) -> RougeTarget:
    """The stand-in's own held-out figures: what its runs' 99.9% (99%) is judged against, and the
    tokens per sample they must stay within 10% of."""
    return RougeTarget(
        record.heldout_rouge1,
        record.heldout_rouge2,
        record.heldout_rougeL,
        tokens_per_sample=record.heldout_tokens_per_sample,
    )


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "llama2-70b" / f"seed{SEED}"


def ensure_stand_in(scratch: Path) -> BuiltStandIn:
    """The stand-in's files, built when absent; runs sharing the scratch build it once."""
    work_dir = stand_in_dir(scratch)
    return rouge_stand_in.ensure_stand_in_files(
        work_dir,
        FILES,
        [FILES.data, f"{FILES.tokenizer_dir}/tokenizer.json"],
        StandInRecord,
        ACTIVITY,
        "llama2-70b: no model given; building the stand-in (generated questions and answers, a "
        f"tokenizer and a small Llama fitted to answer them, about a minute) in {work_dir}",
        lambda: _build(work_dir),
    )


def _build(work_dir: Path) -> StandInRecord:
    stand_in, held_out, _tokenizer, samples = build_and_measure(
        sentence_splitter(work_dir / FILES.nltk_data),
        work_dir / FILES.tokenizer_dir,
        TRAIN_COUNT,
        HELD_OUT_COUNT,
        SEED,
    )
    scores = held_out.scores
    require_rouge1(scores.rouge1, "Llama2-70B", "questions")
    write_dataset(work_dir / FILES.data, samples)
    write_bytes_atomic(work_dir / FILES.model, stand_in.serialized())
    shape = stand_in.shape
    return StandInRecord(
        sha256=stand_in.sha256(),
        seed=SEED,
        shape=f"{shape.layers} layers x {shape.hidden} hidden, {shape.heads} heads / "
        f"{shape.kv_heads} KV heads",
        layers=shape.layers,
        hidden=shape.hidden,
        heads=shape.heads,
        kv_heads=shape.kv_heads,
        inner=shape.inner,
        vocab_size=shape.vocab_size,
        rope_theta=COPY_ROPE_THETA,
        heldout_rouge1=scores.rouge1,
        heldout_rouge2=scores.rouge2,
        heldout_rougeL=scores.rougeL,
        heldout_rougeLsum=scores.rougeLsum,
        heldout_tokens_per_sample=scores.tokens_per_sample,
        heldout_gen_len=scores.gen_len,
        heldout_samples=scores.gen_num,
        noise_rouge1=held_out.noise_scores.rouge1,
        min_new_tokens=held_out.min_new_tokens,
        max_new_tokens=held_out.max_new_tokens,
        build_seconds=round(stand_in.seconds, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    return rouge_stand_in.stand_in_main(argv, "Llama2-70B", ensure_stand_in)


if __name__ == "__main__":
    sys.exit(main())
