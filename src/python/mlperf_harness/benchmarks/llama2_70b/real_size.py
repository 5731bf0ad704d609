"""Llama2-70B's real-size stand-in for GPU timing: Llama-2-70B's shape (80 layers, hidden 8192, 64
query heads sharing 8 key/value heads, vocabulary 32,000) with seeded random weights drawn on the
GPU by the torch engine (engines/torch_llama; FP8 on Hopper: about 70 GB), answering nothing.

Its samples are drawn: prompt lengths log-normal (median 160 tokens, sigma 0.9, within 16..1,024:
an assumption shaped like chat questions, not measured on MLCommons' OpenOrca set, which is not
here) and output lengths FORCED to a seeded draw, log-normal with mean about 294 tokens (the
reference's tokens per sample, 294.45) within 2..1,024, since random weights never choose EOS as
the chat model does. Every run of it says so and is marked stand-in; it has no accuracy.

    python -m mlperf_harness.benchmarks.llama2_70b.real_size --out DIR

writes the marker that --model_path DIR then names (generation/real_size.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.decoding import MAX_NEW_TOKENS
from mlperf_harness.datasets.open_orca.samples import PROMPT_MAX_TOKENS
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.real_size import marker_main
from mlperf_harness.generation.timing_workload import TimingWorkload

SAMPLES = 24_576  # the processed set's size: LoadGen's performance sample count
PROMPT_MEDIAN, PROMPT_SIGMA, PROMPT_MIN = 160.0, 0.9, 16
OUTPUT_MEAN, OUTPUT_SIGMA = 294.45, 0.8  # log-normal: mean 294.45 before clipping
OUTPUT_MIN = 2  # LoadGen needs at least 2 tokens to time the tokens after the first
FORCED_LENGTH_NOTE = (
    "output lengths forced to a seeded log-normal draw of mean about 294 tokens within 2..1024 "
    "(random weights never choose EOS)"
)


def draw_workload(samples: int, seed: int = 0) -> TimingWorkload:
    if samples < 1:
        raise HarnessError(f"a timing workload needs at least one sample, got {samples}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 70]))
    prompt = np.exp(rng.normal(np.log(PROMPT_MEDIAN), PROMPT_SIGMA, samples))
    prompt = np.clip(np.rint(prompt), PROMPT_MIN, PROMPT_MAX_TOKENS).astype(np.int64)
    median = OUTPUT_MEAN / np.exp(OUTPUT_SIGMA**2 / 2)
    output = np.exp(rng.normal(np.log(median), OUTPUT_SIGMA, samples))
    output = np.clip(np.rint(output), OUTPUT_MIN, MAX_NEW_TOKENS).astype(np.int64)
    return TimingWorkload(prompt, output, seed, FORCED_LENGTH_NOTE)


def main(argv: Sequence[str] | None = None) -> int:
    return marker_main(
        argv, __doc__.splitlines()[0], "Llama-2-70B shape, seeded random weights", SAMPLES
    )


if __name__ == "__main__":
    sys.exit(main())
