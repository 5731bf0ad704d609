"""RNN-T's topology and the names and shapes of its parameters, as MLCommons' reference defines them
(`retired_benchmarks/speech_recognition/rnnt/pytorch`: `model_separable_rnnt.py`, `rnn.py`, and
`configs/rnnt.toml`'s [rnnt] section), so that the published checkpoint's state dict maps onto the
engines here name for name, and anything else is refused in one line.

Encoder: a 2-layer LSTM over the 240 spliced log-mel features, time stacking by 2 (frames 2t and 2t+1
side by side, zeros past an odd end), a 3-layer LSTM (1,024 units each). Prediction network: an
embedding of the 28 labels (the blank has none; the start of a sentence is a zero vector) into a
2-layer LSTM of 320 units. Joint network: Linear(1,024 + 320 -> 512), ReLU, (dropout: nothing at
inference), Linear(512 -> 29), on the encoder's frame and the prediction network's output side by
side (encoder first). PyTorch's LSTM gate order (input, forget, cell, output) throughout.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlperf_harness.datasets.librispeech.alphabet import LABELS, SYMBOLS
from mlperf_harness.datasets.librispeech.features import FEATURES
from mlperf_harness.errors import HarnessError

MAX_SYMBOLS_PER_STEP = 30  # the reference's ScriptGreedyDecoder default
SOS = len(LABELS)  # the start symbol in our graphs: a zero row after the 28 embeddings


@dataclass(frozen=True)
class RnntSizes:
    encoder_hidden: int
    prediction_hidden: int
    joint_hidden: int
    features: int = FEATURES
    pre_layers: int = 2
    post_layers: int = 3
    stack_time: int = 2
    prediction_layers: int = 2
    symbols: int = SYMBOLS

    def parameter_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every parameter of the reference's state dict (after its load_and_migrate_checkpoint:
        `joint_net` renamed `joint.net`, the featurizer's buffers dropped), with its shape."""
        shapes: dict[str, tuple[int, ...]] = {}

        def lstm(prefix: str, inputs: int, hidden: int, layers: int) -> None:
            for layer in range(layers):
                width = inputs if layer == 0 else hidden
                shapes[f"{prefix}.weight_ih_l{layer}"] = (4 * hidden, width)
                shapes[f"{prefix}.weight_hh_l{layer}"] = (4 * hidden, hidden)
                shapes[f"{prefix}.bias_ih_l{layer}"] = (4 * hidden,)
                shapes[f"{prefix}.bias_hh_l{layer}"] = (4 * hidden,)

        enc, pred = self.encoder_hidden, self.prediction_hidden
        lstm("encoder.pre_rnn.lstm", self.features, enc, self.pre_layers)
        lstm("encoder.post_rnn.lstm", self.stack_time * enc, enc, self.post_layers)
        shapes["prediction.embed.weight"] = (self.symbols - 1, pred)
        lstm("prediction.dec_rnn.lstm", pred, pred, self.prediction_layers)
        shapes["joint.net.0.weight"] = (self.joint_hidden, enc + pred)
        shapes["joint.net.0.bias"] = (self.joint_hidden,)
        shapes["joint.net.3.weight"] = (self.symbols, self.joint_hidden)
        shapes["joint.net.3.bias"] = (self.symbols,)
        return shapes


REAL = RnntSizes(encoder_hidden=1024, prediction_hidden=320, joint_hidden=512)


def migrate_checkpoint_names(state: dict[str, object]) -> dict[str, object]:
    """The published checkpoint's names -> the reference model's (its load_and_migrate_checkpoint):
    `joint_net.` becomes `joint.net.`; the feature extractor's buffers are not model weights."""
    migrated = {key.replace("joint_net", "joint.net"): value for key, value in state.items()}
    for buffer in ("audio_preprocessor.featurizer.fb", "audio_preprocessor.featurizer.window"):
        migrated.pop(buffer, None)
    return migrated


def sizes_of(shapes: dict[str, tuple[int, ...]], where: str) -> RnntSizes:
    """The sizes of a state dict whose every name and shape is RNN-T's (at any width); one line
    naming the first difference otherwise."""
    try:
        enc = shapes["encoder.pre_rnn.lstm.weight_hh_l0"][1]
        pred = shapes["prediction.embed.weight"][1]
        joint = shapes["joint.net.0.weight"][0]
    except (KeyError, IndexError):
        raise HarnessError(
            f"{where} is not MLCommons' RNN-T checkpoint layout: it lacks "
            "encoder.pre_rnn.lstm.weight_hh_l0, prediction.embed.weight or joint.net.0.weight"
        ) from None
    sizes = RnntSizes(encoder_hidden=enc, prediction_hidden=pred, joint_hidden=joint)
    expected = sizes.parameter_shapes()
    missing = sorted(set(expected) - set(shapes))
    extra = sorted(set(shapes) - set(expected))
    wrong = sorted(name for name in expected if name in shapes and shapes[name] != expected[name])
    if missing or extra or wrong:
        name = (missing or extra or wrong)[0]
        what = (
            "lacks" if missing else "has an unknown parameter" if extra else "has a wrong shape for"
        )
        detail = (
            f" {list(shapes[name])}, expected {list(expected[name])}"
            if wrong and not (missing or extra)
            else ""
        )
        raise HarnessError(
            f"{where} is not MLCommons' RNN-T checkpoint layout: it {what} {name}{detail}"
        )
    return sizes
