"""device_table: the Triton device script's closing table, from result files named as the script
names them (the figures here are made up: the comparisons are what is checked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlperf_harness.triton.device_table import format_table, main


def _write(directory: Path, name: str, **record: Any) -> None:
    (directory / f"{name}.json").write_text(json.dumps({"result_valid": True, **record}))


def test_each_triton_run_is_set_against_its_direct_counterpart(tmp_path: Path) -> None:
    _write(tmp_path, "direct_offline_g1", samples_per_second=30000.0)
    _write(tmp_path, "direct_offline_host_g1", samples_per_second=20000.0)
    _write(tmp_path, "triton_offline_s1", samples_per_second=27000.0)
    _write(tmp_path, "triton_offline_s2", samples_per_second=51300.0)
    _write(
        tmp_path,
        "direct_server_g1_q26500",
        completed_samples_per_second=26500.0,
        scheduled_samples_per_second=26510.0,
    )
    _write(
        tmp_path,
        "triton_server_s1_q26500",
        completed_samples_per_second=23850.0,
        triton={"lost_servers": 0, "resent_samples": 0, "samples": "staged"},
    )
    _write(tmp_path, "unrelated", samples_per_second=1.0)  # not a name the script writes
    lines = {line.split()[0]: line for line in format_table(tmp_path).splitlines()}
    assert "90.0% of direct on 1 GPU(s) (goal 90%)" in lines["triton_offline_s1"]
    assert "135.0% of direct from host memory" in lines["triton_offline_s1"]
    assert "1.90x one server (goal 1.8x)" in lines["triton_offline_s2"]
    assert (
        "90.0% of direct Server (VALID at 26,510; goal 85%, VALID)"
        in lines["triton_server_s1_q26500"]
    )
    assert "staged, lost 0, re-sent 0" in lines["triton_server_s1_q26500"]
    assert "unrelated" not in lines


def test_a_directory_is_required(tmp_path: Path) -> None:
    assert main([str(tmp_path / "absent")]) == 2
    assert main([]) == 2
