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

from mlperf_harness.accuracy.punkt_tab import write_punkt_tab
from mlperf_harness.accuracy.rouge import RougeTarget, SentenceSplitter
from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.benchmarks.llama2_70b.build_stand_in_model import build_and_measure
from mlperf_harness.benchmarks.llama2_70b.copy_fit import COPY_ROPE_THETA
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape
from mlperf_harness.datasets.open_orca.samples import write_dataset
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.stand_in_files import ensure_built, stand_in_main

SEED = 0
TRAIN_COUNT = 150
HELD_OUT_COUNT = 60  # the run's data set: every sample is scored in an accuracy run
MODEL_FILE_NAME = "llama2_stand_in.onnx"
DATA_FILE_NAME = "open_orca_stand_in.json"
TOKENIZER_DIR = "tokenizer"
NLTK_DATA_DIR = "nltk_data"
RECORD_FILE_NAME = "stand_in.json"
REQUIRED_ROUGE1 = 50.0  # held-out ROUGE-1 the build must reach (noise scores ~2), or it is a bug
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


@dataclass(frozen=True)
class BuiltStandIn:
    model: Path
    tokenizer_dir: Path
    data: Path
    nltk_data: Path
    record: StandInRecord
    record_path: Path


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
    model_path = work_dir / MODEL_FILE_NAME
    record_path = work_dir / RECORD_FILE_NAME
    record = ensure_built(
        work_dir,
        model_path,
        [work_dir / DATA_FILE_NAME, work_dir / TOKENIZER_DIR / "tokenizer.json"],
        StandInRecord,
        record_path,
        ACTIVITY,
        "llama2-70b: no model given; building the stand-in (generated questions and answers, a "
        f"tokenizer and a small Llama fitted to answer them, about a minute) in {work_dir}",
        lambda: _build(work_dir, model_path),
    )
    return BuiltStandIn(
        model_path,
        work_dir / TOKENIZER_DIR,
        work_dir / DATA_FILE_NAME,
        work_dir / NLTK_DATA_DIR,
        record,
        record_path,
    )


def _build(work_dir: Path, model_path: Path) -> StandInRecord:
    nltk_data = work_dir / NLTK_DATA_DIR
    write_punkt_tab(nltk_data)
    stand_in, held_out, _tokenizer, samples = build_and_measure(
        SentenceSplitter(nltk_data), work_dir / TOKENIZER_DIR, TRAIN_COUNT, HELD_OUT_COUNT, SEED
    )
    scores = held_out.scores
    if scores.rouge1 < REQUIRED_ROUGE1:
        raise HarnessError(
            f"the Llama2-70B stand-in reached only ROUGE-1 {scores.rouge1:.2f} on held-out "
            f"questions (needs {REQUIRED_ROUGE1}); report this as a bug"
        )
    write_dataset(work_dir / DATA_FILE_NAME, samples)
    write_bytes_atomic(model_path, stand_in.serialized())
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
    return stand_in_main(argv, "Llama2-70B", ensure_stand_in)


if __name__ == "__main__":
    sys.exit(main())
