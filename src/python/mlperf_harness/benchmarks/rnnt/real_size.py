"""RNN-T's real-size stand-in for GPU timing: the reference's shapes (topology.REAL: encoder 1,024,
prediction 320, joint 512 units) with seeded random weights (weights.seeded_weights), made by the
torch engine at activation, answering nothing meaningful.

Its samples are drawn, not spoken: each utterance's length from an ASSUMED shape of LibriSpeech
dev-clean's (a gamma of mean about 6.5 s, kept within 1-15 s, as the benchmark keeps utterances of
at most 15 s; not dev-clean's measured distribution), its features standard normal (the real ones
are normalised per feature, so their scale is the same; an LSTM's time does not depend on the
values). Random weights emit symbols at no speech-like rate, and the decoder's cost is its steps
(one per frame and one per symbol), so the engine FORCES each utterance's emissions to
`symbols_per_frame` (0.9: read speech's roughly 15 characters a second over 60 ms encoder frames, an
estimate), evenly spread: the joint and prediction networks still run every step, only their
decision is replaced. Every run of it says so and is marked stand-in; an accuracy run is refused.

It is chosen by a directory holding `real_size_stand_in.json` as --model_path, which

    python -m mlperf_harness.benchmarks.rnnt.real_size --out DIR

writes (the weights are never on disk: they are drawn again from the seed).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.datasets.librispeech.features import FEATURES, SAMPLE_RATE, feature_frames
from mlperf_harness.datasets.librispeech.preprocess import PreprocessedUtterances
from mlperf_harness.errors import HarnessError

MARKER = "real_size_stand_in.json"
SAMPLES = 2513  # dev-clean's utterances of at most 15 s: LoadGen's performance sample count
SEED = 0
SYMBOLS_PER_FRAME = 0.9
MEAN_SECONDS, SHAPE, SHORTEST, LONGEST = 6.5, 2.5, 1.0, 15.0
FORCED_NOTE = (
    "real-size stand-in: seeded random weights, drawn features, emissions FORCED to "
    f"{SYMBOLS_PER_FRAME} symbols a frame (timing only, no accuracy)"
)


@dataclass(frozen=True)
class RealSizeStandIn:
    path: Path  # the marker file
    samples: int
    seed: int
    symbols_per_frame: float

    def utterances(self) -> PreprocessedUtterances:
        """The drawn timing set, padded as load_preprocessed pads a real one."""
        rng = _draws(self.seed)
        lengths = _drawn_lengths(rng, self.samples)
        longest = int(lengths.max()) + int(lengths.max()) % 2
        features = np.zeros((self.samples, longest, FEATURES), np.float32)
        for row, frames in enumerate(lengths):
            features[row, :frames] = rng.standard_normal((int(frames), FEATURES), np.float32)
        return PreprocessedUtterances(self.path.parent, features, lengths, ("",) * self.samples)

    @staticmethod
    def drawn_lengths(seed: int, samples: int) -> npt.NDArray[np.int64]:
        """The lengths (feature frames) of the utterances `utterances()` draws, alone."""
        return _drawn_lengths(_draws(seed), samples)

    def describe(self) -> str:
        return (
            f"{self.samples} drawn utterances (seed {self.seed}, an assumed length shape of "
            f"mean {MEAN_SECONDS} s within {SHORTEST}-{LONGEST} s); {FORCED_NOTE}"
        )


def _draws(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, 451]))


def _drawn_lengths(rng: np.random.Generator, samples: int) -> npt.NDArray[np.int64]:
    """The first draws of a timing set: each utterance's length in feature frames."""
    seconds = rng.gamma(SHAPE, MEAN_SECONDS / SHAPE, samples).clip(SHORTEST, LONGEST)
    return np.array([feature_frames(int(s * SAMPLE_RATE)) for s in seconds], np.int64)


def find_real_size(model_path: Path | None) -> RealSizeStandIn | None:
    """The real-size stand-in a --model_path names, or None where it names none."""
    if model_path is None or not (model_path / MARKER).is_file():
        return None
    marker = model_path / MARKER
    try:
        entry = json.loads(marker.read_text(encoding="utf-8"))
        real = RealSizeStandIn(
            marker, int(entry["samples"]), int(entry["seed"]), float(entry["symbols_per_frame"])
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{marker} is not a real-size stand-in's marker: {error}") from None
    if real.samples < 1 or not 0.0 < real.symbols_per_frame <= 1.0:
        raise HarnessError(
            f"{marker}: samples must be at least 1 and symbols_per_frame within (0, 1], got "
            f"{real.samples} and {real.symbols_per_frame}"
        )
    return real


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="real_size", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the directory to write")
    parser.add_argument("--samples", type=positive_int, default=SAMPLES)

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        args.out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            args.out / MARKER,
            {
                "model": "RNN-T at the reference's shapes, seeded random weights",
                "samples": args.samples,
                "seed": SEED,
                "symbols_per_frame": SYMBOLS_PER_FRAME,
            },
        )
        print(f"real-size stand-in: pass --model_path {args.out} with --backend torch")
        return 0

    return run_entry_point("real_size", run)


if __name__ == "__main__":
    sys.exit(main())
