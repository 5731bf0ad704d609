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
    assert "90.0%" in rows["2"] and "VALID/INVALID" in rows["2"]
    assert "1.00x" in rows["1"] and "VALID/-" in rows["1"]


def test_an_empty_directory_says_so(tmp_path: Path) -> None:
    assert "no offline_gpus" in table(tmp_path)
