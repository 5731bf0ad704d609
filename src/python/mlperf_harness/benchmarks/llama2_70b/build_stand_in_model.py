"""Build the Llama stand-in: a tokenizer in Llama's format trained on generated instruction/answer
pairs, the copy recipe's weights (`copy_fit`) fitted on training pairs, the ONNX graph with its KV
cache, and held-out ROUGE and tokens per sample measured by greedy decoding on ONNX Runtime, next
to a baseline that emits noise.

Training and held-out pairs come from different seeds of the generated set, so no held-out
question was seen by the tokenizer or the fits. Deterministic for a seed: NumPy's seeded
generator, fits in a fixed order, single-threaded ONNX Runtime with deterministic compute.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlperf_harness.accuracy.rouge import RougeScores, SentenceSplitter, score_texts
from mlperf_harness.benchmarks.llama2_70b.copy_fit import LlamaCopyBuilder, stand_in_shape
from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape, llama_model
from mlperf_harness.benchmarks.llama2_70b.session import ort_llama
from mlperf_harness.datasets.cnn_dailymail.tokenizer import BpeTokenizer
from mlperf_harness.datasets.open_orca.samples import OrcaSample, chat_prompt
from mlperf_harness.datasets.open_orca.synthetic import answer_text, generate_pair
from mlperf_harness.datasets.open_orca.tokenizer import (
    SPACE,
    encode_with_bos,
    train_llama_tokenizer,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.copy_build import build_copy_stand_in
from mlperf_harness.generation.copy_recipe import (
    CopyStandIn,
    SpecialTokens,
    TrainingSequence,
    training_sequence,
)
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModelEngine

VOCAB_SIZE = 2048  # asked of the trainer; the generated text gives somewhat fewer
TRAIN_SEED, HELD_OUT_SEED = 0, 1
HELD_OUT_SLOTS = 8  # samples decoded together while measuring


def _token(tokenizer: BpeTokenizer, piece: str) -> int:
    found = tokenizer.tokenizer.token_to_id(piece)
    if found is None:
        raise HarnessError(f"tokenizer {tokenizer.source} has no token {piece!r}")
    return int(found)


def special_tokens(tokenizer: BpeTokenizer) -> SpecialTokens:
    """The tokens the recipe spots, in Llama's pieces: the prompt ends "▁[/INST]" and the "▁" the
    reference appends; the article's lead follows "(CNN) --"."""
    return SpecialTokens(
        eos=tokenizer.eos_id,
        newline=_token(tokenizer, "<0x0A>"),
        line_end=_token(tokenizer, f"{SPACE}."),
        anchor=_token(tokenizer, f"{SPACE}[/INST]"),
        colon=_token(tokenizer, SPACE),
        dash=_token(tokenizer, f"{SPACE}--"),
        before_dash=_token(tokenizer, ")"),
        period=_token(tokenizer, "."),
    )


def prompt_ids(tokenizer: BpeTokenizer, text: str) -> list[int]:
    """tok_input as processorca.py makes it: the chat prompt with BOS, then "▁" appended."""
    return [*encode_with_bos(tokenizer, text), _token(tokenizer, SPACE)]


def make_samples(tokenizer: BpeTokenizer, count: int, seed: int) -> list[OrcaSample]:
    samples = []
    for index in range(count):
        system, question, output = generate_pair(seed, index)
        ids = prompt_ids(tokenizer, chat_prompt(system, question))
        samples.append(OrcaSample(system, question, output, tuple(ids)))
    return samples


def _training_sequence(
    sample: OrcaSample, tokenizer: BpeTokenizer, special: SpecialTokens
) -> TrainingSequence:
    lines = [tokenizer.encode(line.removesuffix(" .")) for line in sample.output.split("\n")[1:]]
    response = [*tokenizer.encode(answer_text(sample.output)), tokenizer.eos_id]
    return training_sequence(sample.tok_input, response, special.newline, lines)


@dataclass(frozen=True)
class HeldOut:
    scores: RougeScores  # greedy, gen_tok_len included
    noise_scores: RougeScores  # random tokens of the same lengths
    min_new_tokens: int
    max_new_tokens: int


StandInLlama = CopyStandIn[LlamaShape]


def build_stand_in_llama(
    train: Sequence[OrcaSample], tokenizer: BpeTokenizer, seed: int = 0
) -> StandInLlama:
    started = time.perf_counter()
    special = special_tokens(tokenizer)
    sequences = [_training_sequence(sample, tokenizer, special) for sample in train]
    builder = LlamaCopyBuilder(stand_in_shape(tokenizer.vocab_size), special, seed)
    doc = (
        "NOT the official MLPerf Llama-2-70b-chat: a small deterministic stand-in with its "
        f"architecture (seed {seed}) that answers generated questions by copying; no valid "
        "MLPerf result."
    )
    return build_copy_stand_in(builder, sequences, seed, doc, llama_model, started)


def measure_held_out(
    stand_in: StandInLlama,
    tokenizer: BpeTokenizer,
    samples: Sequence[OrcaSample],
    splitter: SentenceSplitter,
) -> HeldOut:
    config = llama2_config(tokenizer.eos_id)
    prompts = [np.array(sample.tok_input, np.int64) for sample in samples]
    engine = StepModelEngine(
        ort_llama(stand_in.serialized(), stand_in.shape, threads=1),
        config.eos_id,
        slots=HELD_OUT_SLOTS,
        beams=1,
        max_length=max(p.size for p in prompts) + config.max_new_tokens,
    )
    outputs = generate(engine, prompts, config)
    references = [sample.output for sample in samples]
    rng = random.Random(f"llama2-noise:{stand_in.seed}")
    noise = [[rng.randrange(3, tokenizer.vocab_size) for _ in out] for out in outputs]

    def score(outs: list[list[int]]) -> RougeScores:
        return score_texts(
            [tokenizer.decode(out) for out in outs],
            references,
            splitter,
            gen_tok_len=sum(len(out) for out in outs),
        )

    lengths = [len(out) for out in outputs]
    return HeldOut(score(outputs), score(noise), min(lengths), max(lengths))


def build_and_measure(
    splitter: SentenceSplitter,
    tokenizer_dir: Path,
    train_count: int = 150,
    held_out_count: int = 60,
    seed: int = 0,
) -> tuple[StandInLlama, HeldOut, BpeTokenizer, list[OrcaSample]]:
    """The whole recipe: the tokenizer (written to `tokenizer_dir`), the model, its held-out
    figures, and the held-out samples (the stand-in's data set)."""
    pairs = [generate_pair(TRAIN_SEED, i) for i in range(train_count)]
    texts = [chat_prompt(s, q).removeprefix("<s>") for s, q, _ in pairs]
    texts += [answer_text(answer) for _, _, answer in pairs]
    tokenizer = train_llama_tokenizer(texts, tokenizer_dir, vocab_size=VOCAB_SIZE)
    train = make_samples(tokenizer, train_count, TRAIN_SEED)
    held_out = make_samples(tokenizer, held_out_count, HELD_OUT_SEED)
    stand_in = build_stand_in_llama(train, tokenizer, seed)
    return stand_in, measure_held_out(stand_in, tokenizer, held_out, splitter), tokenizer, held_out
