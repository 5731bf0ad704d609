"""How GPT-J's KV cache is laid out and how many slots fill a GPU: pure arithmetic, so the CPU tests
check it and the engine, the device script and the docs quote one rule.

A slot holds one sample being decoded with `beams` rows. Its prompt's keys and values are the same
for every beam (beam search forks only after the prompt), so they are stored ONCE per slot, at most
`max_prompt` tokens; what each beam generates (at most `max_new` tokens) is stored per step and
beam: column `beams * t + b` of the slot's generated region holds the token that beam b made at step
t. A beam's history is not moved when beams are reordered: an ancestry table says, per beam and
step, which column holds its token (the engine's mask), so the reorder costs a few integers instead
of copying up to 128 tokens x 28 layers of keys and values per row. One more step's columns (index
`max_new`) are scratch: slots that a decode step does not advance write there.

With GPT-J 6B in fp16 a token's keys and values over 28 layers take 458,752 bytes; a 4-beam slot
sized for CNN-DailyMail (1,919 prompt tokens, 128 new) takes 1,919 + 4 x 129 tokens = 1.12 GB, where
copying the prompt per beam would take 4 x (1,919 + 128) = 3.76 GB. The cache is in the compute
dtype: fp16 for the fp8 precision too (only the projections' weights are FP8).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape
from mlperf_harness.engines.torch_gptj.precision import FP8, compute_bytes
from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class CacheLayout:
    slots: int
    beams: int
    max_prompt: int  # prompt tokens a slot holds
    max_new: int  # generated tokens per beam

    def check(self, shape: GptjShape) -> None:
        if min(self.slots, self.beams, self.max_prompt, self.max_new) < 1:
            raise HarnessError(f"every size of the GPT-J KV cache must be at least 1, got {self}")
        if self.max_prompt + self.max_new > shape.max_positions:
            raise HarnessError(
                f"a row of {self.max_prompt} prompt + {self.max_new} new tokens exceeds GPT-J's "
                f"{shape.max_positions} positions"
            )

    @property
    def rows(self) -> int:
        return self.slots * self.beams

    @property
    def generated_columns(self) -> int:
        """Per slot: beams x (max_new + 1 scratch step)."""
        return self.beams * (self.max_new + 1)

    def tokens_per_slot(self) -> int:
        return self.max_prompt + self.generated_columns


def token_bytes(shape: GptjShape, precision: str) -> int:
    """One token's keys and values over all layers."""
    return 2 * shape.layers * shape.hidden * compute_bytes(precision)


def slot_bytes(shape: GptjShape, layout: CacheLayout, precision: str) -> int:
    return layout.tokens_per_slot() * token_bytes(shape, precision)


def weight_bytes(shape: GptjShape, precision: str) -> int:
    """The model's weights in `precision` (fp8: the projections one byte a weight plus a float32
    scale per output channel, the rest fp16)."""
    d, f, v = shape.hidden, shape.inner, shape.vocab_size
    projections, channels = 4 * d * d + 2 * d * f, 5 * d + f  # q, k, v, out, fc_in, fc_out
    rest = shape.layers * (f + d + 2 * d) + 2 * v * d + v + 2 * d
    value = compute_bytes(precision)
    if precision == FP8:
        return shape.layers * (projections + 4 * channels) + rest * value
    return (shape.layers * projections + rest) * value


def slots_to_fill(
    free_bytes: int,
    shape: GptjShape,
    beams: int,
    max_prompt: int,
    max_new: int,
    precision: str,
    reserve_bytes: int,
) -> int:
    """How many slots the cache can hold in `free_bytes` (what the GPU has free once the weights
    are in), keeping `reserve_bytes` for activations, the decode graph's buffers and the held
    logits."""
    one = slot_bytes(shape, CacheLayout(1, beams, max_prompt, max_new), precision)
    slots = (free_bytes - reserve_bytes) // one
    if slots < 1:
        raise HarnessError(
            f"the GPU has {free_bytes / 2**30:.1f} GiB free: not enough for one GPT-J slot of "
            f"{one / 2**30:.2f} GiB beside {reserve_bytes / 2**30:.1f} GiB of working memory"
        )
    return int(slots)
