"""A run log directory as run_harness leaves it (LoadGen's logs, result.json, user.conf,
accuracy.txt), read for staging, and the engine that ran it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.engines.cache import SPEC_FILE, read_engine_spec
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import ACCURACY_FILE, DETAIL_FILE, SUMMARY_FILE
from mlperf_harness.run_files import ACCURACY_TXT, RESULT_FILE

PERFORMANCE_FILES = (SUMMARY_FILE, DETAIL_FILE)
ACCURACY_FILES = (SUMMARY_FILE, DETAIL_FILE, ACCURACY_FILE, ACCURACY_TXT)
PERFORMANCE_MODE = "PerformanceOnly"
ACCURACY_MODE = "AccuracyOnly"


@dataclass(frozen=True)
class LoggedRun:
    """A run log directory and its result.json."""

    path: Path
    record: dict[str, Any]

    @property
    def mode(self) -> str:
        return str(self.record.get("test_mode", ""))

    @property
    def audit(self) -> str | None:
        value = self.record.get("audit_test")
        return str(value) if value else None

    @property
    def is_performance(self) -> bool:
        return self.mode == PERFORMANCE_MODE and not self.audit

    @property
    def is_accuracy(self) -> bool:
        return self.mode == ACCURACY_MODE and not self.audit

    @property
    def valid(self) -> bool:
        return self.record.get("result_valid") is True

    @property
    def accuracy(self) -> dict[str, Any] | None:
        verdict = self.record.get("accuracy")
        return verdict if isinstance(verdict, dict) else None

    @property
    def accuracy_passed(self) -> bool:
        return self.accuracy is not None and self.accuracy.get("passed") is True

    @property
    def provenance(self) -> dict[str, Any]:
        provenance = self.record.get("provenance")
        return provenance if isinstance(provenance, dict) else {}

    @property
    def finished(self) -> float:
        """When result.json was written: the run's end."""
        return (self.path / RESULT_FILE).stat().st_mtime

    def setting(self, name: str) -> Any:
        entry = (self.record.get("settings") or {}).get(name)
        return entry.get("value") if isinstance(entry, dict) else None

    @property
    def signature(self) -> tuple[Any, ...]:
        """What must be equal for runs to measure the same thing: backend, precision, model, and
        the variant (submission model, logged response type) where the run records one."""
        record = self.record
        return (
            record.get("backend"),
            self.setting("precision"),
            record.get("model_sha256"),
            record.get("stand_in"),
            record.get("submission_model"),
            record.get("output_dtype"),
        )

    def describe_signature(self) -> str:
        backend, precision, model, stand_in, submission_model, output_dtype = self.signature
        model_text = f"model {str(model)[:12]}" if model else "no model"
        stand_in_text = ", stand-in" if stand_in else ""
        variant = ", ".join(str(v) for v in (submission_model, output_dtype) if v)
        variant_text = f" ({variant})" if variant else ""
        return (
            f"{backend} {precision or 'default precision'}, {model_text}{stand_in_text}"
            f"{variant_text}"
        )

    def engine_spec(self) -> EngineSpec | None:
        """The spec recorded beside the run's engine (engine.json); None for a backend without
        engines (null) or an engine no longer on disk. A HarnessError if it is unreadable."""
        engine = self.provenance.get("engine")
        if not engine or not (Path(engine).parent / SPEC_FILE).is_file():
            return None
        spec, _engine_file = read_engine_spec(Path(engine).parent)
        return spec

    def precision(self, engine: EngineSpec | None) -> str:
        if engine is not None:
            return engine.precision
        return str(self.setting("precision") or "fp32")  # every benchmark's default precision


def read_run(path: Path) -> LoggedRun:
    result = path / RESULT_FILE
    try:
        record = json.loads(result.read_text())
    except FileNotFoundError:
        raise HarnessError(f"{path} holds no {RESULT_FILE}: not a run log directory") from None
    except (OSError, ValueError) as error:
        raise HarnessError(f"{result} is not readable: {error}") from None
    if not isinstance(record, dict):
        raise HarnessError(f"{result} is not a JSON object")
    return LoggedRun(path, record)


def read_text(path: Path) -> str:
    """A text file's content; "" when it cannot be read (its absence is checked elsewhere)."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
