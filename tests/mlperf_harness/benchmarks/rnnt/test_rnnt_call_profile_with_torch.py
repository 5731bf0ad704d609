"""RNN-T's call profile (call_profile.py, `torch_raw --profile`) on the CPU where torch is installed:
a tiny model with forced emissions, so that the decode's steps are known in advance. The figures'
shape, the part names, the steps counted and the table are checked; the GPU ms themselves are the
device script's `profile` phase's (on the CPU the marks are the host's clock). Skipped in CI (no
torch)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.rnnt import call_profile
from mlperf_harness.benchmarks.rnnt.model_files import write_model_files
from mlperf_harness.benchmarks.rnnt.onnx_graphs import rnnt_models
from mlperf_harness.benchmarks.rnnt.topology import RnntSizes
from mlperf_harness.benchmarks.rnnt.torch_engine import (
    STEPS_PER_CHECK,
    RnntTorchEngine,
    TorchRnntRunner,
)
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.benchmarks.rnnt.weights import seeded_weights
from mlperf_harness.datasets.librispeech.preprocess import PreprocessedUtterances

pytestmark = needs_torch
TINY = RnntSizes(encoder_hidden=16, prediction_hidden=8, joint_hidden=12)
RATE = 0.5  # forced symbols a frame
LENGTHS = np.array([90, 7, 40, 2, 66], np.int64)  # feature frames: 45, 4, 20, 1, 33 encoder frames


@pytest.fixture(scope="module", params=["packed", "padded"])
def profiled(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> tuple[dict[str, Any], list[str]]:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    model = tmp_path_factory.mktemp("model")
    weights = seeded_weights(TINY, 3)
    write_model_files(model, rnnt_models(weights, TINY, "test", {}), weights, TINY, True, "test")
    runner = TorchRnntRunner(model, 0, batch_size=8, device_samples=None, device="cpu")
    runner.activate()
    with torch.inference_mode():  # the forced schedule: the real-size stand-in's decisions
        runner._engine = RnntTorchEngine(weights, TINY, torch.device("cpu"), RATE)
    features = np.random.default_rng(1).standard_normal((5, 90, 240)).astype(np.float32)
    utterances = PreprocessedUtterances(model, features, LENGTHS, ("",) * 5)
    store = UtteranceStore(utterances, 5, 5)
    indices = [0, 1, 2, 3, 4]
    store.load(indices)
    runner.samples_loaded(store)
    runner.engine().set_encoder_input(request.param)
    record = call_profile.profile_batch(
        torch, runner, store, indices, on_gpu=False, calls=2, label="arrival order"
    )
    return record, call_profile.table([record], on_gpu=False)


def test_every_part_of_the_call_is_timed(profiled: tuple[dict[str, Any], list[str]]) -> None:
    record, _ = profiled
    parts = record["timeline"]["parts"]
    encoder = call_profile.ENCODER_PARTS[record["encoder_input"]]
    assert set(parts) == {"upload", *encoder, *call_profile.DECODE}
    if record["encoder_input"] == "packed":
        assert parts["pack"]["count"] == 2 and parts["unpack"]["count"] == 2  # both LSTMs
    else:
        assert parts["mask"]["count"] == 2  # made, then applied to the first LSTM's outputs
    assert all(p["gpu_ms"] >= 0 and p["host_ms"] >= 0 for p in parts.values())
    assert record["timeline"]["call_ms_mean"] >= sum(p["gpu_ms"] for p in parts.values()) - 1e-6
    assert len(record["timeline"]["call_ms"]) == 2


def test_the_decode_steps_are_counted(profiled: tuple[dict[str, Any], list[str]]) -> None:
    record, _ = profiled
    frames = (LENGTHS + 1) // 2
    needed = frames + np.floor(frames * RATE).astype(np.int64)  # a step a frame and a symbol
    replays = math.ceil(int(needed.max()) / STEPS_PER_CHECK)
    steps = record["decode_steps"]
    assert record["encoder_frames_longest"] == 45
    assert steps["steps_needed_most"] == int(needed.max()) == 67
    assert steps["replays"] == replays == record["timeline"]["parts"]["replay"]["count"]
    assert steps["unchecked_replays"] == 2  # ceil(45 / 32)
    # one check after each replay past the unchecked ones, the last finding nothing to decode
    assert record["timeline"]["parts"]["check"]["count"] == replays - 2 + 1
    assert steps["steps_after_all_finished"] == replays * STEPS_PER_CHECK - 67
    assert steps["padded_batch"] == 8
    share = needed.sum() / (replays * STEPS_PER_CHECK * 8)
    assert steps["row_steps_working_share"] == pytest.approx(share, abs=1e-4)
    assert steps["symbols"] == int(np.floor(frames * RATE).sum())


def test_each_stage_is_profiled_by_part(profiled: tuple[dict[str, Any], list[str]]) -> None:
    record, _ = profiled
    kernels = record["kernels"]
    assert set(kernels) == set(call_profile.STAGES)
    for stage, names in call_profile.STAGES.items():
        assert kernels[stage]["top"], stage
        if stage == "encoder":
            names = call_profile.ENCODER_PARTS[record["encoder_input"]]
        assert set(kernels[stage]["parts_ms_per_step"]) == set(names)


def test_the_table_has_a_row_for_every_part(profiled: tuple[dict[str, Any], list[str]]) -> None:
    record, lines = profiled
    text = "\n".join(lines)
    assert lines[0].startswith("| part |") and "**batch 5** (arrival order, encoder " in text
    assert f"encoder {record['encoder_input']};" in text
    for stage, names in call_profile.STAGES.items():
        if stage == "encoder":
            names = call_profile.ENCODER_PARTS[record["encoder_input"]]
        for name in names:
            assert f"| {stage}: {name}" in text
    assert f"{record['decode_steps']['replays']} replays x {STEPS_PER_CHECK}" in text
    assert "decode kernel:" in text and "encoder kernel:" in text
    assert all(line.count("|") == 7 for line in lines)


def test_the_first_batch_is_torch_raws_and_wraps() -> None:
    assert sorted(call_profile.first_batch(range(5), 5, 0)) == [0, 1, 2, 3, 4]
    assert len(call_profile.first_batch(range(5), 12, 0)) == 12
