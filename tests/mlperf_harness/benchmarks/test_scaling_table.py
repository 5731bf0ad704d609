"""The device scaling script's table: ratios against one GPU and Server against Offline."""

from __future__ import annotations

import json
from pathlib import Path

from mlperf_harness.benchmarks.scaling_table import table


def _write(directory: Path, name: str, record: dict[str, object]) -> None:
    (directory / f"{name}.json").write_text(json.dumps(record))


def test_the_table_compares_each_size_with_one_gpu(tmp_path: Path) -> None:
    for n, rate in ((1, 30_000.0), (2, 59_000.0)):
        _write(tmp_path, f"offline_gpus{n}", {"result_valid": True, "samples_per_second": rate})
    _write(
        tmp_path,
        "server_gpus2",
        {
            "result_valid": True,
            "completed_samples_per_second": 53_100.0,
            "latency_ns": {"p99": 16_000_000},  # over the bound: INVALID whatever LoadGen said
        },
    )
    rows = {line.split()[0]: line for line in table(tmp_path).splitlines()[1:3]}
    assert "1.97x" in rows["2"] and "1.95x" in rows["2"]  # the ratio and its goal
    # Server's one run is INVALID (p99): no VALID rate to show, "0/1" runs VALID.
    assert "53,100" not in rows["2"] and rows["2"].split()[-2:] == ["VALID", "0/1"]
    assert "1.00x" in rows["1"] and rows["1"].split()[-2:] == ["VALID", "-"]


def test_an_empty_directory_says_so(tmp_path: Path) -> None:
    assert "no offline_gpus" in table(tmp_path)


def _server(
    directory: Path, n: int, target: float, completed: float, valid: bool, p99_ms: float
) -> None:
    _write(
        directory,
        f"server_gpus{n}_q{target:.0f}",
        {
            "result_valid": valid,
            "completed_samples_per_second": completed,
            "latency_ns": {"p99": p99_ms * 1e6},
            "settings": {"server_target_qps": {"value": target, "from": "command line"}},
        },
    )


def test_server_s_row_is_the_search_s_best_valid_run(tmp_path: Path) -> None:
    for n, rate in ((1, 50_000.0), (8, 390_000.0)):
        _write(tmp_path, f"offline_gpus{n}", {"result_valid": True, "samples_per_second": rate})
    _server(tmp_path, 1, 44_000, 44_010.0, True, 7.0)
    _server(tmp_path, 8, 352_000, 351_900.0, True, 9.5)
    _server(tmp_path, 8, 366_100, 366_000.0, False, 40.0)  # INVALID: over the bound
    _server(tmp_path, 8, 359_000, 358_950.0, True, 16.0)  # LoadGen's VALID, but p99 > 15 ms
    rows = {line.split()[0]: line for line in table(tmp_path).splitlines()[1:3]}
    assert "351,900" in rows["8"] and "9.50" in rows["8"]  # the best VALID run, its p99
    assert "8.00x" in rows["8"]  # against one GPU's best VALID Server
    assert "90.2%" in rows["8"]  # of Offline at eight
    assert "1/3 <359,000" in rows["8"]  # VALID of the runs; the lowest INVALID target above it
    assert "1/1" in rows["1"] and "<" not in rows["1"]
