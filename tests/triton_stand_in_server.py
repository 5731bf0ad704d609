"""What the tests of one benchmark over Triton share (tests/mlperf_harness/triton/test_*_over_triton.py):
a real server of the benchmark's stand-in, and the accuracy log its runs are compared by."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.triton.local_server import free_port
from mlperf_harness.triton.server_process import serve_command, start_server

SERVER_LIFETIME_S = 900


def direct_accuracy_run(
    benchmark: Benchmark, scratch: Path, workdir: Path, count: int
) -> list[str]:
    """The flags of an AccuracyOnly run of `count` samples, once the direct harness has run them
    (logs in workdir/direct): that run builds the stand-in the server then finds."""
    flags = ["--scratch_path", str(scratch), "--test_mode", "AccuracyOnly", "--count", str(count)]
    assert run_benchmark_cli(benchmark, [*flags, "--log_dir", str(workdir / "direct")]) == 0
    return flags


@contextlib.contextmanager
def stand_in_server(benchmark: Benchmark, scratch: Path, workdir: Path) -> Iterator[list[str]]:
    """One Triton server of `benchmark` over the stand-in a direct run built in `scratch`: yields the
    flags that run against it, and stops it at the end (it must exit 0)."""
    port = free_port()
    command = serve_command(type(benchmark).__module__, ["--scratch_path", str(scratch)], port)
    server = start_server(command, workdir / "server.log", port, lifetime_s=SERVER_LIFETIME_S)
    try:
        yield ["--harness", "triton", "--triton_servers", str(server.address)]
    finally:
        assert server.stop() == 0, server.log.read_text()


def accuracy_log(logs: Path, count: int) -> dict[int, str]:
    """Each sample's logged response (hex) by its index; exactly `count` samples, once each."""
    entries: list[dict[str, Any]] = json.loads((logs / "mlperf_log_accuracy.json").read_text())
    by_index = {entry["qsl_idx"]: entry["data"] for entry in entries}
    assert len(by_index) == len(entries) == count
    return by_index
