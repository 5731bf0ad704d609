"""Engine keys and the on-disk cache: same inputs, same engine; any change, another; a mismatched
engine is refused."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mlperf_harness.engines.cache import SPEC_FILE, Builder, EngineCache, check_engine
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.errors import HarnessError

SPEC = EngineSpec(
    benchmark="resnet50",
    backend="onnxruntime",
    precision="int8",
    batch_size=0,
    model_sha256="ab" * 32,
    device="cpu-x86_64-avx2",
    builder_sha256="cd" * 32,
    calibration_sha256="ef" * 32,
    options=(("activations", "uint8"),),
)


def test_same_inputs_same_key_and_every_field_counts() -> None:
    assert dataclasses.replace(SPEC).key == SPEC.key
    changes = {
        "benchmark": "other",
        "backend": "tensorrt",
        "precision": "fp32",
        "batch_size": 8,
        "model_sha256": "00" * 32,
        "device": "cpu-x86_64-avx512f",
        "builder_sha256": "11" * 32,
        "calibration_sha256": "22" * 32,
        "options": (("activations", "int8"),),
    }
    keys = {dataclasses.replace(SPEC, **{name: value}).key for name, value in changes.items()}  # type: ignore[arg-type]
    assert len(keys) == len(changes) and SPEC.key not in keys


def test_spec_round_trips_through_json() -> None:
    assert EngineSpec.from_json(json.loads(json.dumps(SPEC.to_json()))) == SPEC


def _builder(calls: list[Path]) -> Builder:
    def build(out_dir: Path) -> str:
        calls.append(out_dir)
        (out_dir / "engine.bin").write_bytes(b"engine bytes")
        return "engine.bin"

    return build


def test_cache_builds_once_then_hits(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path)
    calls: list[Path] = []
    path, built = cache.get_or_build(SPEC, _builder(calls))
    assert built and path.read_bytes() == b"engine bytes"
    again, built_again = cache.get_or_build(SPEC, _builder(calls))
    assert (again, built_again) == (path, False) and len(calls) == 1
    other, built_other = cache.get_or_build(
        dataclasses.replace(SPEC, precision="fp32"), _builder(calls)
    )
    assert built_other and other != path and len(calls) == 2


def test_failed_build_leaves_nothing(tmp_path: Path) -> None:
    def broken(out_dir: Path) -> str:
        (out_dir / "half.bin").write_bytes(b"half")
        raise HarnessError("builder failed")

    cache = EngineCache(tmp_path)
    with pytest.raises(HarnessError, match="builder failed"):
        cache.get_or_build(SPEC, broken)
    # Only the key's lock file (mlperf_harness.scratch_lock) stays: no half-built engine.
    left = [path.name for path in (tmp_path / "resnet50").iterdir()]
    assert left == [f".{SPEC.name}.lock"]


def test_mismatched_engine_is_refused_with_the_differences(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path)
    path, _ = cache.get_or_build(SPEC, _builder([]))
    record = json.loads((path.parent / SPEC_FILE).read_text())
    record["spec"]["model_sha256"] = "99" * 32  # an engine copied in from another model
    (path.parent / SPEC_FILE).write_text(json.dumps(record))
    with pytest.raises(HarnessError, match=r"refusing engine .*model_sha256"):
        cache.get(SPEC)
    with pytest.raises(HarnessError, match=r"no readable engine\.json"):
        check_engine(tmp_path, SPEC)
