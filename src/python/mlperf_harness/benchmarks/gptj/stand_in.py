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

from mlperf_harness.accuracy.punkt_tab import write_punkt_tab
from mlperf_harness.accuracy.rouge import RougeTarget, SentenceSplitter
from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.benchmarks.gptj.build_stand_in_model import build_and_measure, held_out_samples
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape
from mlperf_harness.datasets.cnn_dailymail.samples import write_dataset
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.stand_in_files import ensure_built, stand_in_main

SEED = 0
TRAIN_COUNT = 150
HELD_OUT_COUNT = 60  # the run's data set: every sample is scored in an accuracy run
MODEL_FILE_NAME = "gptj_stand_in.onnx"
DATA_FILE_NAME = "cnn_eval.json"  # the reference's name, its layout
TOKENIZER_DIR = "tokenizer"
NLTK_DATA_DIR = "nltk_data"
RECORD_FILE_NAME = "stand_in.json"
REQUIRED_ROUGE1 = 50.0  # held-out ROUGE-1 the build must reach (noise scores ~2), or it is a bug
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


@dataclass(frozen=True)
class BuiltStandIn:
    model: Path
    tokenizer_dir: Path
    data: Path
    nltk_data: Path
    record: StandInRecord
    record_path: Path


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
    model_path = work_dir / MODEL_FILE_NAME
    record_path = work_dir / RECORD_FILE_NAME

    def built(record: StandInRecord) -> BuiltStandIn:
        return BuiltStandIn(
            model_path,
            work_dir / TOKENIZER_DIR,
            work_dir / DATA_FILE_NAME,
            work_dir / NLTK_DATA_DIR,
            record,
            record_path,
        )

    record = ensure_built(
        work_dir,
        model_path,
        [work_dir / DATA_FILE_NAME],
        StandInRecord,
        record_path,
        ACTIVITY,
        "gptj: no model given; building the stand-in (generated news articles, a tokenizer and a "
        f"small GPT-J fitted to summarise them, about a minute) in {work_dir}",
        lambda: _build(work_dir, model_path),
    )
    return built(record)


def _build(work_dir: Path, model_path: Path) -> StandInRecord:
    nltk_data = work_dir / NLTK_DATA_DIR
    write_punkt_tab(nltk_data)
    splitter = SentenceSplitter(nltk_data)
    stand_in, held_out, _tokenizer = build_and_measure(
        splitter, TRAIN_COUNT, HELD_OUT_COUNT, SEED, tokenizer_dir=work_dir / TOKENIZER_DIR
    )
    scores = held_out.scores
    if scores.rouge1 < REQUIRED_ROUGE1:
        raise HarnessError(
            f"the GPT-J stand-in reached only ROUGE-1 {scores.rouge1:.2f} on held-out articles "
            f"(needs {REQUIRED_ROUGE1}); report this as a bug"
        )
    write_dataset(work_dir / DATA_FILE_NAME, held_out_samples(HELD_OUT_COUNT))
    write_bytes_atomic(model_path, stand_in.serialized())
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
    return stand_in_main(argv, "GPT-J", ensure_stand_in)


if __name__ == "__main__":
    sys.exit(main())
