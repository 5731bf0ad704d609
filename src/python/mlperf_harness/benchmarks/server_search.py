"""The search for Server's highest VALID rate that every device script runs (device_lib.sh's
`server_search`; benchmarks/resnet50/device/scaling.sh at each size), and the lines its tables
print of it.

    python -m mlperf_harness.benchmarks.server_search next --start 63000 --step 0.1 --runs 3 \\
        [--p99_ms 15] [RESULT.json ...]
    python -m mlperf_harness.benchmarks.server_search start --share 0.9 RAW_OR_RESULT.json
    python -m mlperf_harness.benchmarks.server_search attempt --label server --run 1 RESULT.json
    python -m mlperf_harness.benchmarks.server_search summary --label server [--p99_ms 15] RESULT.json ...
    python -m mlperf_harness.benchmarks.server_search table DIRECTORY

`next` prints the next target from the result.json of the runs so far (search_next says the rule),
OWN_RATE where the first run should take the run's own rate (no --start: its config's, or timed at
start, rates.md; the search then steps from what that run recorded), or nothing when the search
ends. `start` prints share x the rate a raw.json (its first engine's samples/s) or an Offline
result.json holds, or nothing where the file is absent. `attempt` prints one run's target and
verdict, `summary` one search's outcome;
`table` one line per search whose runs a directory holds (<label>_q<target>.json,
<label>_own.json), as the device scripts' tables end.

VALID is LoadGen's verdict (it includes each benchmark's latency bound: p99, or TTFT and TPOT for
Llama2), and where --p99_ms is given also p99 within that bound (ResNet-50's scaling goal).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import EARLY_STOPPING_UNMET, UNMET

Handler = Callable[[argparse.Namespace], int]
OWN_RATE = "own"  # `next`'s answer where the first run takes its own rate (no --start)
# A Server run of a search: <label>_q<target>.json, or <label>_own.json at the run's own rate.
RUN_NAME = re.compile(r"(?P<label>.+)_(?:q(?P<target>\d+(?:\.\d+)?)|own)")
SEARCHED_SCENARIOS = ("Server", "Interactive")  # Interactive: LoadGen's Server, Llama2's bounds
# Targets are multiples of the largest power of ten at most this share of the step: whole hundreds
# for ResNet-50 on eight GPUs (a step of 14,080 queries/s), thousandths for SDXL (about 0.2).
QUANTUM_SHARE_OF_STEP = 0.01


def quantum_exponent(step: float) -> int:
    """The power of ten that targets are whole multiples of, for a search of this step."""
    if step <= 0:
        raise HarnessError(f"server search: the step must be above zero, not {step}")
    return math.floor(math.log10(step * QUANTUM_SHARE_OF_STEP))


def quantize(rate: float, step: float) -> float:
    return float(round(rate, -quantum_exponent(step)))


def format_rate(rate: float, step: float) -> str:
    """A target as the shell passes it and labels runs with: quantized, no more decimals than its
    quantum."""
    return f"{quantize(rate, step):.{max(0, -quantum_exponent(step))}f}"


def search_next(
    start: float, step: float, max_runs: int, tried: Sequence[tuple[float, bool]]
) -> float | None:
    """The next Server target of a search, or None when it ends.

    `tried`: (target, VALID) of the runs so far. The first run is at `start`; `step` is in
    queries/s. While no run has been VALID, one step below the lowest target tried; while none
    above the best VALID one has been INVALID, one step above it; once a VALID target and an
    INVALID one above it lie more than half a step apart, their midpoint. It ends after `max_runs`
    runs, when they lie half a step apart or closer, or when the next target would repeat one tried
    or fall to zero. Targets are whole multiples of a power of ten at most a hundredth of the step
    (quantize). INVALID runs below the best VALID one (a noisy host) do not bound the search.
    """
    if not tried:
        return quantize(start, step)
    if len(tried) >= max_runs:
        return None
    valid = [rate for rate, ok in tried if ok]
    if not valid:
        candidate = quantize(min(rate for rate, _ in tried) - step, step)
    else:
        best = max(valid)
        above = [rate for rate, ok in tried if not ok and rate > best]
        if not above:
            candidate = quantize(best + step, step)
        elif min(above) - best <= step / 2:
            return None
        else:
            candidate = quantize((best + min(above)) / 2, step)
    if candidate <= 0 or candidate in {quantize(rate, step) for rate, _ in tried}:
        return None
    return candidate


def search(
    start: float, step: float, max_runs: int, run: Callable[[float], bool]
) -> list[tuple[float, bool]]:
    """search_next driven to its end with `run` (target -> VALID): what the shell's loop does."""
    tried: list[tuple[float, bool]] = []
    while (target := search_next(start, step, max_runs, tried)) is not None:
        tried.append((target, run(target)))
    return tried


def server_target(run: dict[str, Any]) -> float | None:
    """The Server target a run's result.json says it ran at."""
    value = run.get("settings", {}).get("server_target_qps", {}).get("value")
    return None if value is None else float(value)


def server_valid(run: dict[str, Any], p99_ns: float | None = None) -> bool:
    """LoadGen's verdict, and where a bound is given, p99 within it."""
    if not run.get("result_valid"):
        return False
    if p99_ns is None:
        return True
    p99 = run.get("latency_ns", {}).get("p99")
    return p99 is not None and p99 <= p99_ns


@dataclass(frozen=True)
class Attempt:
    """One run of a search as its result.json holds it."""

    name: str  # the file's stem: <label>_q<target> or <label>_own
    target: float
    valid: bool
    record: dict[str, Any]


def read_attempt(path: Path, p99_ns: float | None = None) -> Attempt:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise HarnessError(f"server search: cannot read {path}: {error}") from error
    target = server_target(record)
    if target is None:
        raise HarnessError(f"server search: {path} holds no server_target_qps in its settings")
    return Attempt(path.stem, target, server_valid(record, p99_ns), record)


def best_attempt(attempts: Iterable[Attempt]) -> Attempt | None:
    """The VALID run with the highest completed rate (its target where none is recorded)."""
    valid = [attempt for attempt in attempts if attempt.valid]
    return max(valid, key=_completed, default=None)


def early_stopping_alone(record: dict[str, Any]) -> str | None:
    """Where LoadGen failed a run on its early stopping alone (every other check met: the latency
    bounds held at the percentile), what its summary asks for (its "more queries" note, or the
    check itself); else None. Such a run wants more queries, not a lower rate."""
    reasons = [str(reason) for reason in record.get("invalid_reasons") or []]
    unmet = [reason for reason in reasons if reason.endswith(UNMET)]
    if record.get("result_valid") or unmet != [EARLY_STOPPING_UNMET]:
        return None
    wants = [reason for reason in reasons if "more queries" in reason]
    return wants[0] if wants else EARLY_STOPPING_UNMET


def attempt_line(label: str, index: int, attempt: Attempt) -> str:
    """What the shell prints after each run of a search: its target and verdict (and where LoadGen
    failed it on early stopping alone, so that a reader runs it longer rather than slower)."""
    p99 = attempt.record.get("latency_ns", {}).get("p99")
    alone = early_stopping_alone(attempt.record)
    return (
        f"server search {label}: run {index} at {_figure(attempt.target)} queries/s: "
        f"{'VALID' if attempt.valid else 'INVALID'}"
        + (f" (p99 {p99 / 1e6:,.1f} ms)" if p99 is not None else "")
        + (f"; on early stopping alone, its bounds met: {alone}" if alone else "")
    )


def summary(label: str, attempts: Sequence[Attempt]) -> str:
    """One search's outcome in one line: its best VALID run, or that none was."""
    if not attempts:
        return f"server search {label}: no run"
    targets = ", ".join(_figure(attempt.target) for attempt in attempts)
    best = best_attempt(attempts)
    runs = f"{len(attempts)} run{'s' if len(attempts) > 1 else ''}"
    if best is None:
        return f"server search {label}: no VALID run of {runs} (targets {targets} queries/s)"
    above = [a.target for a in attempts if not a.valid and a.target > best.target]
    p99 = best.record.get("latency_ns", {}).get("p99")
    return (
        f"server search {label}: best VALID {_figure(_completed(best))} samples/s at a target of "
        f"{_figure(best.target)} ({best.name}"
        + (f", p99 {p99 / 1e6:,.1f} ms" if p99 is not None else "")
        + f"); {sum(a.valid for a in attempts)} VALID of {runs} (targets {targets})"
        + (f"; lowest INVALID above it {_figure(min(above))}" if above else "")
    )


def searches(runs: dict[str, dict[str, Any]]) -> dict[str, list[Attempt]]:
    """The Server (and Interactive) runs among `runs` (result.json records by file stem) that a
    search made, by the search's label, in the order of their names."""
    found: dict[str, list[Attempt]] = {}
    for name, record in runs.items():
        match = RUN_NAME.fullmatch(name)
        target = server_target(record)
        if not match or target is None or record.get("scenario") not in SEARCHED_SCENARIOS:
            continue
        attempt = Attempt(name, target, server_valid(record), record)
        found.setdefault(match.group("label"), []).append(attempt)
    return found


def search_lines(runs: dict[str, dict[str, Any]]) -> list[str]:
    """What the device scripts' tables end with: one summary per search."""
    return [summary(label, attempts) for label, attempts in searches(runs).items()]


def directory_runs(directory: Path) -> dict[str, dict[str, Any]]:
    """Every result JSON file directly under `directory`, by stem (files that are not a JSON
    object are left out: raw.json and engine.json are read by the tables themselves)."""
    runs = {}
    for path in sorted(directory.glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except ValueError:
            continue  # SDXL's engine.json holds the timing tool's printed lines
        if isinstance(record, dict):
            runs[path.stem] = record
    return runs


def rate_of(record: dict[str, Any]) -> float:
    """The samples/s a raw.json (its first engine) or an Offline result.json holds."""
    if record.get("engines"):
        return float(record["engines"][0]["samples_per_second"])
    value = record.get("samples_per_second")
    if not value:
        raise HarnessError("server search: no samples_per_second in the start's file")
    return float(value)


def _completed(attempt: Attempt) -> float:
    return float(attempt.record.get("completed_samples_per_second") or attempt.target)


def _figure(value: float) -> str:
    """A rate for people: thousands separated above 100, three significant decimals below."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _next(args: argparse.Namespace) -> int:
    p99_ns = args.p99_ms * 1e6 if args.p99_ms is not None else None
    attempts = [read_attempt(Path(path), p99_ns) for path in args.results]
    if args.start is None and not attempts:
        print(OWN_RATE)
        return 0
    # Without --start the first run took its own rate: the search steps from that.
    start = float(args.start) if args.start is not None else attempts[0].target
    if start <= 0:
        raise HarnessError(f"server search: the start must be above zero, not {start}")
    step = args.step * start
    target = search_next(start, step, args.runs, [(a.target, a.valid) for a in attempts])
    if target is not None:
        print(format_rate(target, step))
    return 0


def _start(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if path.is_file():
        try:
            record = json.loads(path.read_text())
        except ValueError as error:
            raise HarnessError(f"server search: cannot read {path}: {error}") from error
        print(f"{args.share * rate_of(record):.6g}")
    return 0


def _attempt(args: argparse.Namespace) -> int:
    p99_ns = args.p99_ms * 1e6 if args.p99_ms is not None else None
    print(attempt_line(args.label, args.run, read_attempt(Path(args.result), p99_ns)))
    return 0


def _summary(args: argparse.Namespace) -> int:
    p99_ns = args.p99_ms * 1e6 if args.p99_ms is not None else None
    print(summary(args.label, [read_attempt(Path(path), p99_ns) for path in args.results]))
    return 0


def _table(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    if not directory.is_dir():
        raise HarnessError(f"server search: no directory {directory}")
    lines = search_lines(directory_runs(directory))
    print("\n".join(lines or ["server search: no searched Server run here"]))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mlperf_harness.benchmarks.server_search")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, handler: Handler, text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text)
        sub.set_defaults(handler=handler)
        return sub

    nxt = command("next", _next, "the next Server target, or nothing when the search ends")
    nxt.add_argument("--start", type=float, help="the first target (default: the run's own)")
    nxt.add_argument("--step", type=float, default=0.1, help="the step, a fraction of the start")
    nxt.add_argument("--runs", type=int, default=3, help="at most this many runs in all")
    start = command("start", _start, "share x the rate of a raw.json or an Offline result.json")
    start.add_argument("--share", type=float, required=True)
    start.add_argument("file", help="nothing is printed where it is absent")
    one = command("attempt", _attempt, "one run's target and verdict in one line")
    one.add_argument("--run", type=int, required=True, help="its number in the search")
    one.add_argument("result")
    summ = command("summary", _summary, "one search's outcome in one line")
    command("table", _table, "one line per search a directory holds").add_argument("directory")
    for sub in (one, summ):
        sub.add_argument("--label", required=True, help="the search's label")
    for sub in (nxt, one, summ):
        sub.add_argument("--p99_ms", type=float, help="VALID also needs p99 within this bound")
    for sub in (nxt, summ):
        sub.add_argument("results", nargs="*", help="result.json of the runs so far")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except HarnessError as error:
        print(error, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
