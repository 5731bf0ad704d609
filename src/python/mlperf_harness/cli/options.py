"""The shared command line. These flag names are a contract that users' scripts rely on: add flags,
never rename them."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.loadgen.settings import Scenario, TestMode

FAST_MIN_DURATION_MS = 60_000  # --fast: the one-minute runs NVIDIA's tooling calls "fast"
SCRATCH_ENV = "MLPERF_SCRATCH_PATH"  # NVIDIA's name, read here only (never deeper in the code)
DEFAULT_SCRATCH = Path("build/scratch")


@dataclass(frozen=True)
class RunOptions:
    scenario: Scenario
    test_mode: TestMode
    backend: str | None
    log_dir: Path | None
    system_name: str | None
    batch_size: int | None
    min_duration_ms: int | None
    min_query_count: int | None
    offline_expected_qps: float | None
    server_target_qps: float | None
    user_conf: Path | None
    fast: bool
    model_path: Path | None
    data_dir: Path | None
    preprocessed_dir: Path | None
    scratch_path: Path
    count: int | None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse prints the whole usage block; one line says it better and keeps logs readable.
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = _Parser(prog=prog, description="Run an MLPerf Inference benchmark under LoadGen.")
    add = parser.add_argument
    add(
        "--scenario",
        type=Scenario.parse,
        default=Scenario.OFFLINE,
        help="Offline, Server, SingleStream or MultiStream (each target sets its own)",
    )
    add(
        "--test_mode",
        type=TestMode.parse,
        default=TestMode.PERFORMANCE_ONLY,
        help="PerformanceOnly (default), AccuracyOnly, SubmissionRun or FindPeakPerformance",
    )
    add("--backend", help="inference backend (default: the benchmark's)")
    add(
        "--log_dir",
        type=Path,
        help="where LoadGen's logs and result.json go (default: build/logs/<time>/<system>/...)",
    )
    add("--system_name", help="system id used in the log path (default: detected)")
    add("--batch_size", type=_positive_int, help="samples per inference call")
    add("--min_duration_ms", type=_positive_int, help="LoadGen minimum test duration")
    add("--min_query_count", type=_positive_int, help="LoadGen minimum query count")
    add("--offline_expected_qps", type=_positive_float, help="Offline: expected samples/s")
    add("--server_target_qps", type=_positive_float, help="Server: target queries/s")
    add("--user_conf", type=Path, help="a LoadGen user.conf applied over mlperf.conf")
    add(
        "--fast",
        action="store_true",
        help=f"cap the minimum duration at {FAST_MIN_DURATION_MS // 1000} s",
    )
    add("--model_path", type=Path, help="model file (default: from the scratch path, else stand-in)")
    add("--data_dir", type=Path, help="raw dataset (default: from the scratch path, else generated)")
    add("--preprocessed_dir", type=Path, help="preprocessed samples (default: under scratch path)")
    add(
        "--scratch_path",
        type=Path,
        help=f"models, data, preprocessed samples (default: ${SCRATCH_ENV}, else {DEFAULT_SCRATCH})",
    )
    add("--count", type=_positive_int, help="use only the first N samples (accuracy runs)")
    return parser


def parse_run_options(
    argv: Sequence[str], prog: str, environ: Mapping[str, str] = os.environ
) -> RunOptions:
    args = build_parser(prog).parse_args(list(argv))
    scratch_path = args.scratch_path or Path(environ.get(SCRATCH_ENV) or DEFAULT_SCRATCH)
    return RunOptions(
        scenario=args.scenario,
        test_mode=args.test_mode,
        backend=args.backend,
        log_dir=args.log_dir,
        system_name=args.system_name,
        batch_size=args.batch_size,
        min_duration_ms=args.min_duration_ms,
        min_query_count=args.min_query_count,
        offline_expected_qps=args.offline_expected_qps,
        server_target_qps=args.server_target_qps,
        user_conf=args.user_conf,
        fast=args.fast,
        model_path=args.model_path,
        data_dir=args.data_dir,
        preprocessed_dir=args.preprocessed_dir,
        scratch_path=scratch_path,
        count=args.count,
    )
