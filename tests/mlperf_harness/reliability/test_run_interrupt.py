"""Ctrl-C and SIGTERM during LoadGen's timed run, sent to real harness processes: the run ends
within 2 s with one line naming its partial logs, nothing in the log directory claims a finished
run, a second signal ends it at once, and no process is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from reliability_support import Harness, Started

from mlperf_harness.benchmarks.harness_overhead import main as overhead_main
from mlperf_harness.loadgen import watchdog
from mlperf_harness.loadgen.interruption import INTERRUPTED_FILE

# Child processes run it as a module; the import also makes Pants ship it with the test.
OVERHEAD = overhead_main.__name__
LIMIT_S = 2.0  # from the signal to the process's end, teardown included


def _start(harness: Harness, tmp_path: Path, log_dir: Path, *args: str) -> Started:
    command = harness.command("--log_dir", log_dir, *args, module=OVERHEAD)
    return harness.start(command, tmp_path / "output.txt")


def _wait_for_timed_run(run: Started, log_dir: Path, timeout: float = 120) -> None:
    """Until LoadGen has generated its queries and logged so: the timed run is under way."""
    detail = log_dir / "mlperf_log_detail.txt"
    deadline = time.monotonic() + timeout
    while not (detail.is_file() and "generated_query_count" in detail.read_text(errors="replace")):
        assert run.process.poll() is None, f"the run ended early:\n{run.output()}"
        assert time.monotonic() < deadline, f"the timed run never started:\n{run.output()}"
        time.sleep(0.02)


def _time_to_exit(run: Started, limit: float = 60) -> float:
    started = time.monotonic()
    try:
        run.process.wait(timeout=limit)
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
    return time.monotonic() - started


def _processes_naming(text: str) -> list[int]:
    """Processes whose command line holds `text` (a watchdog names its run's log directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _assert_nothing_left(log_dir: Path) -> None:
    deadline = time.monotonic() + 5
    while _processes_naming(str(log_dir)):
        assert time.monotonic() < deadline, f"left running: {_processes_naming(str(log_dir))}"
        time.sleep(0.05)


def _assert_partial_logs(log_dir: Path, output: str, signal_name: str) -> None:
    names = {path.name for path in log_dir.iterdir()}
    assert INTERRUPTED_FILE in names, names
    # Nothing that claims a finished run: ours, and an earlier run's, are gone.
    assert not names & {"result.json", "accuracy.txt"}, names
    assert (log_dir / "mlperf_log_summary.txt").read_text() == ""
    lines = [line for line in output.splitlines() if "interrupted" in line]
    assert lines == [line for line in output.splitlines() if line.strip()][-1:], output
    assert f"interrupted by {signal_name}" in lines[0] and str(log_dir) in lines[0], output
    assert "Traceback" not in output and "terminate called" not in output, output


def _earlier_finished_run(log_dir: Path) -> None:
    log_dir.mkdir(parents=True)
    (log_dir / "result.json").write_text(json.dumps({"result_valid": True}))
    (log_dir / "accuracy.txt").write_text("accuracy=100.000%, good=40, total=40\n")


@pytest.mark.parametrize(
    ("signum", "loadgen_path"),
    [
        (signal.SIGINT, "python"),
        (signal.SIGINT, "native"),  # LoadGen's C++ API: the same handler, the same partial logs
        pytest.param(signal.SIGTERM, "python", marks=pytest.mark.slow),
    ],
)
def test_a_signal_ends_the_timed_run_at_once(
    signum: signal.Signals, loadgen_path: str, harness: Harness, tmp_path: Path
) -> None:
    log_dir = tmp_path / "logs"
    _earlier_finished_run(log_dir)  # a reused --log_dir
    flags = ["--scenario", "Server", "--min_duration_ms", "60000", "--loadgen_path", loadgen_path]
    run = _start(harness, tmp_path, log_dir, *flags)
    _wait_for_timed_run(run, log_dir)
    time.sleep(0.5)
    run.process.send_signal(signum)
    took = _time_to_exit(run)
    assert run.process.returncode == 130, run.output()
    assert took < LIMIT_S, f"{took:.2f} s from {signum.name} to exit"
    _assert_partial_logs(log_dir, run.output(), signum.name)
    _assert_nothing_left(log_dir)


@pytest.mark.slow  # a few million samples handed over: seconds of CPU
def test_a_run_whose_handler_cannot_run_is_ended_by_its_watchdog(
    harness: Harness, tmp_path: Path
) -> None:
    # LoadGen hands the whole Offline query to the harness at once, turning each of its samples
    # into a Python object with the GIL held (seconds for a few million samples): Python's own
    # handler cannot run then, the watchdog ends the run.
    log_dir = tmp_path / "logs"
    args = ["--scenario", "Offline", "--min_duration_ms", "20000"]
    run = _start(harness, tmp_path, log_dir, *args, "--offline_expected_qps", "200000")
    _wait_for_timed_run(run, log_dir)
    run.process.send_signal(signal.SIGINT)
    took = _time_to_exit(run)
    # 130 where the handler got the GIL in time (a fast machine), else the watchdog's SIGKILL.
    assert run.process.returncode in (130, -signal.SIGKILL), run.output()
    assert took < LIMIT_S, f"{took:.2f} s from SIGINT to exit"
    _assert_partial_logs(log_dir, run.output(), "SIGINT")
    _assert_nothing_left(log_dir)


@pytest.mark.slow
def test_a_second_signal_ends_the_run_at_once(harness: Harness, tmp_path: Path) -> None:
    # The first signal's handler hangs marking the logs (a named pipe that nobody reads stands in
    # for a hung file system); the second signal must not wait for it, nor for the watchdog.
    log_dir = tmp_path / "logs"
    run = _start(harness, tmp_path, log_dir, "--scenario", "Server", "--min_duration_ms", "60000")
    _wait_for_timed_run(run, log_dir)
    os.mkfifo(log_dir / INTERRUPTED_FILE)
    run.process.send_signal(signal.SIGINT)
    time.sleep(0.1)
    run.process.send_signal(signal.SIGINT)
    took = _time_to_exit(run)
    assert run.process.returncode == -signal.SIGINT, run.output()  # the kernel's default action
    assert took < watchdog.GRACE_S, f"{took:.2f} s from the second SIGINT to exit"
    assert not (log_dir / "result.json").exists()
    _assert_nothing_left(log_dir)


def test_the_watchdog_kills_at_a_second_signal_without_waiting(tmp_path: Path) -> None:
    """The watchdog's side on its own, a real process as the stuck run."""
    stuck = subprocess.Popen(["sleep", "60"])
    read_end, write_end = os.pipe()
    try:
        watcher = threading.Thread(
            target=watchdog.watch,
            args=(read_end, stuck.pid, tmp_path, INTERRUPTED_FILE, "test"),
        )
        watcher.start()
        sent = time.monotonic()
        os.write(write_end, bytes([signal.SIGINT, signal.SIGINT]))
        stuck.wait(timeout=10)
        assert time.monotonic() - sent < watchdog.GRACE_S
        assert stuck.returncode == -signal.SIGKILL
        watcher.join(timeout=10)
        assert "interrupted by SIGINT" in (tmp_path / INTERRUPTED_FILE).read_text()
    finally:
        stuck.kill()
        os.close(write_end)
        os.close(read_end)
