"""RNN-T's torch engine on the CPU where torch is installed (float32, no CUDA graph): its encoder and
its whole-batch greedy decoding give the ONNX runner's transcripts symbol for symbol, with blanks
frequent, rare and 30-symbol frames, batches that are not a power of two (padded rows never
active); the real-size stand-in's forced emissions follow their schedule.

torch is no dependency of the CPU build, so in CI these tests are skipped; GPU hosts and any
environment with torch run them. On a GPU the fp16 path under CUDA graphs is checked by the
accuracy phase of benchmarks/rnnt/device/gpu_scenarios.sh (the stand-in's WER against its CPU
figure).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.rnnt.model_files import write_model_files
from mlperf_harness.benchmarks.rnnt.onnx_graphs import rnnt_models
from mlperf_harness.benchmarks.rnnt.runners import RnntSessions
from mlperf_harness.benchmarks.rnnt.topology import MAX_SYMBOLS_PER_STEP, RnntSizes
from mlperf_harness.benchmarks.rnnt.torch_engine import (
    FORCED_SYMBOL,
    RnntTorchEngine,
    TorchRnntRunner,
    padded_batch,
)
from mlperf_harness.benchmarks.rnnt.weights import seeded_weights
from mlperf_harness.datasets.librispeech.alphabet import BLANK

pytestmark = needs_torch
TINY = RnntSizes(encoder_hidden=16, prediction_hidden=8, joint_hidden=12)


def _rows(out: npt.NDArray[np.int64]) -> list[list[int]]:
    return [row[1 : 1 + row[0]].tolist() for row in out]


@pytest.mark.parametrize("blank_bias", [0.0, 1.5, -3.0])  # -3: many frames hit 30 symbols
def test_torch_engine_transcribes_as_the_onnx_runner(blank_bias: float, tmp_path: Path) -> None:
    weights = seeded_weights(TINY, 5)
    weights["joint.net.3.bias"][BLANK] += blank_bias
    models = rnnt_models(weights, TINY, "test", {})
    write_model_files(tmp_path, models, weights, TINY, True, "test")
    sessions = RnntSessions({k: m.SerializeToString() for k, m in models.items()}, TINY)
    rng = np.random.default_rng(6)
    lengths = np.array([9, 1, 14, 4, 11], np.int64)
    features = rng.standard_normal((5, 14, 240)).astype(np.float32)
    expected = _rows(sessions.transcribe(features, lengths))

    runner = TorchRnntRunner(tmp_path, 0, batch_size=8, device_samples=None, device="cpu")
    runner.activate()
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    engine = runner.engine()
    with torch.inference_mode():
        got = engine.transcribe(torch.from_numpy(features), lengths)
    assert _rows(got) == expected
    assert got.shape[0] == 5 and padded_batch(5) == 8
    if blank_bias == -3.0:
        assert max(len(row) for row in expected) >= MAX_SYMBOLS_PER_STEP


def test_forced_emissions_follow_their_schedule() -> None:
    import torch  # pants: no-infer-dep

    weights = seeded_weights(TINY, 7)
    with torch.inference_mode():
        engine = RnntTorchEngine(weights, TINY, torch.device("cpu"), forced_symbols_per_frame=0.5)
        lengths = np.array([20, 7, 2], np.int64)
        features = torch.zeros((3, 20, 240))
        out = engine.transcribe(features, lengths)
    frames = (lengths + 1) // 2
    assert out[:, 0].tolist() == [int(np.floor(f * 0.5)) for f in frames]
    assert all(set(row) <= {FORCED_SYMBOL} for row in _rows(out))
