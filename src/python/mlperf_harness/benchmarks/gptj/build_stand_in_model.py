"""Build the GPT-J stand-in: a tokenizer trained on generated articles, the copy recipe's weights
(`copy_fit`) fitted on training pairs, the ONNX graph with its KV cache, and held-out ROUGE
measured by decoding with ONNX Runtime, next to a baseline that emits noise.

Training and held-out samples come from different seeds of the generated set, so no held-out
article was seen by the tokenizer or the fits. The build is deterministic for a seed: NumPy's
seeded generator, float64 fits in a fixed order, single-threaded ONNX Runtime with deterministic
compute for the measurement.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from mlperf_harness.accuracy.rouge import RougeScores, SentenceSplitter, score_texts
from mlperf_harness.benchmarks.gptj.copy_fit import CopyModelBuilder
from mlperf_harness.benchmarks.gptj.decoding import gptj_config, step_engine
from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, gptj_model
from mlperf_harness.datasets.cnn_dailymail.samples import SummarySample
from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_samples
from mlperf_harness.datasets.cnn_dailymail.tokenizer import BpeTokenizer, train_tokenizer
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.copy_build import build_copy_stand_in
from mlperf_harness.generation.copy_recipe import CopyStandIn, SpecialTokens, TrainingSequence
from mlperf_harness.generation.copy_recipe import training_sequence as copy_training_sequence
from mlperf_harness.generation.scheduler import generate

VOCAB_SIZE = 2048
TRAIN_SEED, HELD_OUT_SEED = 0, 1  # generated sets: training pairs, and articles never seen
HELD_OUT_SLOTS = 8  # samples decoded together while measuring the held-out ROUGE


def stand_in_shape(vocab_size: int) -> GptjShape:
    """2 blocks, hidden 384, 4 heads of 96, rotary on 24 dims of each (GPT-J's quarter: 64 of 256),
    MLP 4 x hidden; the vocabulary is the generated tokenizer's."""
    return GptjShape(
        layers=2, hidden=384, heads=4, rotary_dim=24, vocab_size=vocab_size, inner=1536
    )


def response_text(sample: SummarySample) -> str:
    """The summary as the model writes it: a space before each line's first word, so that the
    word is the same BPE token as in the article (ROUGE ignores the spaces)."""
    return " " + sample.summary.replace("\n", "\n ")


def special_tokens(tokenizer: BpeTokenizer) -> SpecialTokens:
    def one(text: str) -> int:
        ids = tokenizer.encode(text)
        if len(ids) != 1:
            raise HarnessError(
                f"tokenizer {tokenizer.source} splits {text!r} into {len(ids)} tokens"
            )
        return ids[0]

    return SpecialTokens(
        eos=tokenizer.eos_id,
        newline=one("\n"),
        line_end=one(" ."),
        anchor=one(" Response"),
        colon=one(":"),
        dash=one(" --"),
        before_dash=one(")"),
        period=one("."),
    )


def training_sequence(
    sample: SummarySample, tokenizer: BpeTokenizer, special: SpecialTokens
) -> TrainingSequence:
    lines = [
        tokenizer.encode(" " + line.removesuffix(" .")) for line in sample.summary.split("\n")[1:]
    ]
    return copy_training_sequence(
        tokenizer.encode(sample.prompt()),
        [*tokenizer.encode(response_text(sample)), tokenizer.eos_id],
        special.newline,
        lines,
    )


@dataclass(frozen=True)
class HeldOut:
    scores: RougeScores  # the stand-in, beam search 4
    greedy_scores: RougeScores
    noise_scores: RougeScores  # random tokens of the same lengths
    mean_new_tokens: float
    min_new_tokens: int
    max_new_tokens: int


StandInGptj = CopyStandIn[GptjShape]


def build_stand_in_gptj(
    train: Sequence[SummarySample], tokenizer: BpeTokenizer, seed: int = 0
) -> StandInGptj:
    started = time.perf_counter()
    special = special_tokens(tokenizer)
    sequences = [training_sequence(sample, tokenizer, special) for sample in train]
    builder = CopyModelBuilder(stand_in_shape(tokenizer.vocab_size), special, seed)
    doc = (
        "NOT the official MLPerf GPT-J 6B: a small deterministic stand-in with its architecture "
        f"(seed {seed}) that summarises the generated articles by copying; no valid MLPerf result."
    )
    return build_copy_stand_in(builder, sequences, seed, doc, gptj_model, started)


def measure_held_out(
    stand_in: StandInGptj,
    tokenizer: BpeTokenizer,
    samples: Sequence[SummarySample],
    splitter: SentenceSplitter,
    config: GenerationConfig | None = None,
) -> HeldOut:
    config = config or gptj_config(tokenizer.eos_id)
    session = OrtGptj(stand_in.serialized(), stand_in.shape, threads=1)
    prompts = [np.array(tokenizer.encode(sample.prompt()), np.int64) for sample in samples]
    longest = max(prompt.size for prompt in prompts)
    greedy_config = replace(config, num_beams=1)
    beams = generate(step_engine(session, config, longest, HELD_OUT_SLOTS), prompts, config)
    greedies = generate(
        step_engine(session, greedy_config, longest, HELD_OUT_SLOTS), prompts, greedy_config
    )
    references = [sample.summary for sample in samples]
    rng = random.Random(f"gptj-noise:{stand_in.seed}")
    noise = [[rng.randrange(tokenizer.vocab_size - 1) for _ in out] for out in beams]
    lengths = [len(out) for out in beams]

    def score(outputs: list[list[int]]) -> RougeScores:
        return score_texts([tokenizer.decode(out) for out in outputs], references, splitter)

    return HeldOut(
        score(beams),
        score(greedies),
        score(noise),
        float(np.mean(lengths)),
        min(lengths),
        max(lengths),
    )


def build_and_measure(
    splitter: SentenceSplitter,
    train_count: int = 150,
    held_out_count: int = 60,
    seed: int = 0,
    tokenizer_dir: Path | None = None,
) -> tuple[StandInGptj, HeldOut, BpeTokenizer]:
    """The whole recipe at its default size: what the stand-in, the slow test and the docs'
    figures run. The tokenizer's files are written to `tokenizer_dir` (None: a temporary one)."""
    train = generate_samples(train_count, seed=TRAIN_SEED)
    texts = [s.prompt() for s in train] + [response_text(s) for s in train]
    if tokenizer_dir is None:
        with tempfile.TemporaryDirectory() as directory:
            tokenizer = train_tokenizer(texts, Path(directory), vocab_size=VOCAB_SIZE)
    else:
        tokenizer_dir.mkdir(parents=True, exist_ok=True)
        tokenizer = train_tokenizer(texts, tokenizer_dir, vocab_size=VOCAB_SIZE)
    stand_in = build_stand_in_gptj(train, tokenizer, seed)
    held_out = measure_held_out(stand_in, tokenizer, held_out_samples(held_out_count), splitter)
    return stand_in, held_out, tokenizer


def held_out_samples(count: int) -> list[SummarySample]:
    """Generated articles the build never saw: its held-out ROUGE's, and the stand-in's data set."""
    return generate_samples(count, seed=HELD_OUT_SEED)
