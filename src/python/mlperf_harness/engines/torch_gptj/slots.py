"""The engine's host-side book of its slots: which hold a sample, how long its prompt is, how many
tokens its beams have generated, and the one int64 array a decode step uploads.

The decode step runs over every slot (fixed shapes, under a CUDA graph). A slot the step does not
advance (free, or live but not in this call) gets identity parents and step index `max_new`: it
writes its keys and values to its scratch columns and its held logits are kept. Pure NumPy: the CPU
tests check it without torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import Int64Array


class SlotBook:
    def __init__(self, slots: int, beams: int, max_prompt: int, max_new: int) -> None:
        self.slots, self.beams, self.max_prompt, self.max_new = slots, beams, max_prompt, max_new
        self.live = np.zeros(slots, bool)
        self.prompt_lengths = np.ones(slots, np.int64)  # >= 1 always: no empty attention
        self.generated = np.zeros(slots, np.int64)  # decode steps since the slot's prefill

    def check_slots(self, slots: Sequence[int], what: str, live: bool | None = None) -> None:
        if len(set(slots)) != len(slots):
            raise HarnessError(f"{what}: a slot is named twice in {list(slots)}")
        for slot in slots:
            if not 0 <= slot < self.slots:
                raise HarnessError(f"{what}: slot {slot} is not in 0..{self.slots - 1}")
            if live is not None and bool(self.live[slot]) != live:
                state = "holds no sample" if live else "still holds a sample (release it first)"
                raise HarnessError(f"{what}: slot {slot} {state}")

    def fill(self, slots: Sequence[int], lengths: Sequence[int]) -> None:
        """The slots now hold prompts of these lengths (what prefill calls once it is done)."""
        self.check_slots(slots, "prefill")
        for length in lengths:
            if not 1 <= length <= self.max_prompt:
                raise HarnessError(
                    f"prefill: a prompt of {length} tokens; this engine holds 1..{self.max_prompt}"
                )
        for slot, length in zip(slots, lengths, strict=True):
            self.live[slot] = True
            self.prompt_lengths[slot] = length
            self.generated[slot] = 0

    def step_input(
        self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array
    ) -> Int64Array:
        """[slots, 2 beams + 1] int64: per slot its tokens, its parents, and the step index its
        new tokens are written at (max_new: scratch, for the slots not advanced). Counts the
        advanced slots' step."""
        self.check_slots(slots, "advance", live=True)
        n, b = len(slots), self.beams
        if parents.shape != (n, b) or tokens.shape != (n, b):
            raise HarnessError(
                f"advance: parents {parents.shape} and tokens {tokens.shape} must both be {(n, b)}"
            )
        if n and (parents.min() < 0 or parents.max() >= b):
            raise HarnessError(f"advance: a parent outside 0..{b - 1}")
        full = [s for s in slots if self.generated[s] >= self.max_new]
        if full:
            raise HarnessError(
                f"advance: slot {full[0]} already holds {self.max_new} generated tokens per beam"
            )
        out = np.zeros((self.slots, 2 * b + 1), np.int64)
        out[:, b : 2 * b] = np.arange(b)
        out[:, 2 * b] = self.max_new
        index = np.asarray(slots, np.int64)
        out[index, :b] = tokens
        out[index, b : 2 * b] = parents
        out[index, 2 * b] = self.generated[index]
        self.generated[index] += 1
        return out

    def release(self, slots: Sequence[int]) -> None:
        self.check_slots(slots, "release")
        self.live[np.asarray(slots, np.int64)] = False

    def highest_live(self) -> int:
        """1 + the highest live slot (0 when none): how many slots a decode step must cover."""
        live = np.flatnonzero(self.live)
        return int(live[-1]) + 1 if live.size else 0
