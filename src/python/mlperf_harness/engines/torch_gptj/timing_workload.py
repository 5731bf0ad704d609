"""What the real-size timing runs decode: seeded prompt lengths shaped like CNN-DailyMail's and
seeded output lengths, because a model with random weights says nothing about either.

Prompt lengths: the reference's prompts (the instruction and the article, tokenized by GPT-J's BPE,
truncated at 1,919 tokens) are not available here, so their lengths are drawn: log-normal with
median 780 tokens and sigma 0.5 (mean about 880 before truncation), truncated at 1,919 as the
reference truncates, and at least 64 (the instruction alone is about 20 tokens). What matters for
timing is the mean (attention reads every prompt token each step) and the tail (the cache must
hold 1,919): a drawn set reports both (`describe`).

Output lengths: random weights never choose EOS the way the fine-tuned model does, so each sample's
output length is forced to a seeded draw: normal around 69 tokens (the mean output LoadGen's
token_latency_scaling_factor of 69 stands for), sigma 20, within the benchmark's 30..128. The beam
search still runs every step (top-k over beams x vocab, the cache reordered); the sample is simply
complete at its drawn length. Every figure made with these lengths says so.
"""

from __future__ import annotations

import numpy as np

from mlperf_harness.benchmarks.gptj.decoding import MAX_NEW_TOKENS, MIN_NEW_TOKENS
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.timing_workload import TimingWorkload

# The reference truncates each prompt to 1,919 tokens (datasets/cnn_dailymail/tokenizer.py's
# PROMPT_MAX_TOKENS; not imported: that module needs `tokenizers`, which GPU hosts lack).
PROMPT_MAX_TOKENS = 1919
PROMPT_MEDIAN, PROMPT_SIGMA, PROMPT_MIN = 780.0, 0.5, 64
OUTPUT_MEAN, OUTPUT_SIGMA = 69.0, 20.0  # LoadGen's token_latency_scaling_factor for GPT-J: 69

FORCED_LENGTH_NOTE = (
    "output lengths forced to a seeded draw around 69 tokens within 30..128 "
    "(random weights never choose EOS)"
)


def draw_workload(samples: int, seed: int = 0) -> TimingWorkload:
    if samples < 1:
        raise HarnessError(f"a timing workload needs at least one sample, got {samples}")
    rng = np.random.default_rng(np.random.SeedSequence([seed]))
    prompt = np.exp(rng.normal(np.log(PROMPT_MEDIAN), PROMPT_SIGMA, samples))
    prompt = np.clip(np.rint(prompt), PROMPT_MIN, PROMPT_MAX_TOKENS).astype(np.int64)
    output = np.rint(rng.normal(OUTPUT_MEAN, OUTPUT_SIGMA, samples))
    output = np.clip(output, MIN_NEW_TOKENS, MAX_NEW_TOKENS).astype(np.int64)
    return TimingWorkload(prompt, output, seed, FORCED_LENGTH_NOTE)


__all__ = ["FORCED_LENGTH_NOTE", "TimingWorkload", "draw_workload"]
