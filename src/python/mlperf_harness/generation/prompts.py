"""A generative benchmark's samples for the harness: each sample's prompt token ids and the
generation settings it runs under (the same for all, or a forced length per sample when a model
with random weights is timed), kept as a SampleStore so that LoadGen's sample library, the engine
timing at a run's start and the accuracy check treat them as any other benchmark's samples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.engine import Int64Array
from mlperf_harness.harness.sample_store import SampleStore

PAD = -1  # after a prompt's last token in a gathered batch (no token id is negative)


@dataclass(frozen=True)
class ForcedLengths:
    """Per sample, the exact number of new tokens a timing run makes (random weights never choose
    EOS as a trained model does); `why` is said in every run that uses them."""

    lengths: npt.NDArray[np.int64]
    why: str


class PromptStore(SampleStore):
    """Prompts stay in memory whole (token ids are small: 13,368 prompts of GPT-J are ~50 MB);
    load and unload only track what LoadGen holds."""

    def __init__(
        self,
        prompts: Sequence[Int64Array],
        config: GenerationConfig,
        performance_count: int,
        forced: ForcedLengths | None = None,
    ) -> None:
        if not prompts:
            raise HarnessError("a generative benchmark needs at least one prompt")
        for index, prompt in enumerate(prompts):
            if prompt.ndim != 1 or prompt.size == 0:
                raise HarnessError(
                    f"sample {index}: an empty prompt (no token ids to generate from)"
                )
        if forced is not None and len(forced.lengths) != len(prompts):
            raise HarnessError(f"{len(forced.lengths)} forced lengths for {len(prompts)} prompts")
        self.prompts = [np.asarray(prompt, np.int64) for prompt in prompts]
        self.config = config
        self.forced = forced
        self.total_count = len(prompts)
        self.performance_count = min(performance_count, len(prompts))
        self._configs = (
            [config] * len(prompts)
            if forced is None
            else [config.forced(int(n)) for n in forced.lengths]
        )

    @property
    def longest_prompt(self) -> int:
        return max(prompt.size for prompt in self.prompts)

    def config_of(self, index: int) -> GenerationConfig:
        return self._configs[index]

    def load(self, indices: Sequence[int]) -> None:
        pass

    def unload(self, indices: Sequence[int]) -> None:
        pass

    def gather(
        self, indices: Sequence[int], out: npt.NDArray[np.generic] | None = None
    ) -> npt.NDArray[np.generic]:
        """The prompts at `indices`, one row each, PAD after each prompt's end."""
        rows = [self.prompts[index] for index in indices]
        width = max(row.size for row in rows)
        batch = np.full((len(rows), width), PAD, np.int64) if out is None else out
        for i, row in enumerate(rows):
            batch[i, : row.size] = row
            batch[i, row.size :] = PAD
        return batch

    def warmup_batch(self, batch_size: int) -> npt.NDArray[np.generic]:
        return self.gather([i % self.total_count for i in range(batch_size)])


def unpad(row: npt.NDArray[np.generic]) -> Int64Array:
    """A gathered row's prompt (PromptStore.gather)."""
    ids: Int64Array = np.asarray(row, np.int64)
    kept: Int64Array = ids[ids != PAD]
    return kept
