"""GPT-J's generation settings in MLCommons' reference (Hugging Face `generate` with num_beams 4,
early_stopping True, min_new_tokens 30, max_new_tokens 128) and one-prompt decoding over a step
model, for the stand-in's build and tests. Beam search itself is generation/beams.py; batches of
prompts go through generation/scheduler.generate."""

from __future__ import annotations

from dataclasses import replace

from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.engine import Int64Array
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModel, StepModelEngine

NUM_BEAMS = 4  # GPT-J's closed-division setting
MIN_NEW_TOKENS = 30
MAX_NEW_TOKENS = 128


def gptj_config(eos_id: int, num_beams: int = NUM_BEAMS) -> GenerationConfig:
    return GenerationConfig(eos_id, MIN_NEW_TOKENS, MAX_NEW_TOKENS, num_beams)


def step_engine(
    model: StepModel, config: GenerationConfig, longest_prompt: int, slots: int = 1
) -> StepModelEngine:
    return StepModelEngine(
        model,
        config.eos_id,
        slots=slots,
        beams=config.num_beams,
        max_length=longest_prompt + config.max_new_tokens,
    )


def beam_search(model: StepModel, prompt: Int64Array, config: GenerationConfig) -> list[int]:
    """One prompt's new tokens under `config` (its num_beams; 1 is greedy)."""
    return generate(step_engine(model, config, prompt.size), [prompt], config)[0]


def greedy(model: StepModel, prompt: Int64Array, config: GenerationConfig) -> list[int]:
    return beam_search(model, prompt, replace(config, num_beams=1))
