"""FP8 calibration (engines/torch_fp8/calibrate.py): the maxima ONNX Runtime computes, their cache,
and what happens to a damaged one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from fp8_graphs import INPUT, bottleneck_graph

from mlperf_harness.engines.calibration import Feed
from mlperf_harness.engines.torch_fp8 import calibrate, plan
from mlperf_harness.errors import HarnessError


@dataclass
class _Images:
    """Random images as a calibration set; counts how often its samples are read."""

    batches: int = 3
    reads: list[int] = field(default_factory=list)
    description: str = "random test images"
    sha256: str = "c" * 64

    def feeds(self, batch_size: int, input_names: Sequence[str]) -> list[Feed]:
        self.reads.append(batch_size)
        rng = np.random.default_rng(1)
        shape = (batch_size, 3, 32, 32)
        return [
            {input_names[0]: rng.standard_normal(shape).astype(np.float32) * 50}
            for _ in range(self.batches)
        ]


@pytest.fixture()
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    onnx.save(bottleneck_graph(), path)
    return path


def _direct_maxima(model_path: Path, tensors: list[str], images: _Images) -> dict[str, float]:
    model = onnx.load(model_path)
    for name in tensors:
        if name != INPUT:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    maxima = dict.fromkeys(tensors, 0.0)
    for feed in _Images().feeds(calibrate.BATCH, [INPUT]):
        values = dict(
            zip([o.name for o in session.get_outputs()], session.run(None, feed), strict=True)
        )
        for name in tensors:
            maxima[name] = max(maxima[name], float(np.abs(values[name]).max()))
    return maxima


def test_maxima_are_computed_once_then_read_from_the_cache(
    model_path: Path, tmp_path: Path
) -> None:
    tensors = plan.calibrated_tensors(bottleneck_graph())
    images = _Images()
    cache = tmp_path / "calibration" / "maxima.json"
    first = calibrate.activation_amax(model_path, tensors, images, cache)
    assert first == pytest.approx(_direct_maxima(model_path, tensors, images))
    assert all(value > 0 for value in first.values()) and cache.is_file()
    again = calibrate.activation_amax(model_path, tensors, images, cache)
    assert again == first and images.reads == [calibrate.BATCH]  # the cache answered


def test_a_damaged_or_incomplete_cache_is_recomputed(
    model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tensors = plan.calibrated_tensors(bottleneck_graph())
    cache = tmp_path / "maxima.json"
    cache.write_text("{not json")
    images = _Images()
    maxima = calibrate.activation_amax(model_path, tensors, images, cache)
    assert "unusable" in capsys.readouterr().err and len(images.reads) == 1
    calibrate.activation_amax(model_path, [*tensors, "block2/add/relu"], images, cache)
    assert "no maximum for 1 of " in capsys.readouterr().err and len(images.reads) == 2
    assert calibrate.activation_amax(model_path, tensors, images, cache) == maxima


def test_a_tensor_the_model_does_not_compute_is_refused(model_path: Path, tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="computes no tensor 'nowhere'"):
        calibrate.activation_amax(model_path, ["nowhere"], _Images(), tmp_path / "m.json")


def test_the_cache_key_follows_model_and_samples() -> None:
    images = _Images()
    key = calibrate.amax_key("a" * 64, images)
    assert key == calibrate.amax_key("a" * 64, _Images())
    assert key != calibrate.amax_key("b" * 64, images)
    assert key != calibrate.amax_key("a" * 64, _Images(sha256="d" * 64))
