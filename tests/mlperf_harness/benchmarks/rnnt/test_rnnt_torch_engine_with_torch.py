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
    ENCODER_INPUTS,
    FORCED_SYMBOL,
    RnntTorchEngine,
    TorchRnntRunner,
    padded_batch,
)
from mlperf_harness.benchmarks.rnnt.weights import seeded_weights
from mlperf_harness.datasets.librispeech.alphabet import BLANK
from mlperf_harness.errors import HarnessError

pytestmark = needs_torch
TINY = RnntSizes(encoder_hidden=16, prediction_hidden=8, joint_hidden=12)


def _rows(out: npt.NDArray[np.int64]) -> list[list[int]]:
    return [row[1 : 1 + row[0]].tolist() for row in out]


@pytest.mark.parametrize("encoder_input", ENCODER_INPUTS)
@pytest.mark.parametrize("blank_bias", [0.0, 1.5, -3.0])  # -3: many frames hit 30 symbols
def test_torch_engine_transcribes_as_the_onnx_runner(
    blank_bias: float, encoder_input: str, tmp_path: Path
) -> None:
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
    engine.set_encoder_input(encoder_input)
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


# The padded and packed encoders agree inside every utterance to within a few float32 roundings:
# the same weights multiply the same rows, but the packed path's batch shrinks step by step and
# the CPU's GEMMs block (and so sum) a row's products by the batch's shape. Seen: at most 5e-8 on
# outputs of about 0.1-0.3 (a float32 ulp there is 0.7-1.5e-8); 1e-6 leaves room for other CPUs.
ENCODER_TOLERANCE = 1e-6


def test_padded_and_packed_encoders_agree_inside_every_utterance() -> None:
    import torch  # pants: no-infer-dep

    weights = seeded_weights(TINY, 11)
    rng = np.random.default_rng(12)
    lengths = np.array([30, 0, 1, 17, 29, 2, 8], np.int64)  # odd ones: a frame stacked with zeros
    features = torch.from_numpy(rng.standard_normal((7, 30, 240)).astype(np.float32))
    with torch.inference_mode():
        engine = RnntTorchEngine(weights, TINY, torch.device("cpu"))
        encoded = {}
        for mode in ("packed", "padded"):
            engine.set_encoder_input(mode)
            fproj, frames = engine.encode(features, lengths)
            encoded[mode] = (fproj.numpy(), frames.numpy())
    packed, padded = encoded["packed"], encoded["padded"]
    assert packed[1].tolist() == padded[1].tolist() == ((lengths + 1) // 2).tolist()
    for row, count in enumerate(packed[1]):
        np.testing.assert_allclose(
            padded[0][row, :count], packed[0][row, :count], rtol=0, atol=ENCODER_TOLERANCE
        )
    # An odd last frame is stacked beside zeros, not beside the padding's LSTM output: the
    # utterance's features past its end must not matter.
    changed = features.clone()
    changed[3, 17:] = 5.0
    with torch.inference_mode():
        fproj, _ = engine.encode(changed, lengths)
    np.testing.assert_array_equal(fproj.numpy()[3, :9], padded[0][3, :9])


def test_auto_encoder_input_follows_the_batch_fill() -> None:
    import torch  # pants: no-infer-dep

    with torch.inference_mode():
        engine = RnntTorchEngine(seeded_weights(TINY, 1), TINY, torch.device("cpu"))
    assert engine.encoder_input == "auto"
    assert engine.padded_input(np.array([100, 96, 90], np.int64), 100)  # length-ordered
    assert not engine.padded_input(np.array([100, 20, 30], np.int64), 100)  # ragged
    engine.set_encoder_input("packed")
    assert not engine.padded_input(np.array([100, 100], np.int64), 100)
    with pytest.raises(HarnessError, match="the encoder input is one of"):
        engine.set_encoder_input("unpacked")
