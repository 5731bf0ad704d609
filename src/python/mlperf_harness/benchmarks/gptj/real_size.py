"""GPT-J's real-size stand-in for GPU timing: GPT-J 6B's shape with seeded random fp16 weights made
on the GPU by the torch engine, answering nothing.

Its samples are drawn, as engines/torch_gptj/timing_workload.py says: prompt lengths shaped like
CNN-DailyMail's tokenized prompts and output lengths FORCED to a seeded draw around 69 tokens
within 30..128, since random weights never choose EOS as the fine-tuned model does. Every run of it
says so and is marked stand-in. It has no accuracy: an accuracy run is refused.

It is chosen by a directory holding `real_size_stand_in.json` as --model_path, which

    python -m mlperf_harness.benchmarks.gptj.real_size --out DIR

writes (generation/real_size.py; the weights themselves are never on disk: 12 GB of random numbers
are faster to draw on the GPU than to read).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.engines.torch_gptj.timing_workload import (
    FORCED_LENGTH_NOTE,
    TimingWorkload,
    draw_workload,
)
from mlperf_harness.generation.real_size import MARKER, marker_main, read_marker

SAMPLES = 13_368  # the validation set's size: LoadGen's performance sample count
__all__ = ["MARKER", "RealSizeStandIn", "find_real_size", "main"]


@dataclass(frozen=True)
class RealSizeStandIn:
    path: Path
    samples: int
    seed: int

    def workload(self) -> TimingWorkload:
        return draw_workload(self.samples, self.seed)

    @property
    def note(self) -> str:
        return FORCED_LENGTH_NOTE


def find_real_size(model_path: Path | None) -> RealSizeStandIn | None:
    """The real-size stand-in a --model_path names, or None where it names none."""
    marker = read_marker(model_path)
    return None if marker is None else RealSizeStandIn(marker.path, marker.samples, marker.seed)


def main(argv: Sequence[str] | None = None) -> int:
    return marker_main(
        argv, __doc__.splitlines()[0], "GPT-J 6B shape, seeded random weights", SAMPLES
    )


if __name__ == "__main__":
    sys.exit(main())
