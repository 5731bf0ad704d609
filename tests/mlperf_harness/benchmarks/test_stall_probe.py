"""stall_probe: a real probe process held up by SIGSTOP (as a host that stops running it), its
record, and its errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.stall_probe import (
    FORMAT,
    Stall,
    StallRecord,
    main,
    probe,
    read_stall_record,
)
from mlperf_harness.errors import HarnessError

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def test_a_probe_stopped_by_the_host_records_when_and_how_long(tmp_path: Path) -> None:
    out = tmp_path / "stalls.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "mlperf_harness.benchmarks.stall_probe", "--out", str(out)],
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("stall_probe: noting wake-ups over 5 ms late")
        time.sleep(0.05)
        stopped = time.monotonic_ns()
        process.send_signal(signal.SIGSTOP)
        time.sleep(0.08)
        process.send_signal(signal.SIGCONT)
        resumed = time.monotonic_ns()
        time.sleep(0.1)
    finally:
        process.terminate()
    assert process.wait(timeout=20) == 0
    record = read_stall_record(out)
    assert record.period_ns == 1_000_000 and record.late_ns == 5_000_000
    assert record.started_ns < stopped < resumed < record.ended_ns
    held = [stall for stall in record.stalls if stall.late_ns >= 60_000_000]
    assert len(held) == 1  # the stop, and nothing else that long
    assert held[0].start_ns <= stopped  # the sleep it interrupted had begun
    assert resumed <= held[0].start_ns + record.period_ns + held[0].late_ns + 5_000_000
    assert record.late_within(stopped, resumed)


def test_late_within_spans_each_sleep_from_its_start_to_the_wake_up() -> None:
    record = StallRecord(1_000, 5_000, 0, 100_000, (Stall(10_000, 20_000),), 0)
    assert record.late_within(30_000, 40_000)  # the sleep ran until 10,000 + 1,000 + 20,000
    assert record.late_within(0, 10_001)
    assert not record.late_within(31_000, 50_000)
    assert not record.late_within(0, 10_000)


def test_a_probe_keeps_only_late_wake_ups() -> None:
    """Sleeping 1 ms with a 1 s threshold on an idle loop: a handful of rounds, nothing kept."""
    rounds = iter(range(5))
    record = probe(1_000_000, 1_000_000_000, lambda: next(rounds, None) is not None)
    assert record.stalls == () and record.dropped == 0
    assert record.ended_ns - record.started_ns >= 5_000_000


def test_the_record_round_trips(tmp_path: Path) -> None:
    record = StallRecord(1_000_000, 5_000_000, 10, 20, (Stall(12, 7_000_000),), 3)
    path = tmp_path / "stalls.json"
    path.write_text(json.dumps(record.to_json()))
    assert read_stall_record(path) == record


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ('{"format": "other"}', "is not a stall probe's record"),
        (json.dumps({"format": FORMAT, "stalls": []}), "is malformed"),
    ],
)
def test_bad_records_are_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "stalls.json"
    path.write_text(content)
    with pytest.raises(HarnessError, match=message):
        read_stall_record(path)


def test_a_period_of_zero_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path / "stalls.json"), "--period_ms", "0"])
    assert exit_info.value.code == 2
    assert "must be positive" in capsys.readouterr().err
    assert not (tmp_path / "stalls.json").exists()
