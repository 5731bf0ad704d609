"""How far one harness process scales: its rate and Server p99 against the number of simulated
GPUs (the sim backend), and the null backend's issue/completion ceiling against what 8 GPUs need.

Each size N runs the whole harness (the native batch sources, one worker thread per runner, the
completions) under LoadGen over N simulated GPUs whose batches sleep the time of the ResNet-50
H200 fp16 engine (backends/sim/table.py cites the figures), batched as the H200 config batches
(`benchmarks/resnet50/configs.py`: Offline 256 with 2 runners per GPU; Server 128 with a 6 ms
timeout, 2 runners per GPU):

  Offline -- samples/s at N GPUs, against one GPU in the same call (the scaling ratio) and against
             N x the table's rate (per-GPU efficiency); and how far apart the GPUs finished the
             query (the spread of each device's last batch end).
  Server  -- a run at N x the H200 config's target (26,500 queries/s per GPU): completed rate,
             p99 and LoadGen's verdict; `--server_search` instead finds the highest VALID target
             at p99 <= 15 ms (measure.py's search).
  ceiling -- `--ceiling`: the null backend (no device time at all) through the same harness:
             Offline samples/s and Server's highest VALID queries/s (measure.py), against what
             8 GPUs need at 30k (today's fp16) and 45k (the 8-bit goal) samples/s each.

`--loadgen_paths python,native` runs every size and the ceiling under each LoadGen path
(loadgen/paths.py: LoadGen's Python binding, or its C++ compiled into our native module), one
after the other per size; `--rounds N` repeats the ceiling N times, alternating the paths.
"prelude" is the time from the call that starts a test to the harness's batch source receiving
the first sample: what LoadGen (and its binding) does before the harness can work.

`pants run benchmarks/harness_overhead:scaling -- --help`. Prints tables; nothing is cached.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.backends.sim.runner import SimRunner, sim_runners
from mlperf_harness.backends.sim.settings import sim_settings_layer
from mlperf_harness.backends.sim.table import load_table
from mlperf_harness.benchmarks.harness_overhead import configs as overhead_configs
from mlperf_harness.benchmarks.harness_overhead import measure
from mlperf_harness.benchmarks.resnet50 import configs as resnet50_configs
from mlperf_harness.cli.run_harness import make_batch_source
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.harness.timeline import timeline_of
from mlperf_harness.loadgen.paths import DEFAULT_LOADGEN_PATH, LOADGEN_PATHS, PYTHON
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario
from mlperf_harness.systems.detect import detect_system

BENCHMARK = resnet50_configs.NAME  # whose H200 config batches the simulated GPUs
SERVER_LATENCY_NS = measure.SERVER_LATENCY_NS  # 15 ms, ResNet-50's Server bound
# What eight GPUs need (issue 17): today's fp16 rate per GPU and the 8-bit engine's goal, and
# NVIDIA's published 8 x H200 results (v4.1).
PER_GPU_NEEDS = {"8 x 30k (fp16 today)": 8 * 30_000, "8 x 45k (8-bit goal)": 8 * 45_000}
NVIDIA_8XH200 = {"Offline": 756_960, "Server": 632_229}
CEILING_MARGIN = 1.5  # the issue's goal: the ceiling at least 1.5x what eight GPUs need


@dataclass(frozen=True)
class SizeResult:
    gpus: int
    scenario: Scenario
    target: float  # Offline: expected samples/s given to LoadGen; Server: target queries/s
    rate: float  # Offline: samples/s; Server: completed samples/s
    valid: bool
    p50_ms: float
    p99_ms: float
    ideal: float  # N x the table's rate at the run's batch size (Offline) or the target (Server)
    spread_ms: float  # Offline: last minus first device to finish its last batch
    wall_s: float
    # The harness's own rate: samples over the span from its batch source receiving the first
    # sample to the last completion (the timeline's), which leaves out the time LoadGen spends
    # before the harness sees anything (Offline: turning the query's samples into Python objects).
    harness_rate: float = 0.0
    loadgen_path: str = PYTHON
    prelude_s: float | None = None  # the test's start to the first sample issued (measure.Timed)


class SimFleet:
    """N simulated GPUs' runners, activated once for every run at that size."""

    def __init__(self, table_name: str, gpus: int, scenario: Scenario) -> None:
        self.table = load_table(table_name)
        layer, _source = sim_settings_layer(
            BENCHMARK, scenario, HarnessSettings(sim_gpus=gpus, sim_latency_table=table_name)
        )
        self.settings = layer
        self.runners = sim_runners(self.table, gpus, layer.gpu_inference_streams or 1)
        self.devices = list({id(r.device): r.device for r in self._sim_runners()}.values())
        self.batches: Any = None  # the last run's batch source (its timeline)
        self.hold_queries = True  # as run_harness does (HarnessSUT's hold_queries)

    def _sim_runners(self) -> list[SimRunner]:
        return [runner for runner in self.runners if isinstance(runner, SimRunner)]

    def __enter__(self) -> SimFleet:
        for runner in self.runners:
            runner.activate()
        return self

    def __exit__(self, *exc: object) -> None:
        for runner in self.runners:
            runner.deactivate()

    def contender(self, scenario: Scenario, loadgen_path: str = PYTHON) -> measure.Contender:
        def make(_scenario: Scenario) -> tuple[Any, Any, Any]:
            for device in self.devices:
                device.reset()
            batches = self.batches = make_batch_source(scenario, self.settings)
            sut = HarnessSUT(
                self.runners,
                EmptySampleStore(1024, 1024),
                batches,
                hold_queries=scenario is Scenario.OFFLINE and self.hold_queries,
                loadgen_path=loadgen_path,
            )
            return sut.issue_queries, sut.flush_queries, sut

        return measure.Contender(f"sim x{len(self.devices)} ({loadgen_path})", make)


def loadgen_settings(scenario: Scenario, rate: float, seconds: float) -> LoadgenSettings:
    common: dict[str, Any] = {
        "model": overhead_configs.NAME,
        "scenario": scenario,
        "min_duration_ms": int(seconds * 1000),
        "min_query_count": 1,
    }
    if scenario is Scenario.OFFLINE:
        return LoadgenSettings(**common, offline_expected_qps=rate)
    # A target the process cannot issue would run for minutes: stop issuing at 3x the duration.
    return LoadgenSettings(
        **common,
        server_target_qps=rate,
        server_target_latency_ns=SERVER_LATENCY_NS,
        max_duration_ms=int(3 * seconds * 1000),
    )


def run_size(
    fleet: SimFleet,
    scenario: Scenario,
    seconds: float,
    log_root: Path,
    target: float,
    loadgen_path: str = PYTHON,
) -> SizeResult:
    started = time.monotonic()
    timed = measure.run_timed(
        fleet.contender(scenario, loadgen_path),
        loadgen_settings(scenario, target, seconds),
        log_root,
    )
    result: LoadgenResult = timed.result
    wall = time.monotonic() - started
    gpus = len(fleet.devices)
    batch = fleet.settings.batch_size or 1
    if scenario is Scenario.OFFLINE:
        rate = result.samples_per_second or 0.0
        ideal = gpus * fleet.table.samples_per_second(batch)
        ends = [device.free_at for device in fleet.devices if device.batches]
        spread = (max(ends) - min(ends)) * 1e3 if ends else 0.0
    else:
        rate = result.completed_samples_per_second or 0.0
        ideal, spread = target, 0.0
    latency = result.latency_ns
    timeline = timeline_of(fleet.batches)
    harness_rate = (
        timeline.completed_samples / (timeline.duration_ns / 1e9)
        if timeline is not None and timeline.duration_ns > 0
        else 0.0
    )
    return SizeResult(
        gpus,
        scenario,
        target,
        rate,
        bool(result.valid)
        and (scenario is Scenario.OFFLINE or latency.get("p99", 0) <= SERVER_LATENCY_NS),
        latency.get("p50", 0) / 1e6,
        latency.get("p99", 0) / 1e6,
        ideal,
        spread,
        wall,
        harness_rate,
        loadgen_path,
        timed.prelude_s,
    )


def print_table(results: Sequence[SizeResult], scenario: Scenario, loadgen_path: str) -> None:
    rows = [r for r in results if r.scenario is scenario and r.loadgen_path == loadgen_path]
    if not rows:
        return
    print(f"  LoadGen path: {loadgen_path}")
    one = next((r for r in rows if r.gpus == 1), rows[0])
    one_per_gpu = one.rate / one.gpus
    if scenario is Scenario.OFFLINE:
        print(
            f"  {'GPUs':>5} {'samples/s':>12} {'x 1 GPU':>8} {'per GPU':>8} {'of table':>9} "
            f"{'harness only':>13} {'x 1 GPU':>8} {'finish spread':>14} {'prelude':>9} "
            f"{'verdict':>8} {'wall':>5}"
        )
        for r in rows:
            print(
                f"  {r.gpus:>5} {r.rate:>12,.0f} {r.rate / one.rate:>7.2f}x "
                f"{r.rate / (r.gpus * one_per_gpu):>8.1%} {r.rate / r.ideal:>9.1%} "
                f"{r.harness_rate:>13,.0f} {ratio(r.harness_rate, one.harness_rate):>7.2f}x "
                f"{r.spread_ms:>11.1f} ms {seconds_text(r.prelude_s):>9} "
                f"{'VALID' if r.valid else 'INVALID':>8} {r.wall_s:>4.0f}s"
            )
    else:
        print(
            f"  {'GPUs':>5} {'target q/s':>12} {'completed/s':>12} {'x 1 GPU':>8} "
            f"{'p50 ms':>8} {'p99 ms':>8} {'verdict':>8} {'wall':>6}"
        )
        for r in rows:
            print(
                f"  {r.gpus:>5} {r.target:>12,.0f} {r.rate:>12,.0f} {r.rate / one.rate:>7.2f}x "
                f"{r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {'VALID' if r.valid else 'INVALID':>8} "
                f"{r.wall_s:>5.0f}s"
            )


def ratio(value: float, base: float) -> float:
    return value / base if base > 0 else 0.0


def seconds_text(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f} s"


def prelude_text(seconds: float | None, samples: int) -> str:
    if seconds is None or samples == 0:
        return seconds_text(seconds)
    return f"{seconds:.3f} s for {samples:,} samples, {seconds / samples * 1e9:.0f} ns each"


def knee(
    results: Sequence[SizeResult], scenario: Scenario, floor: float, loadgen_path: str = PYTHON
) -> str:
    """The first size whose per-GPU rate falls below `floor` of one GPU's (Offline), or which is
    INVALID (Server)."""
    rows = [r for r in results if r.scenario is scenario and r.loadgen_path == loadgen_path]
    if not rows:
        return ""
    one = next((r for r in rows if r.gpus == 1), rows[0])
    for r in rows:
        short = r.rate / (r.gpus * one.rate / one.gpus) < floor
        if (scenario is Scenario.OFFLINE and short) or (
            scenario is Scenario.SERVER and not r.valid
        ):
            return f"first size below: {r.gpus} GPUs"
    return f"no size below (up to {rows[-1].gpus} GPUs)"


@dataclass(frozen=True)
class Ceiling:
    loadgen_path: str
    offline: float  # samples/s
    offline_valid: bool
    prelude_s: float | None  # Offline: the test's start to the query reaching the harness
    offline_samples: int  # the Offline query's samples
    server: float  # highest VALID queries/s at p99 <= 15 ms
    trail: tuple[str, ...]


CPP_WORKERS = "cpp_workers"  # not a path: the native path with C++ workers, no Python per batch


def measure_ceiling(
    loadgen_path: str, seconds: float, log_root: Path, precision: float, server_start: float
) -> Ceiling:
    contender = (
        measure.CPP_WORKERS
        if loadgen_path == CPP_WORKERS
        else measure.harness_contender(loadgen_path)
    )
    offline = measure.offline_run(contender, seconds, log_root)
    server, trail = measure.highest_valid_qps(contender, seconds, precision, log_root, server_start)
    return Ceiling(
        loadgen_path,
        offline.result.samples_per_second or 0.0,
        bool(offline.result.valid),
        offline.prelude_s,
        offline.issued_samples,
        server,
        tuple(trail),
    )


def print_ceiling(
    seconds: float,
    log_root: Path,
    precision: float,
    loadgen_paths: Sequence[str] = (PYTHON,),
    rounds: int = 1,
    server_start: float = 50_000,
) -> list[Ceiling]:
    print(
        f"\nNull backend through the same harness (no device time): one LoadGen process's "
        f"issue/completion ceiling, {seconds:g} s runs, LoadGen path(s) "
        f"{', '.join(loadgen_paths)}, {rounds} round(s) alternating",
        flush=True,
    )
    ceilings: list[Ceiling] = []
    for round_number in range(1, rounds + 1):
        for path in loadgen_paths:
            c = measure_ceiling(path, seconds, log_root, precision, server_start)
            ceilings.append(c)
            print(
                f"  round {round_number} {path:<13} Offline {c.offline:>12,.0f} samples/s "
                f"({'VALID' if c.offline_valid else 'INVALID'}, prelude "
                f"{prelude_text(c.prelude_s, c.offline_samples)}); Server {c.server:>10,.0f} "
                f"queries/s highest "
                f"VALID at p99 <= 15 ms [{'; '.join(c.trail)}]",
                flush=True,
            )
    print(
        f"  {'need':<24}{'need':>10}{'x1.5 goal':>11}  "
        + "".join(f"{'Offline ' + p:>22}{'Server ' + p:>21}" for p in loadgen_paths)
        + "  (worst round of each path, against the x1.5 goal)"
    )
    worst = {
        path: (
            min(c.offline for c in ceilings if c.loadgen_path == path),
            min(c.server for c in ceilings if c.loadgen_path == path),
        )
        for path in loadgen_paths
    }
    for name, need in {**PER_GPU_NEEDS, "NVIDIA 8xH200": NVIDIA_8XH200["Offline"]}.items():
        goal = need * CEILING_MARGIN
        cells = "".join(
            f"{offline / goal:>21.2f}x{server / goal:>20.2f}x" for offline, server in worst.values()
        )
        print(f"  {name:<24}{need:>10,}{goal:>11,.0f}  {cells}")
    print(f"  (NVIDIA 8xH200 Server: {NVIDIA_8XH200['Server']:,} queries/s)", flush=True)
    return ceilings


def parse_paths(text: str) -> list[str]:
    paths = [part.strip() for part in text.split(",") if part.strip()]
    if not paths or any(path not in LOADGEN_PATHS for path in paths):
        raise argparse.ArgumentTypeError(
            f"LoadGen paths must be among {', '.join(LOADGEN_PATHS)}: {text!r}"
        )
    return paths


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"GPU counts must be integers: {text!r}") from error
    if not sizes or any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"GPU counts must be positive: {text!r}")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scaling", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpus", type=parse_sizes, default=parse_sizes("1,2,4,8,16,32,64"))
    parser.add_argument(
        "--scenarios", default="Offline,Server", help="Offline, Server or both (comma-separated)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="minimum duration of each run")
    parser.add_argument("--table", default="resnet50-h200-fp16", help="sim latency table")
    parser.add_argument(
        "--server_search", action="store_true", help="Server: search the highest VALID target"
    )
    parser.add_argument(
        "--no_hold_queries",
        action="store_true",
        help="Offline: let LoadGen free the query's sample list at once (before the fix)",
    )
    parser.add_argument("--ceiling", action="store_true", help="also the null-backend ceiling")
    parser.add_argument("--ceiling_only", action="store_true", help="only the ceiling")
    parser.add_argument("--precision", type=float, default=0.05, help="Server search precision")
    parser.add_argument(
        "--loadgen_paths",
        type=parse_paths,
        default=[DEFAULT_LOADGEN_PATH],
        help="which LoadGen path(s) to run, comma-separated: python (mlperf_loadgen), native "
        "(LoadGen's C++ in our module), or both (default: %(default)s)",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="ceiling: rounds, each over every path in turn"
    )
    parser.add_argument(
        "--cpp_workers",
        action="store_true",
        help="ceiling: also the native path with C++ threads answering the batches (no Python "
        "per batch): what the harness's Python worker could reach at best on this CPU",
    )
    parser.add_argument(
        "--server_start_qps",
        type=float,
        default=50_000,
        help="ceiling: the Server search's first target (doubled until INVALID, then bisected)",
    )
    args = parser.parse_args(argv)
    scenarios = [Scenario.parse(name.strip()) for name in args.scenarios.split(",") if name]
    table = load_table(args.table)
    print(
        f"harness scaling over simulated GPUs on {platform.node() or 'this host'}: "
        f"{os.cpu_count()} CPUs ({detect_system().cpu_model}), {time.strftime('%Y-%m-%d')}; table "
        f"{args.table}: {table.source}",
        flush=True,
    )
    results: list[SizeResult] = []
    with tempfile.TemporaryDirectory() as logs:
        log_root = Path(logs)
        for scenario in [] if args.ceiling_only else scenarios:
            print(f"\n{scenario.value}, {args.seconds:g} s runs", flush=True)
            for gpus in args.gpus:
                with SimFleet(args.table, gpus, scenario) as fleet:
                    fleet.hold_queries = not args.no_hold_queries
                    for path in args.loadgen_paths:
                        results.append(run_path_size(fleet, scenario, path, args, log_root))
            print(f"\n{scenario.value}: one process over N simulated GPUs")
            floor = 0.95 if scenario is Scenario.OFFLINE else 0.0
            for path in args.loadgen_paths:
                print_table(results, scenario, path)
                print(
                    f"  where it stops scaling (per-GPU rate < 95% of one GPU's, or INVALID): "
                    f"{knee(results, scenario, floor, path)}",
                    flush=True,
                )
        if args.ceiling or args.ceiling_only:
            print_ceiling(
                args.seconds,
                log_root,
                args.precision,
                [*args.loadgen_paths, *([CPP_WORKERS] if args.cpp_workers else [])],
                args.rounds,
                args.server_start_qps,
            )
    return 0


def run_path_size(
    fleet: SimFleet, scenario: Scenario, path: str, args: argparse.Namespace, log_root: Path
) -> SizeResult:
    """One size under one LoadGen path (Server: after a search, with --server_search)."""
    gpus = len(fleet.devices)
    if scenario is Scenario.SERVER and args.server_search:
        start = fleet.settings.server_target_qps or 1000.0
        best, trail = measure.highest_valid_qps(
            fleet.contender(scenario, path), args.seconds, args.precision, log_root, start
        )
        print(
            f"  {gpus:>5} GPUs ({path}): highest VALID {best:,.0f} q/s [{'; '.join(trail)}]",
            flush=True,
        )
        target = best
    else:
        target = (
            fleet.settings.offline_expected_qps
            if scenario is Scenario.OFFLINE
            else fleet.settings.server_target_qps
        ) or 1000.0
    last = run_size(fleet, scenario, args.seconds, log_root, target, path)
    print(
        f"  .. {gpus} GPUs ({path}): {last.rate:,.0f}/s p99 {last.p99_ms:.2f} ms "
        f"{'VALID' if last.valid else 'INVALID'}, prelude {seconds_text(last.prelude_s)} "
        f"({last.wall_s:.0f} s)",
        flush=True,
    )
    return last


if __name__ == "__main__":
    sys.exit(main())
