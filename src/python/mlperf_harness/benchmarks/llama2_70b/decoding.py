"""Llama2-70B's generation settings in MLCommons' reference SUT (Hugging Face `generate` with
num_beams 1, do_sample False, min_new_tokens 1, max_new_tokens 1,024: greedy; EOS ends a sample and
is kept in its output)."""

from __future__ import annotations

from mlperf_harness.generation.beams import GenerationConfig

MIN_NEW_TOKENS = 1  # EOS is never the first token: every output has at least 2 tokens with it
MAX_NEW_TOKENS = 1024


def llama2_config(eos_id: int) -> GenerationConfig:
    return GenerationConfig(eos_id, MIN_NEW_TOKENS, MAX_NEW_TOKENS, num_beams=1)
