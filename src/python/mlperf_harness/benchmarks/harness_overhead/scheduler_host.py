"""The in-flight scheduler's host work a decode step (generation/scheduler.py), against an engine
that does nothing (its candidates fixed in advance): what a GPU would sit idle for between two
steps were the engine free. One row per layout: Llama2-70B's one-beam slots on one H200 (173) and
tensor parallel over two (626), GPT-J's 115 slots of 4 beams; for one beam also the per-sample
BeamSearch over the same candidates (what the scheduler ran before its greedy arrays,
generation/greedy.py). Prints one table; `--help` for the layouts' flags."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from mlperf_harness.generation.beams import BeamSearch, GenerationConfig
from mlperf_harness.generation.engine import BoolArray, Candidates, Float32Array, Int64Array
from mlperf_harness.generation.scheduler import StepTimes, generate

EOS = 2


class FixedCandidates:
    """A DecoderEngine with no model: every step's candidates drawn once (never EOS), every other
    call a no-op."""

    eos_id = EOS
    joins_prefill = False  # each prefill runs when called (DecoderEngine)
    prefilling: frozenset[int] = frozenset()

    def __init__(self, slots: int, beams: int, max_length: int) -> None:
        self.slots, self.beams, self.max_length = slots, beams, max_length
        rng = np.random.default_rng(0)
        k = 2 * beams
        self.tokens = rng.integers(EOS + 1, 32_000, (slots, k)).astype(np.int64)
        self.scores = -np.sort(rng.random((slots, k)).astype(np.float32), axis=1)
        self.parents = np.tile(np.arange(k) % beams, (slots, 1)).astype(np.int64)

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        pass

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        n = len(slots)
        best = beam_scores.max(axis=1, keepdims=True)
        return Candidates(self.scores[:n] + best, self.tokens[:n], self.parents[:n])

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        pass

    def release(self, slots: Sequence[int]) -> None:
        pass


def scheduler_ms(slots: int, beams: int, mean_tokens: int) -> tuple[float, int]:
    """ms of host work a step over 2 x `slots` samples of about `mean_tokens` new tokens each
    (forced lengths, as the real-size stand-ins'), and the steps run."""
    engine = FixedCandidates(slots, beams, 4 * mean_tokens)
    rng = np.random.default_rng(1)
    samples = 2 * slots
    config = GenerationConfig(EOS, 0, 2 * mean_tokens, beams)
    lengths = rng.integers(mean_tokens // 2, mean_tokens * 3 // 2, samples)
    times = StepTimes()
    started = time.perf_counter()
    generate(engine, [np.arange(4, dtype=np.int64)] * samples, [config.forced(int(n)) for n in lengths],
             times=times)  # fmt: skip
    return 1e3 * (time.perf_counter() - started) / times.steps, times.steps


def per_sample_ms(slots: int, steps: int) -> float:
    """ms a step of one-beam BeamSearch's calls for `slots` live samples over the same candidates
    (one call a sample a step, as the scheduler made them before its greedy arrays)."""
    engine = FixedCandidates(slots, 1, 2 * steps + 2)
    config = GenerationConfig(EOS, 0, steps + 1, 1)
    searches = [BeamSearch(config, 4) for _ in range(slots)]
    told: set[int] = set()
    started = time.perf_counter()
    for _ in range(steps):
        scores = np.stack([search.beam_scores for search in searches])
        blocks = np.array([search.blocks_eos for search in searches])
        candidates = engine.candidates(list(range(slots)), scores, blocks, 2)
        for i, search in enumerate(searches):
            search.step(candidates.scores[i], candidates.tokens[i], candidates.parents[i])
            if i not in told and search.first_token() is not None:
                told.add(i)
    return 1e3 * (time.perf_counter() - started) / steps


LAYOUTS = {  # name: slots, beams, mean new tokens (the real-size stand-ins')
    "llama2-70b, one H200": (173, 1, 294),
    "llama2-70b, tensor parallel over two H200s": (626, 1, 294),
    "gptj, one H200": (115, 4, 69),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scheduler_host", description=__doc__)
    parser.add_argument("--steps", type=int, default=300, help="steps of the per-sample row")
    parser.add_argument(
        "--repeats", type=int, default=5, help="times each row runs: the fastest is shown"
    )
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeats < 1:
        parser.error("--steps and --repeats must be at least 1")
    print(f"{'layout':<45}{'slots':>6}{'beams':>6}{'scheduler ms/step':>19}"
          f"{'per-sample BeamSearch ms/step':>31}   (fastest of {args.repeats})")  # fmt: skip
    for name, (slots, beams, mean_tokens) in LAYOUTS.items():
        ms = min(scheduler_ms(slots, beams, mean_tokens)[0] for _ in range(args.repeats))
        before = "(the scheduler's)"
        if beams == 1:
            before = f"{min(per_sample_ms(slots, args.steps) for _ in range(args.repeats)):.2f}"
        print(f"{name:<45}{slots:>6}{beams:>6}{ms:>19.2f}{before:>31}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
