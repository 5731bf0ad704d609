"""A real-size stand-in's marker: a directory holding `real_size_stand_in.json` given as
--model_path picks a benchmark's real-size stand-in (its full shape with seeded random weights
drawn on the GPU by the torch engine: the weights themselves are never on disk), with the number
of samples and the seed of its timing workload (generation/timing_workload.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.errors import HarnessError

MARKER = "real_size_stand_in.json"
SEED = 0


@dataclass(frozen=True)
class Marker:
    path: Path
    samples: int
    seed: int


def read_marker(model_path: Path | None) -> Marker | None:
    """The marker a --model_path names, or None where it names none."""
    if model_path is None or not (model_path / MARKER).is_file():
        return None
    marker = model_path / MARKER
    try:
        entry = json.loads(marker.read_text())
        return Marker(marker, int(entry["samples"]), int(entry["seed"]))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{marker} is not a real-size stand-in's marker: {error}") from error


def marker_main(
    argv: Sequence[str] | None, description: str, model: str, default_samples: int
) -> int:
    """`python -m ...real_size --out DIR`: write the marker (what --model_path then names)."""
    parser = OneLineParser(prog="real_size", description=description)
    parser.add_argument("--out", type=Path, required=True, help="the directory to write")
    parser.add_argument("--samples", type=int, default=default_samples)

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        if args.samples < 1:
            raise HarnessError(f"--samples must be at least 1, got {args.samples}")
        args.out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            args.out / MARKER, {"model": model, "samples": args.samples, "seed": SEED}
        )
        print(f"real-size stand-in: pass --model_path {args.out} with --backend torch")
        return 0

    return run_entry_point("real_size", run)
