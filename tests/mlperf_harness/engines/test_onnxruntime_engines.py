"""ONNX Runtime engines built for real on the shared small stand-in (tests/shared_stand_in.py): fp32
optimized and int8 QDQ, with the calibration ranges cached and reused when only non-calibration
inputs change; the nodes an int8 recipe leaves in fp32 in its key, and refused when the model lacks
one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from shared_stand_in import SharedStandIn, shared_stand_in

from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.datasets.imagenet.layout import parse_val_map
from mlperf_harness.datasets.imagenet.transform import preprocess_file
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import CalibrationSet, calibration_from_names
from mlperf_harness.engines.onnxruntime import build
from mlperf_harness.engines.onnxruntime.engine import (
    FP32_NODES_OPTION,
    onnxruntime_engine,
    onnxruntime_engine_spec,
)
from mlperf_harness.errors import HarnessError


@pytest.fixture(scope="module")
def built() -> SharedStandIn:
    return shared_stand_in()


def _top1(model: Path, images: Path) -> float:
    entries = parse_val_map(images / "val_map.txt")
    batch = np.stack([preprocess_file(images / name) for name, _ in entries])
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    (argmax,) = session.run([stand_in_model.ARGMAX_OUTPUT], {stand_in_model.INPUT_NAME: batch})
    labels = np.array([label for _, label in entries])
    return float(np.mean(argmax - stand_in_model.LABEL_OFFSET == labels))


def _calibration(built: SharedStandIn) -> CalibrationSet:
    names = [name for name, _ in parse_val_map(built.calibration / "val_map.txt")]
    return calibration_from_names(built.calibration, names, "test calibration")


# A whole static int8 quantization (27 s alone, over a minute beside other tests): CI's slow set.
@pytest.mark.slow
def test_int8_keeps_accuracy_and_calibration_is_reused(
    built: SharedStandIn, tmp_path: Path
) -> None:
    calibration = _calibration(built)
    cache = EngineCache(tmp_path)
    spec = onnxruntime_engine_spec("resnet50", built.sha256, "int8", calibration)
    engine, was_built = onnxruntime_engine(cache, spec, built.model, calibration)
    assert was_built and engine.is_file()
    validation = built.images
    assert _top1(engine, validation) >= 0.99 * _top1(built.model, validation)
    ranges = list((tmp_path / "calibration" / "resnet50").glob("*.json"))
    assert len(ranges) == 1
    # A changed builder input that is not calibration: a new engine, the same ranges file.
    other = dataclasses.replace(spec, options=(*spec.options, ("note", "rebuild")))
    written = ranges[0].stat().st_mtime_ns
    rebuilt, was_rebuilt = onnxruntime_engine(cache, other, built.model, calibration)
    assert was_rebuilt and rebuilt != engine
    assert list((tmp_path / "calibration" / "resnet50").glob("*.json")) == ranges
    assert ranges[0].stat().st_mtime_ns == written  # read, not rewritten


def test_fp32_engine_matches_the_model(built: SharedStandIn, tmp_path: Path) -> None:
    spec = onnxruntime_engine_spec("resnet50", built.sha256, "fp32", None)
    engine, _ = onnxruntime_engine(EngineCache(tmp_path), spec, built.model, None)
    validation = built.images
    assert _top1(engine, validation) == _top1(built.model, validation)


def test_unsupported_precision_is_clear() -> None:
    with pytest.raises(HarnessError, match="builds fp32 and int8 engines, not 'fp16'"):
        onnxruntime_engine_spec("resnet50", "ab" * 32, "fp16", None)


def test_nodes_left_in_fp32_are_part_of_an_int8_key(tmp_path: Path) -> None:
    image = tmp_path / "one.jpg"
    image.write_bytes(b"calibration bytes")
    calibration = calibration_from_names(tmp_path, ["one.jpg"], "test calibration")
    every = onnxruntime_engine_spec("retinanet", "ab" * 32, "int8", calibration, ("Conv",))
    kept = onnxruntime_engine_spec(
        "retinanet", "ab" * 32, "int8", calibration, ("Conv",), fp32_nodes=("b", "a")
    )
    assert kept.key != every.key and dict(kept.options)[FP32_NODES_OPTION] == "a,b"
    fp32 = onnxruntime_engine_spec("retinanet", "ab" * 32, "fp32", None, fp32_nodes=("a",))
    assert FP32_NODES_OPTION not in dict(fp32.options)  # nothing is quantized in fp32
    with pytest.raises(HarnessError, match="cannot leave node 'a,b' in fp32"):
        onnxruntime_engine_spec("retinanet", "ab" * 32, "int8", calibration, fp32_nodes=("a,b",))


def test_a_node_to_leave_in_fp32_that_the_model_lacks_is_one_line(
    built: SharedStandIn, tmp_path: Path
) -> None:
    calibration = _calibration(built)
    out_dir = tmp_path / "engine"
    out_dir.mkdir()
    with pytest.raises(HarnessError, match="to leave node 'no_such_conv' in fp32, but"):
        build.build_int8(
            built.model, out_dir, calibration, tmp_path / "ranges.json", None, ("no_such_conv",)
        )
    assert not list(out_dir.iterdir())  # refused before anything was written
