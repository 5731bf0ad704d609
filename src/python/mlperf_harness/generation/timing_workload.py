"""What a real-size stand-in's timing runs decode: seeded prompt lengths and FORCED output lengths,
because a model with random weights says nothing about either (it never chooses EOS as the trained
model does). Each benchmark draws its own (engines/torch_gptj/timing_workload.py,
benchmarks/llama2_70b/real_size.py); every figure made with them says so (`note`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlperf_harness.generation.engine import Int64Array


@dataclass(frozen=True)
class TimingWorkload:
    prompt_lengths: Int64Array  # [samples]
    output_lengths: Int64Array  # [samples]
    seed: int
    note: str  # how the output lengths were forced, said with every figure

    def describe(self) -> str:
        p, o = self.prompt_lengths, self.output_lengths
        return (
            f"{p.size} samples (seed {self.seed}): prompt tokens mean {p.mean():.0f}, "
            f"median {np.median(p):.0f}, max {p.max()}; output tokens mean {o.mean():.1f} "
            f"({o.min()}..{o.max()}), {self.note}"
        )

    def prompts(self, vocab_size: int) -> list[Int64Array]:
        """Token ids of the drawn lengths (seeded; what they are does not change the timing)."""
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 1]))
        return [rng.integers(0, vocab_size, int(n), dtype=np.int64) for n in self.prompt_lengths]
