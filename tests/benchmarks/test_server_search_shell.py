"""device_lib.sh's server_search in bash, as the device scripts call it, with harness runs of the
harness_overhead benchmark (null backend: no GPU, no model) through the real CLI and LoadGen; each
run a few hundred milliseconds of queries. Whether a run is VALID depends on this machine, so the
tests check what the search does with the verdicts it read, not the verdicts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The modules the script runs with `python -m` (imported here so that Pants ships them).
import mlperf_harness.benchmarks.gpu_table
import mlperf_harness.benchmarks.harness_overhead.main
import mlperf_harness.benchmarks.server_search
import mlperf_harness.benchmarks.stall_probe  # noqa: F401

LIB = Path("benchmarks/device_lib.sh")
# A latency bound of 100 ms, not mlperf.conf's 10 (test_harness_overhead says why).
USER_CONF = "harness_overhead.Server.target_latency = 100\n"


def _search(tmp_path: Path, before: str, call: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`call` (a server_search) in bash with device_lib.sh sourced, harness_overhead's runs
    writing under tmp_path; `before` runs first (what a script did earlier in its call)."""
    (tmp_path / "user.conf").write_text(USER_CONF)
    script = f"""
set -euo pipefail
source {LIB}
module=mlperf_harness.benchmarks.harness_overhead
logs={tmp_path}/logs results={tmp_path}/results
mkdir -p "$logs" "$results"
common=(--user_conf {tmp_path}/user.conf)
{before}
{call}
"""
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run(
        [bash, "-c", script],
        env={
            **os.environ,
            "PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(sys.path),
            "GPU_MONITOR": "0",
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


RUN_FLAGS = "--scenario Server --min_duration_ms 300 --min_query_count 1000"


def test_each_run_follows_the_verdicts_read_and_the_table_reports_the_best(
    tmp_path: Path,
) -> None:
    done = _search(tmp_path, "", f"server_search server 2000 0.1 2 {RUN_FLAGS}")
    assert done.returncode == 0, done.stdout + done.stderr
    attempts = re.findall(
        r"^server search server: run (\d) at ([\d,.]+) queries/s: (VALID|INVALID)",
        done.stdout,
        re.MULTILINE,
    )
    assert [(n, target) for n, target, _ in attempts] == [("1", "2,000"), ("2", attempts[1][1])]
    # The second target is one step (10% of the start) up from a VALID first run, down otherwise.
    first_valid = attempts[0][2] == "VALID"
    assert attempts[1][1] == ("2,200" if first_valid else "1,800")
    results = tmp_path / "results"
    second = "server_q2200" if first_valid else "server_q1800"
    assert sorted(path.stem for path in results.glob("*.json")) == sorted(["server_q2000", second])
    first = json.loads((results / "server_q2000.json").read_text())
    assert first["settings"]["server_target_qps"]["value"] == 2000.0
    assert first["result_valid"] is first_valid
    summary = done.stdout.strip().splitlines()[-1]
    table = subprocess.run(
        [sys.executable, "-m", "mlperf_harness.benchmarks.gpu_table", str(results)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert summary in table.splitlines()  # the script's closing table says the same
    if any(verdict == "VALID" for _, _, verdict in attempts):
        assert summary.startswith("server search server: best VALID")
    else:
        assert summary.startswith("server search server: no VALID run of 2 runs")


def test_no_run_starts_that_would_end_past_the_budget(tmp_path: Path) -> None:
    # An earlier run of this call took 100 s: with 50 s of budget, not even the first target runs.
    done = _search(
        tmp_path, "longest=100", f"server_search server 2000 0.1 3 {RUN_FLAGS}", BUDGET_S="50"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("server_q2000: not run: ") and "budget 50 s" in lines[0]
    assert lines[1:] == ["server search server: no run"]
    assert not list((tmp_path / "results").glob("*.json"))


def test_a_target_in_harness_flags_is_refused(tmp_path: Path) -> None:
    done = _search(
        tmp_path,
        "",
        f"server_search server 2000 0.1 3 {RUN_FLAGS}",
        HARNESS_FLAGS="--server_target_qps 500",
    )
    assert done.returncode == 1
    assert "HARNESS_FLAGS sets --server_target_qps" in done.stderr


def test_the_start_is_a_share_of_the_raw_rate_or_the_one_given(tmp_path: Path) -> None:
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps({"engines": [{"samples_per_second": 21078.0}]}))
    call = f'server_start {raw}; echo "[$(server_start {tmp_path}/absent.json)]"'
    # Absent: nothing, so that the search's first run takes its own rate (no guessed start).
    assert _search(tmp_path, "", call).stdout.splitlines() == ["18970.2", "[]"]
    given = _search(tmp_path, "", call, SERVER_START="17000", SERVER_SHARE="0.5")
    assert given.stdout.splitlines() == ["17000", "[17000]"]
    assert _search(tmp_path, "", call, SERVER_SHARE="0.5").stdout.splitlines()[0] == "10539"


def test_offline_is_told_the_raw_rate_or_nothing(tmp_path: Path) -> None:
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps({"engines": [{"samples_per_second": 16155.3}]}))
    offline = tmp_path / "offline.json"
    offline.write_text(json.dumps({"samples_per_second": 23.7}))
    call = (
        f"offline_rate_flags {raw}; offline_rate_flags {offline}; "
        f'echo "[$(offline_rate_flags {tmp_path}/absent.json)]"'
    )
    # Absent: no flag, so that the run takes its config's rate or times its engine at start.
    lines = _search(tmp_path, "", call).stdout.splitlines()
    assert lines == ["--offline_expected_qps 16155.3", "--offline_expected_qps 23.7", "[]"]
