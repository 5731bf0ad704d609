"""GPT-J's static FP8 activation scales without torch (what CI checks): the setting's values, the
artifact's key and file (made once, written whole, read back; damaged, incomplete or another
model's: calibrated again), and the calibration samples' identity."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.engines.torch_gptj.calibration_set import (
    CALIBRATION_COUNT,
    GptjCalibration,
    StaticScalesPlan,
    real_size_calibration,
    real_size_identity,
)
from mlperf_harness.engines.torch_gptj.scale_artifact import (
    artifact_path,
    cached_amax,
    check_fp8_activations,
    layer_names,
    scales_key,
)
from mlperf_harness.errors import HarnessError

NAMES = layer_names(2)


def test_the_setting_takes_row_or_static_and_static_only_in_fp8() -> None:
    assert check_fp8_activations("row", "fp16") == "row"
    assert check_fp8_activations("static", "fp8") == "static"
    with pytest.raises(HarnessError, match="not 'tensor'"):
        check_fp8_activations("tensor", "fp8")
    with pytest.raises(HarnessError, match=r"needs --precision fp8.*not fp16"):
        check_fp8_activations("static", "fp16")


def test_layer_names_follow_the_blocks_projections() -> None:
    assert NAMES == ["h.0.qkv_in", "h.0.out", "h.0.fc_out", "h.1.qkv_in", "h.1.out", "h.1.fc_out"]


def test_the_key_changes_with_the_model_and_the_samples(tmp_path: Path) -> None:
    keys = {scales_key(m, c) for m in ("a", "b") for c in ("1", "2")}
    assert len(keys) == 4
    assert artifact_path(tmp_path, "a", "1") == tmp_path / "calibration" / "gptj" / (
        scales_key("a", "1") + ".json"
    )


def _maxima() -> dict[str, float]:
    return {name: float(i + 1) / 4 for i, name in enumerate(NAMES)}


def test_maxima_are_calibrated_once_written_whole_and_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = artifact_path(tmp_path, "model", "samples")
    calls: list[int] = []

    def calibrate() -> dict[str, float]:
        calls.append(1)
        return _maxima()

    assert cached_amax(path, NAMES, "model", "samples", "six prompts", calibrate) == _maxima()
    assert "calibrating FP8 activation scales on six prompts" in capsys.readouterr().err
    record = json.loads(path.read_text())
    assert record["model"] == "model" and record["calibration"] == "six prompts"
    assert record["amax"] == _maxima()
    assert [p.name for p in path.parent.iterdir() if not p.name.endswith(".lock")] == [path.name]
    assert cached_amax(path, NAMES, "model", "samples", "six prompts", calibrate) == _maxima()
    assert len(calls) == 1 and capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda r: {**r, "model": "another"}, "its model is 'another'"),
        (lambda r: {**r, "calibration_sha256": "other"}, "its calibration_sha256"),
        (lambda r: {**r, "amax": {"h.0.out": 1.0}}, "no maximum for 5 of 6, "),
        (lambda r: {**r, "amax": {**r["amax"], "h.1.out": -1.0}}, "negative or not finite"),
        (lambda r: "not json", "JSONDecodeError|AttributeError"),
    ],
)
def test_an_unusable_or_foreign_artifact_is_calibrated_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: object, why: str
) -> None:
    path = artifact_path(tmp_path, "model", "samples")
    cached_amax(path, NAMES, "model", "samples", "six prompts", _maxima)
    record = damage(json.loads(path.read_text()))  # type: ignore[operator]
    path.write_text(record if isinstance(record, str) else json.dumps(record))
    capsys.readouterr()
    doubled = {name: 2 * value for name, value in _maxima().items()}
    assert cached_amax(path, NAMES, "model", "samples", "six prompts", lambda: doubled) == doubled
    err = capsys.readouterr().err
    assert "unusable" in err and "calibrating again" in err
    assert re.search(why, err)
    assert json.loads(path.read_text())["amax"] == doubled


def test_a_calibration_missing_a_layer_writes_nothing(tmp_path: Path) -> None:
    path = artifact_path(tmp_path, "model", "samples")
    with pytest.raises(HarnessError, match=r"no maximum for h\.1\.fc_out"):
        cached_amax(
            path, NAMES, "model", "samples", "x", lambda: dict(list(_maxima().items())[:-1])
        )
    assert not path.exists()


def test_the_samples_identity_covers_their_tokens_and_forced_lengths() -> None:
    prompts = (np.array([1, 2, 3]), np.array([4, 5]))
    base = GptjCalibration("two", prompts)
    assert GptjCalibration("renamed", prompts).sha256 == base.sha256
    assert GptjCalibration("two", (np.array([1, 2, 3]), np.array([4, 6]))).sha256 != base.sha256
    assert GptjCalibration("two", prompts, (30, 31)).sha256 != base.sha256
    assert (
        GptjCalibration("two", prompts, (30, 31)).sha256
        != GptjCalibration("two", prompts, (31, 30)).sha256
    )
    with pytest.raises(HarnessError, match="no prompts, or an empty one"):
        GptjCalibration("empty", (np.array([1]), np.array([], np.int64)))
    with pytest.raises(HarnessError, match="a forced length per prompt"):
        GptjCalibration("two", prompts, (30,))


def test_the_real_size_stand_in_calibrates_on_its_own_seeded_prompts(tmp_path: Path) -> None:
    calibration = real_size_calibration()
    assert calibration.sha256 == real_size_calibration().sha256  # seeded
    assert len(calibration.prompts) == CALIBRATION_COUNT
    assert calibration.forced_lengths is not None
    assert all(30 <= n <= 128 for n in calibration.forced_lengths)
    plan = StaticScalesPlan(real_size_identity(), calibration, tmp_path)
    assert plan.path == artifact_path(tmp_path, real_size_identity(), calibration.sha256)
    assert "seed0" in real_size_identity()
