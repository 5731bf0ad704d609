"""A run's log directory: its own, always, and holding nothing of an earlier run.

The default directory is build/logs/<time>/<system>/<benchmark>/<scenario>/<mode>; two runs started
in the same second would share it, so it is created exclusively and a taken name gets a suffix
(<time>-2, <time>-3, ...). It is created only once preparation is over, so a run that fails before
it starts leaves no empty timestamped folder, and removed again if the run fails before LoadGen
writes into it. A reused --log_dir loses the files of the earlier run as the new one starts, so an
earlier result.json or accuracy.txt can never stand beside a new run's broken logs.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.timeline import TIMELINE_FILE
from mlperf_harness.loadgen.interruption import INTERRUPTED_FILE
from mlperf_harness.loadgen.results import ACCURACY_FILE, DETAIL_FILE, SUMMARY_FILE
from mlperf_harness.loadgen.run import prepare_log_dir
from mlperf_harness.run_files import ACCURACY_TXT, RESULT_FILE, USER_CONF_FILE
from mlperf_harness.submission.audits import AUDIT_CONFIG_FILE

DEFAULT_LOG_ROOT = Path("build/logs")
# Every file a run writes into its log directory (the report's page too: an earlier run's page is
# as misleading as its result.json). Files of other names are the user's and stay.
RUN_OUTPUTS = (
    RESULT_FILE,
    USER_CONF_FILE,
    ACCURACY_TXT,
    AUDIT_CONFIG_FILE,
    SUMMARY_FILE,
    DETAIL_FILE,
    ACCURACY_FILE,
    "mlperf_log_trace.json",
    TIMELINE_FILE,
    INTERRUPTED_FILE,
    "report.html",
)
_MAX_SUFFIX = 1000


def check_log_dir(path: Path) -> None:
    """Before preparation (minutes): refuse a log directory that could not be created or written,
    without creating anything yet."""
    if path.exists() and not path.is_dir():
        raise HarnessError(f"cannot write logs to {path}: it is a file, not a directory")
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        raise HarnessError(f"cannot write logs to {path}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise HarnessError(f"cannot write logs to {path}: {existing} is not writable")


def default_tail(system: str, benchmark: str, scenario: str, last: str) -> Path:
    return Path(system) / benchmark / scenario / last


def create_default_log_dir(tail: Path, root: Path = DEFAULT_LOG_ROOT) -> Path:
    """root/<time>/tail, created here and by no other run: the first free <time>[-n]."""
    stamp = time.strftime("%Y.%m.%d-%H.%M.%S")
    for n in range(1, _MAX_SUFFIX + 1):
        candidate = root / (stamp if n == 1 else f"{stamp}-{n}") / tail
        candidate.parent.mkdir(parents=True, exist_ok=True)
        try:
            candidate.mkdir()  # atomic: of two runs asking for one name, one gets it
        except FileExistsError:
            continue
        except OSError as error:
            raise HarnessError(
                f"cannot write logs to {candidate}: {error.strerror or error}"
            ) from error
        return prepare_log_dir(candidate)
    raise HarnessError(f"{_MAX_SUFFIX} runs started at {stamp} under {root}: give --log_dir")


def clear_run_outputs(log_dir: Path) -> None:
    """Remove what an earlier run left in a reused log directory."""
    for name in RUN_OUTPUTS:
        path = log_dir / name
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as error:
            raise HarnessError(
                f"cannot remove the earlier run's {path}: {error.strerror or error}"
            ) from error


def remove_if_empty(log_dir: Path, root: Path | None) -> None:
    """A failed run's directory, if nothing was written into it, and its parents up to `root`
    while they are empty too (the timestamped folder of a default directory)."""
    stop = root.resolve() if root is not None else None
    current = log_dir
    while True:
        with contextlib.suppress(OSError):  # not empty, or gone: leave it
            current.rmdir()
        if current.exists() or stop is None:
            return
        current = current.parent
        if current.resolve() == stop or stop not in current.resolve().parents:
            return
