"""Run one LoadGen test into a log directory and return its parsed result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.interruption import call_interruptibly
from mlperf_harness.loadgen.results import LoadgenResult, parse_logs
from mlperf_harness.loadgen.settings import LoadgenSettings, to_test_settings

# LoadGen reads ./audit.config when it is given no path, so a stray file in the working directory
# would turn a run into an audit. A run that is no audit names this path instead: /dev/null is a
# device on every POSIX system, so nothing can ever exist below it (and no temporary directory is
# left behind when an interrupted run leaves with os._exit).
NO_AUDIT_CONFIG = "/dev/null/audit.config"


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


def audit_config_path(audit_config: Path | None) -> str:
    """What LoadGen is told to read as its audit.config: the audit's file, or a path that cannot
    exist when the run is no audit."""
    if audit_config is not None and not audit_config.is_file():
        raise HarnessError(f"audit config not found: {audit_config}")
    return NO_AUDIT_CONFIG if audit_config is None else str(audit_config)


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
    config = audit_config_path(audit_config)
    # On a helper thread, so that Ctrl-C is handled while LoadGen runs (loadgen/interruption.py).
    call_interruptibly(
        lambda: lg.StartTestWithLogSettings(sut, qsl, test_settings, log_settings, config)
    )
    return parse_logs(log_dir).as_scenario(settings.scenario.value)
