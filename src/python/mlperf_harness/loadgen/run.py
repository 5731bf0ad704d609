"""Run one LoadGen test into a log directory and return its parsed result."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import LoadgenResult, parse_logs
from mlperf_harness.loadgen.settings import LoadgenSettings, to_test_settings


def prepare_log_dir(log_dir: Path) -> Path:
    """Create the log directory and prove it is writable before LoadGen (which fails silently) runs."""
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        probe = log_dir / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise HarnessError(f"cannot write logs to {log_dir}: {error.strerror or error}") from error
    return log_dir


def run_test(
    sut: Any,
    qsl: Any,
    settings: LoadgenSettings,
    log_dir: Path,
    defaults: LoadgenSettings | None = None,
    audit_config: Path | None = None,
) -> LoadgenResult:
    """Run one test; `defaults` are the benchmark's settings, which user.conf may override.
    `audit_config` makes it a compliance audit run; without it the run is never one."""
    prepare_log_dir(log_dir)
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False  # the trace costs throughput and is not part of a submission
    test_settings = to_test_settings(settings, defaults)
    if audit_config is not None:
        if not audit_config.is_file():
            raise HarnessError(f"audit config not found: {audit_config}")
        lg.StartTestWithLogSettings(sut, qsl, test_settings, log_settings, str(audit_config))
    else:
        # LoadGen would read ./audit.config when given no path: name one in an empty directory of
        # our own, so a stray file in the working directory cannot turn this into an audit run.
        with tempfile.TemporaryDirectory(prefix="mlperf-no-audit-") as empty:
            absent = str(Path(empty) / "audit.config")
            lg.StartTestWithLogSettings(sut, qsl, test_settings, log_settings, absent)
    return parse_logs(log_dir)
