"""A model of RNN-T's Server on one H200, from the call times measured there: how a batching policy
(batch size, timeout, length queues) trades the decoder's wasted steps against waiting, without a
GPU. An ESTIMATE, for choosing the GPU configs' Server settings (configs.py) until a device run
measures them; docs/rnnt.md#servers-batches-by-length says what it gave.

A call's time on one runner alone (the `profile` phase, one H200, 2026-11-29, batch 1,024 in
arrival order: 149.1 ms; batch 256: 116.1 ms):
- the encoder's LSTMs 34.6 ms over that batch's frames, linear in the frames they step (every row
  through the longest padded, each row's own packed), packing and unpacking 15.3 ms more when
  packed (torch_engine.PADDED_MIN_FILL decides which, as the engine does); but never less than
  the time its steps take one after another, 39.8 ms for the 500 frames of a 15 s utterance (the
  encoder of the batch of 256, which, as nearly every arrival-order batch of 256, held one);
- the decoder: replays of 32 captured steps until the longest utterance's frames and symbols are
  done (0.9 symbols a frame, the real-size stand-in's), a replay 4.95 ms at 256 rows and 6.3 ms at
  1,024 (linear between, the nearer figure outside);
- 2 ms of the rest.
Runners share the GPU: a call beside the others' takes CONTENTION x its time alone, CONTENTION
calibrated so that the model's Offline (batches of 1,024 in length order, every runner busy) is
the raw runners' measured rate: two runners' 16,155 samples/s (the `raw` phase, the same day), or
--runners N at --raw R (four runners' 18,782 on one H200, 2026-11-29).

Server: Poisson arrivals of drawn utterances (the real-size stand-in's lengths), each waiting in the
queue of its length share (harness/batching.length_buckets; one queue: arrival order) until its
queue holds a full batch or its oldest has waited the timeout (the native DynamicBatcher's rule);
a free runner takes a batch as the batcher gives it (of the ready queues, the oldest first). A
sample's latency: its batch's end minus its arrival.

    python -m mlperf_harness.benchmarks.rnnt.server_model [--runners 4 --raw 18782]
"""

from __future__ import annotations

import math
import sys
from argparse import ArgumentTypeError
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.rnnt import configs
from mlperf_harness.benchmarks.rnnt.real_size import SAMPLES, SEED, RealSizeStandIn
from mlperf_harness.benchmarks.rnnt.torch_engine import PADDED_MIN_FILL, STEPS_PER_CHECK
from mlperf_harness.cli.parsing import (
    OneLineParser,
    positive_float,
    positive_int,
    run_entry_point,
)
from mlperf_harness.harness.batching import length_buckets

PROFILED_BATCH = 1024
PROFILED_MEAN_FRAMES = 213.6  # feature frames: the profiled batch's mean (106.8 encoder frames)
LSTM_MS = 34.6  # the profiled batch's five LSTM layers
PACK_MS = 15.3  # its packing and unpacking
ENCODER_MS_A_FRAME = 39.8 / 500  # the least, a frame of the longest utterance (batch 256's)
REPLAY_MS = ((256, 4.95), (1024, 6.3))  # (batch, ms a replay of STEPS_PER_CHECK steps)
OTHER_MS = 2.0
SYMBOLS_PER_FRAME = 0.9
RAW_OFFLINE = 16_155.0  # samples/s, two runners, batch 1,024 in length order
RUNNERS = 2  # --runners and --raw model another count, calibrated to its own measured rate
LATENCY_BOUND_MS = 1_000.0
TICK_MS = 1.0  # the simulated clock's step


@dataclass(frozen=True)
class Policy:
    batch: int
    timeout_ms: float
    buckets: int

    def describe(self) -> str:
        queues = "one queue" if self.buckets == 1 else f"{self.buckets} length queues"
        return f"batch {self.batch:,}, {self.timeout_ms:g} ms, {queues}"


def real_size_lengths() -> npt.NDArray[np.int64]:
    """The real-size stand-in's drawn utterance lengths (feature frames), as its runs have them."""
    return RealSizeStandIn.drawn_lengths(SEED, SAMPLES)


def call_ms_alone(lengths: npt.NDArray[np.int64]) -> float:
    """One call's time on a runner alone, for a batch of utterances of these lengths."""
    batch, longest = len(lengths), int(lengths.max()) + int(lengths.max()) % 2
    per_frame = LSTM_MS / (PROFILED_BATCH * PROFILED_MEAN_FRAMES)
    if lengths.sum() >= PADDED_MIN_FILL * batch * longest:
        encoder = per_frame * batch * longest
    else:
        encoder = (per_frame + PACK_MS / (PROFILED_BATCH * PROFILED_MEAN_FRAMES)) * lengths.sum()
    encoder = max(encoder, ENCODER_MS_A_FRAME * longest)
    frames = (longest + 1) // 2
    steps = frames + math.floor(frames * SYMBOLS_PER_FRAME)
    (small, small_ms), (large, large_ms) = REPLAY_MS
    share = min(1.0, max(0.0, (batch - small) / (large - small)))
    replay = small_ms + share * (large_ms - small_ms)
    return encoder + math.ceil(steps / STEPS_PER_CHECK) * replay + OTHER_MS


def offline_batches(
    lengths: npt.NDArray[np.int64], batch: int, count: int
) -> list[npt.NDArray[np.int64]]:
    """`count` drawn samples' lengths in length order, cut into batches (Offline's query)."""
    drawn = np.sort(lengths[np.random.default_rng(SEED).integers(0, len(lengths), count)])
    return [drawn[start : start + batch] for start in range(0, count, batch)]


def contention(
    lengths: npt.NDArray[np.int64], runners: int = RUNNERS, raw: float = RAW_OFFLINE
) -> float:
    """How much longer a call takes beside the other runners' calls: the model's Offline with
    `runners` made their measured raw rate `raw`."""
    batches = offline_batches(lengths, PROFILED_BATCH, 200 * PROFILED_BATCH)
    alone_ms = sum(call_ms_alone(b) for b in batches)
    samples = sum(len(b) for b in batches)
    return runners * samples / (alone_ms / 1e3) / raw


@dataclass(frozen=True)
class ServerRun:
    rate: float
    completed: float  # samples/s: the samples over the time to the last completion
    p99_ms: float
    mean_batch: float

    @property
    def valid(self) -> bool:
        return self.p99_ms <= LATENCY_BOUND_MS


def take_batch(
    queues: list[deque[int]], arrivals_ms: npt.NDArray[np.float64], now: float, policy: Policy
) -> list[int] | None:
    """What a free runner takes at `now` (the native DynamicBatcher's rule): of the queues ready
    (full, or their oldest has waited the timeout), the one whose oldest came first, up to a
    batch of it; else nothing yet."""
    ready = [
        q
        for q in queues
        if q and (len(q) >= policy.batch or now >= arrivals_ms[q[0]] + policy.timeout_ms)
    ]
    if not ready:
        return None
    chosen = min(ready, key=lambda q: arrivals_ms[q[0]])
    return [chosen.popleft() for _ in range(min(policy.batch, len(chosen)))]


def server_run(
    lengths: npt.NDArray[np.int64],
    policy: Policy,
    rate: float,
    seconds: float,
    factor: float,
    runners: int = RUNNERS,
) -> ServerRun:
    """Server at `rate` queries/s for `seconds` under `policy`, on a clock of TICK_MS: each tick
    the arrivals join their queues, then each of `runners` free takes what the batcher gives; a
    call takes `factor` x its time alone."""
    rng = np.random.default_rng(SEED + 1)
    count = max(1, int(rate * seconds))
    arrivals = np.cumsum(rng.exponential(1e3 / rate, count))
    drawn = rng.integers(0, len(lengths), count)
    queue_of = length_buckets(lengths, policy.buckets)[drawn]
    queues: list[deque[int]] = [deque() for _ in range(policy.buckets)]
    free_at = [0.0] * runners
    latency = np.full(count, np.nan)
    joined, answered, batches, now = 0, 0, 0, 0.0
    while answered < count:
        while joined < count and arrivals[joined] <= now:
            queues[int(queue_of[joined])].append(joined)
            joined += 1
        closed = joined == count  # the run's last query issued: what waits goes at once
        for runner, at in enumerate(free_at):
            if at > now:
                continue
            members = take_batch(queues, arrivals, math.inf if closed else now, policy)
            if members is None:
                break
            end = now + factor * call_ms_alone(lengths[drawn[members]])
            free_at[runner] = end
            latency[members] = end - arrivals[members]
            answered += len(members)
            batches += 1
        now += TICK_MS
    return ServerRun(
        rate,
        count / (max(free_at) / 1e3),
        float(np.percentile(latency, 99)),
        count / batches,
    )


def highest_valid_share(
    lengths: npt.NDArray[np.int64],
    policy: Policy,
    shares: Sequence[float],
    seconds: float,
    factor: float,
    runners: int = RUNNERS,
    raw: float = RAW_OFFLINE,
) -> tuple[float, ServerRun] | None:
    """The highest of `shares` (of the raw Offline rate `raw`) that the policy serves within the
    bound."""
    best = None
    for share in sorted(shares):
        run = server_run(lengths, policy, share * raw, seconds, factor, runners)
        if run.valid:
            best = (share, run)
    return best


POLICIES = (
    Policy(256, 50, 1),  # the GPU configs' Server before length queues
    Policy(1024, 200, 1),  # Offline's batch from one queue
    Policy(1024, 400, 4),
    # The one-GPU configs' (configs.py)
    Policy(1024, configs.SERVER_GPU_TIMEOUT_US / 1e3, configs.SERVER_BUCKETS_PER_GPU),
)


def parse_policy(text: str) -> Policy:
    """`batch:timeout_ms:queues`, e.g. 1024:500:6."""
    try:
        batch, timeout_ms, buckets = text.split(":")
        policy = Policy(int(batch), float(timeout_ms), int(buckets))
    except ValueError:
        raise ArgumentTypeError(f"a policy is batch:timeout_ms:queues, not {text!r}") from None
    if policy.batch < 1 or policy.timeout_ms < 0 or policy.buckets < 1:
        raise ArgumentTypeError(f"a policy's numbers are positive, not {text!r}")
    return policy


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="rnnt.server_model", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=30.0, help="simulated each run")
    parser.add_argument(
        "--policy",
        type=parse_policy,
        action="append",
        default=None,
        help="batch:timeout_ms:queues (repeatable; default: POLICIES)",
    )
    parser.add_argument(
        "--runners", type=positive_int, default=RUNNERS, help="runners sharing the GPU"
    )
    parser.add_argument(
        "--raw",
        type=positive_float,
        default=RAW_OFFLINE,
        help="their raw Offline rate, samples/s (batch 1,024, length order), measured together",
    )

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        lengths = real_size_lengths()
        factor = contention(lengths, args.runners, args.raw)
        print(
            f"{args.runners} runners at {args.raw:,.0f} samples/s raw: a call beside the others'"
            f" {factor:.2f}x its time alone (calibrated)"
        )
        print("| policy | highest VALID share of raw Offline | p99 ms | mean batch |")
        print("| --- | ---: | ---: | ---: |")
        shares = [round(0.05 * k, 3) for k in range(2, 17)] + [0.825, 0.875, 0.9, 0.925, 0.95]
        for policy in args.policy or POLICIES:
            best = highest_valid_share(
                lengths, policy, shares, args.seconds, factor, args.runners, args.raw
            )
            if best is None:
                low = server_run(
                    lengths, policy, shares[0] * args.raw, args.seconds, factor, args.runners
                )
                print(
                    f"| {policy.describe()} | none (at {shares[0]:.0%}: {low.completed:,.0f} "
                    f"samples/s completed, p99 {low.p99_ms:,.0f}) | | |"
                )
                continue
            share, found = best
            print(
                f"| {policy.describe()} | {share:.1%} ({found.rate:,.0f}/s) | "
                f"{found.p99_ms:,.0f} | {found.mean_batch:,.0f} |"
            )
        return 0

    return run_entry_point("rnnt.server_model", run)


if __name__ == "__main__":
    raise SystemExit(main())
