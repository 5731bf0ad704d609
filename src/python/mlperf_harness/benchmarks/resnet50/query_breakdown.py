"""Where a latency query's time goes on a GPU host: the harness's inline path (SingleStream,
MultiStream) and the engine alone (torch_raw's latency loop), cut into the same segments, tenth by
tenth of the run. A diagnostic for the device scripts (`gpu_scenarios.sh breakdown`), not a figure
of the harness: it wraps three methods of this process before the run starts, so that the product
code carries no probes, and its wrappers cost both paths alike (a few microseconds a query, most of
them the two CUDA events).

Segments of a query, from host clock readings (perf_counter_ns):
  pre     its start to the engine's graph replay: for the harness, from HarnessSUT.run_pending
          (LoadGen's issue thread, the query already in the batch source) through the runner's
          staging; for the engine alone, from the last call's synchronisation through the loop's
          own staging (writing the rows)
  replay  the CUDA graph's launch (CUDAGraph.replay returning)
  mid     launch to synchronisation (nothing but the step between the two calls where the graph is
          a round trip, runner.capture_round_trips; the output's copy enqueued where it is not)
  sync    waiting in Stream.synchronize for the GPU
  post    synchronisation to the query's end: the harness's postprocessing and completion into
          LoadGen (none for the engine alone)
  gap     the last query's end to this one's start: LoadGen's turn (harness only)
  gpu     the replay on the GPU, between CUDA events recorded before and after it
Prints one table per run and writes every query's marks as JSON (`--out`). The harness run answers
its queries in Python (--no-native_round_trips): the C++ answers have no Python calls to mark, and
torch_raw's latency, launched from C++ too, is what they cost.

Imports torch: GPU hosts only.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.errors import HarnessError

SEGMENTS = ("pre", "replay", "mid", "sync", "post", "gap", "gpu")
TENTHS = 10


class QueryMarks:
    """Host clock readings (ns) and CUDA events of each query, in order. With explicit queries
    (the harness) a query runs from `begin` to `end`, and replays and synchronisations outside one
    (warm-up, graph capture) are not recorded. Without (the engine alone) a query runs from the
    last synchronisation's end to the end of the next synchronisation after a replay: the caller
    keeps the last ones, the loop's (the earlier are warm-up and throughput replays)."""

    def __init__(self, torch: Any, *, explicit_queries: bool) -> None:
        self._torch = torch
        self._explicit = explicit_queries
        self._open: dict[str, Any] | None = None
        self._last_end: int | None = None
        self.queries: list[dict[str, Any]] = []

    def begin(self) -> None:
        now = time.perf_counter_ns()
        self._open = {"start": now, "gap": None if self._last_end is None else now - self._last_end}

    def end(self) -> None:
        if self._open is not None and "sync_end" in self._open:
            self._open["end"] = self._last_end = time.perf_counter_ns()
            self.queries.append(self._open)
        self._open = None

    def replay(self, call: Callable[[], None]) -> None:
        if not self._explicit and self._open is None and self._last_end is not None:
            self._open = {"start": self._last_end, "gap": None}
        record = self._open
        if record is None:
            call()
            return
        before = self._torch.cuda.Event(enable_timing=True)
        after = self._torch.cuda.Event(enable_timing=True)
        record["replay_start"] = time.perf_counter_ns()
        before.record()
        call()
        after.record()
        record["replay_end"] = time.perf_counter_ns()
        record["events"] = (before, after)

    def synchronize(self, call: Callable[[], None]) -> None:
        started = time.perf_counter_ns()
        call()
        ended = time.perf_counter_ns()
        record = self._open
        if self._explicit:
            if record is not None and "replay_end" in record:
                record["sync_start"], record["sync_end"] = started, ended
            return
        self._last_end = ended
        if record is not None:
            record["sync_start"], record["sync_end"], record["end"] = started, ended, ended
            self.queries.append(record)
            self._open = None

    def segments_us(self) -> list[dict[str, float]]:
        """Each query's segments in microseconds (SEGMENTS, and `total`; `gap` NaN where none)."""
        rows = []
        for q in self.queries:
            before, after = q["events"]
            rows.append(
                {
                    "total": (q["end"] - q["start"]) / 1e3,
                    "pre": (q["replay_start"] - q["start"]) / 1e3,
                    "replay": (q["replay_end"] - q["replay_start"]) / 1e3,
                    "mid": (q["sync_start"] - q["replay_end"]) / 1e3,
                    "sync": (q["sync_end"] - q["sync_start"]) / 1e3,
                    "post": (q["end"] - q["sync_end"]) / 1e3,
                    "gap": math.nan if q["gap"] is None else q["gap"] / 1e3,
                    "gpu": float(before.elapsed_time(after)) * 1e3,
                }
            )
        return rows


def install(torch: Any, marks: QueryMarks, *, harness: bool) -> None:
    """Wrap CUDAGraph.replay and Stream.synchronize (both paths) and, for the harness,
    HarnessSUT.run_pending, which runs each inline query on LoadGen's issue thread."""
    replay = torch.cuda.CUDAGraph.replay
    synchronize = torch.cuda.Stream.synchronize
    torch.cuda.CUDAGraph.replay = lambda graph: marks.replay(lambda: replay(graph))
    torch.cuda.Stream.synchronize = lambda stream: marks.synchronize(lambda: synchronize(stream))
    if harness:
        from mlperf_harness.harness.sut import HarnessSUT

        run_pending = HarnessSUT.run_pending

        def timed_run_pending(sut: HarnessSUT) -> None:
            marks.begin()
            run_pending(sut)
            marks.end()

        HarnessSUT.run_pending = timed_run_pending  # type: ignore[method-assign,assignment]


def table(title: str, rows: Sequence[dict[str, float]]) -> str:
    """Per tenth of the queries, in order: the mean of each segment and the total's p90 (us)."""
    if len(rows) < TENTHS:
        raise HarnessError(
            f"query_breakdown: {title}: {len(rows)} queries, too few to cut in tenths"
        )
    header = f"{title:<22}{'queries':>8}{'p90':>8}{'mean':>8}" + "".join(
        f"{name:>8}" for name in SEGMENTS
    )
    lines = [header]
    size = len(rows) // TENTHS
    for tenth in range(TENTHS):
        part = rows[tenth * size : (tenth + 1) * size]
        totals = [r["total"] for r in part]
        cells = [
            statistics.quantiles(totals, n=10, method="inclusive")[8],
            statistics.fmean(totals),
        ]
        for name in SEGMENTS:
            values = [r[name] for r in part if not math.isnan(r[name])]
            cells.append(statistics.fmean(values) if values else math.nan)
        lines.append(
            f"{'  tenth ' + str(tenth + 1):<22}{len(part):>8}"
            + "".join(f"{c:>8.1f}" for c in cells)
        )
    return "\n".join(lines)


def _raw(args: Any, torch: Any, marks: QueryMarks) -> None:
    from mlperf_harness.benchmarks.resnet50.torch_raw import measure_engine, raw_samples

    samples = raw_samples(args.preprocessed_dir)
    # One call more than kept: the first starts where the warm-up's last synchronisation ended.
    measure_engine(
        torch, args.engine, samples, seconds=0.05, latency_calls=args.calls + 1,
        launch_from_cpp=False,  # its marks are torch's calls: every query replays from Python
    )  # fmt: skip
    del marks.queries[: -args.calls]


def _harness(args: Any) -> None:
    from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
    from mlperf_harness.cli.main import run_benchmark_cli

    # In Python: answered in C++ (native_round_trips, the default where it applies) a query makes
    # none of the calls these marks wrap.
    sys.argv = ["resnet50", *args.harness_args, "--no-native_round_trips"]
    code = run_benchmark_cli(BENCHMARK)
    if code != 0:  # INVALID too: its queries' time is still what this looks at
        print(f"query_breakdown: the harness run exited {code}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="query_breakdown",
        description="Where a latency query's time goes: the harness against the engine alone.",
    )
    parser.add_argument("--out", type=Path, required=True, help="every query's segments (JSON)")
    parser.add_argument("--title", default="", help="the table's title")
    modes = parser.add_subparsers(dest="mode", required=True)
    raw = modes.add_parser("raw", help="the engine alone: torch_raw's latency loop")
    raw.add_argument("engine", type=Path, help="a torch engine (model.pt2)")
    raw.add_argument("--preprocessed_dir", type=Path, required=True)
    raw.add_argument("--calls", type=positive_int, default=20000)
    harness = modes.add_parser("harness", help="one harness run: the arguments after --")
    harness.add_argument("harness_args", nargs="+", help="resnet50's arguments")

    def body() -> int:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        from mlperf_harness.engines.torch_aot.torch_host import import_torch

        torch = import_torch()
        marks = QueryMarks(torch, explicit_queries=args.mode == "harness")
        install(torch, marks, harness=args.mode == "harness")
        if args.mode == "raw":
            _raw(args, torch, marks)
        else:
            _harness(args)
        torch.cuda.synchronize()
        rows = marks.segments_us()
        write_json_atomic(args.out, {"mode": args.mode, "queries": rows})
        print(table(args.title or args.mode, rows))
        return 0

    return run_entry_point("query_breakdown", body)


if __name__ == "__main__":
    raise SystemExit(main())
