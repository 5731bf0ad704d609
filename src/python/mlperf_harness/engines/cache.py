"""Engines on disk: one directory per key, holding the engine and the spec it was built from.

Building goes to a temporary directory that is renamed into place, so an interrupted build never
leaves an engine that looks finished; the next build of that key removes what it left. One build of
a key at a time (mlperf_harness.scratch_lock): a second run waits for it and uses its engine.
Loading re-reads the recorded spec and refuses any engine whose spec differs from the one asked for.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mlperf_harness.atomic import remove_stale_staging, staging_directory, write_json_atomic
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.errors import HarnessError
from mlperf_harness.scratch_lock import build_once
from mlperf_harness.write_errors import space_problem, write_error

SPEC_FILE = "engine.json"

# Builds the engine into the given (temporary) directory and returns the engine file's name.
Builder = Callable[[Path], str]


def read_engine_spec(engine_dir: Path) -> tuple[EngineSpec, str]:
    """The spec an engine directory records and its engine file's name."""
    try:
        record = json.loads((engine_dir / SPEC_FILE).read_text())
        return EngineSpec.from_json(record["spec"]), str(record["engine_file"])
    except (OSError, ValueError, KeyError, TypeError, HarnessError) as error:
        raise HarnessError(f"{engine_dir} holds no readable {SPEC_FILE}: {error}") from error


def check_engine(engine_dir: Path, wanted: EngineSpec) -> Path:
    """The engine file in engine_dir, if it was built from exactly `wanted`; else a clear error."""
    recorded, engine_file = read_engine_spec(engine_dir)
    if recorded != wanted:
        differences = "; ".join(wanted.differences(recorded))
        raise HarnessError(
            f"refusing engine {engine_dir}: built for other inputs ({differences}); "
            "rebuild it with generate_engines"
        )
    path = engine_dir / engine_file
    if not path.is_file():
        raise HarnessError(f"engine {engine_dir} is missing its engine file {engine_file}")
    return path


class EngineCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def directory(self, spec: EngineSpec) -> Path:
        return self.root / spec.benchmark / spec.name

    def get(self, spec: EngineSpec) -> Path | None:
        engine_dir = self.directory(spec)
        return check_engine(engine_dir, spec) if engine_dir.is_dir() else None

    def get_or_build(self, spec: EngineSpec, build: Builder) -> tuple[Path, bool]:
        """(engine file, whether it was built now). Runs sharing the cache build a key once: the
        others wait for that build and use its engine."""

        def find() -> tuple[Path, bool] | None:
            cached = self.get(spec)
            return None if cached is None else (cached, False)

        return build_once(
            self.directory(spec), "building the engine", find, lambda: self._build(spec, build)
        )

    def _build(self, spec: EngineSpec, build: Builder) -> tuple[Path, bool]:
        """Build into a staging directory and rename it into place; we hold the key's lock."""
        target = self.directory(spec)
        remove_stale_staging(
            target.parent, spec.name, "generate_engines: removing a half-built engine"
        )
        staging = staging_directory(target.parent, f".{spec.name}.")
        started = time.monotonic()
        try:
            print(f"generate_engines: building {spec.benchmark} {spec.name}", file=sys.stderr)
            engine_file = build(staging)
            seconds = round(time.monotonic() - started, 1)
            record = {"spec": spec.to_json(), "engine_file": engine_file, "build_seconds": seconds}
            write_json_atomic(staging / SPEC_FILE, record)
            try:
                os.replace(staging, target)
            except OSError:
                if not target.is_dir():
                    raise
                # Built meanwhile by a process that took no lock (a file system where flock does
                # not reach other hosts): same inputs, so use that engine.
                shutil.rmtree(staging, ignore_errors=True)
                return check_engine(target, spec), False
        except BaseException as error:
            # Libraries report a full disk in their own words (ONNX Runtime: "Protobuf
            # serialization failed"): if the staging directory cannot take more, say that instead.
            # Probed before the half-built engine is removed, while it still holds the space.
            problem = space_problem(staging) if isinstance(error, Exception) else None
            shutil.rmtree(staging, ignore_errors=True)
            if problem is not None:
                raise write_error(problem, target) from error
            raise
        return target / engine_file, True
