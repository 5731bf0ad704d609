"""RNN-T's pieces on a tiny seeded model: the batched greedy decoder decides what the reference's
one-utterance loop decides, a padded batch encodes each utterance as it encodes alone, and the
checkpoint layout is checked name for name."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.benchmarks.rnnt.greedy import greedy_decode
from mlperf_harness.benchmarks.rnnt.onnx_graphs import rnnt_models
from mlperf_harness.benchmarks.rnnt.runners import RnntSessions, response_rows
from mlperf_harness.benchmarks.rnnt.topology import (
    MAX_SYMBOLS_PER_STEP,
    REAL,
    SOS,
    RnntSizes,
    migrate_checkpoint_names,
    sizes_of,
)
from mlperf_harness.benchmarks.rnnt.weights import seeded_weights
from mlperf_harness.datasets.librispeech.alphabet import BLANK
from mlperf_harness.errors import HarnessError

TINY = RnntSizes(encoder_hidden=16, prediction_hidden=8, joint_hidden=12)


def _sessions(seed: int, blank_bias: float) -> RnntSessions:
    weights = seeded_weights(TINY, seed)
    weights["joint.net.3.bias"][BLANK] += blank_bias  # how often the joint says blank
    models = rnnt_models(weights, TINY, "test", {})
    return RnntSessions({k: m.SerializeToString() for k, m in models.items()}, TINY)


def reference_decode(sessions: RnntSessions, frames: npt.NDArray[np.float32]) -> list[int]:
    """ScriptGreedyDecoder._greedy_decode for one utterance, as the reference writes it: the
    prediction network stepped from (last symbol, hidden) before every joint call."""
    hidden = None
    label: list[int] = []
    for time_index in range(len(frames)):
        not_blank, symbols_added = True, 0
        while not_blank and symbols_added < MAX_SYMBOLS_PER_STEP:
            last = SOS if not label else label[-1]
            if hidden is None:
                zeros = np.zeros((2, 1, TINY.prediction_hidden), np.float32)
                h_c = (zeros, zeros)
            else:
                h_c = hidden
            g, h, c = sessions.prediction(np.array([last]), *h_c)
            k = int(sessions.joint(frames[time_index][None], g)[0])
            if k == BLANK:
                not_blank = False
            else:
                label.append(k)
                hidden = (h, c)
            symbols_added += 1
    return label


@pytest.mark.parametrize("blank_bias", [0.0, 1.5, -3.0])  # -3: many frames hit 30 symbols
def test_batched_greedy_decoding_is_the_references(blank_bias: float) -> None:
    sessions = _sessions(1, blank_bias)
    rng = np.random.default_rng(2)
    lengths = np.array([7, 1, 12, 4, 9], np.int64)
    encoded = rng.standard_normal((5, 12, TINY.encoder_hidden)).astype(np.float32)
    out = greedy_decode(
        encoded, lengths, sessions.prediction, sessions.joint, 2, TINY.prediction_hidden
    )
    rows, sizes = response_rows(out)
    for b in range(5):
        expected = reference_decode(sessions, encoded[b, : lengths[b]])
        assert out[b, 0] == len(expected) == sizes[b] // 8
        assert rows[b, : out[b, 0]].tolist() == expected
    if blank_bias == -3.0:
        assert out[:, 0].max() == MAX_SYMBOLS_PER_STEP * lengths.max()


def test_a_padded_batch_encodes_each_utterance_as_alone() -> None:
    sessions = _sessions(4, 0.0)
    rng = np.random.default_rng(3)
    lengths = np.array([9, 4, 10], np.int64)
    features = rng.standard_normal((3, 10, 240)).astype(np.float32)
    batch, frames = sessions.encode(features, lengths)
    assert frames.tolist() == [5, 2, 5]
    for b, length in enumerate(lengths):
        alone = np.zeros((1, length + length % 2, 240), np.float32)
        alone[0, :length] = features[b, :length]
        single, _ = sessions.encode(alone, lengths[b : b + 1])
        np.testing.assert_allclose(batch[b, : frames[b]], single[0, : frames[b]], atol=1e-5)


def test_checkpoint_layout_is_the_references_and_others_are_refused() -> None:
    shapes = REAL.parameter_shapes()
    assert shapes["encoder.pre_rnn.lstm.weight_ih_l0"] == (4096, 240)
    assert shapes["encoder.post_rnn.lstm.weight_ih_l0"] == (4096, 2048)
    assert shapes["prediction.embed.weight"] == (28, 320)
    assert shapes["joint.net.0.weight"] == (512, 1344)
    assert shapes["joint.net.3.weight"] == (29, 512)
    # The published names: joint_net.*, and the featurizer's buffers beside the model's.
    published = {k.replace("joint.net", "joint_net"): v for k, v in shapes.items()}
    published["audio_preprocessor.featurizer.fb"] = (1, 80, 257)
    published["audio_preprocessor.featurizer.window"] = (320,)
    migrated = migrate_checkpoint_names(published)  # type: ignore[arg-type]
    assert sizes_of(migrated, "rnnt.pt") == REAL  # type: ignore[arg-type]
    wrong = dict(shapes, **{"joint.net.3.weight": (30, 512)})
    with pytest.raises(HarnessError, match=r"wrong shape for joint.net.3.weight \[30, 512\]"):
        sizes_of(wrong, "x.pt")
    missing = {k: v for k, v in shapes.items() if k != "encoder.post_rnn.lstm.bias_hh_l2"}
    with pytest.raises(HarnessError, match=r"lacks encoder\.post_rnn\.lstm\.bias_hh_l2"):
        sizes_of(missing, "x.pt")
    with pytest.raises(HarnessError, match="not MLCommons' RNN-T checkpoint layout"):
        sizes_of({"fc.weight": (2, 2)}, "resnet.pt")
