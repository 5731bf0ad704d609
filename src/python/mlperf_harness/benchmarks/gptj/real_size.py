"""GPT-J's real-size stand-in for GPU timing: GPT-J 6B's shape (28 layers, hidden 4096, vocabulary
50,400) with seeded random fp16 weights made on the GPU by the torch engine, answering nothing.

Its samples are drawn, as engines/torch_gptj/timing_workload.py says: prompt lengths shaped like
CNN-DailyMail's tokenized prompts and output lengths FORCED to a seeded draw around 69 tokens
within 30..128, since random weights never choose EOS as the fine-tuned model does. Every run of it
says so and is marked stand-in. It has no accuracy: an accuracy run is refused.

It is chosen by a directory holding `real_size_stand_in.json` as --model_path, which

    python -m mlperf_harness.benchmarks.gptj.real_size --out DIR

writes (the weights themselves are never on disk: 12 GB of random numbers are faster to draw on
the GPU than to read).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.engines.torch_gptj.timing_workload import (
    FORCED_LENGTH_NOTE,
    TimingWorkload,
    draw_workload,
)
from mlperf_harness.errors import HarnessError

MARKER = "real_size_stand_in.json"
SAMPLES = 13_368  # the validation set's size: LoadGen's performance sample count
SEED = 0


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
    if model_path is None or not (model_path / MARKER).is_file():
        return None
    marker = model_path / MARKER
    try:
        entry = json.loads(marker.read_text())
        return RealSizeStandIn(marker, int(entry["samples"]), int(entry["seed"]))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{marker} is not a real-size stand-in's marker: {error}") from error


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="real_size", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the directory to write")
    parser.add_argument("--samples", type=int, default=SAMPLES)

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        if args.samples < 1:
            raise HarnessError(f"--samples must be at least 1, got {args.samples}")
        args.out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            args.out / MARKER,
            {
                "model": "GPT-J 6B shape, seeded random weights",
                "samples": args.samples,
                "seed": SEED,
            },
        )
        print(f"real-size stand-in: pass --model_path {args.out} with --backend torch")
        return 0

    return run_entry_point("real_size", run)


if __name__ == "__main__":
    sys.exit(main())
