"""Seeded RNN-T weights under the reference's parameter names (topology.py).

PyTorch's own initialisation (every LSTM weight and bias uniform in +-1/sqrt(hidden), each LSTM's
forget-gate input bias set to the reference's forget_gate_bias 1.0 and its recurrent one to 0; the
embedding standard normal; each Linear uniform in +-1/sqrt(fan_in)), with optional gains: the
stand-in scales its encoder's input weights up and its recurrent weights down so that its random,
never-trained LSTMs keep each frame's sound recognisable (stand_in_model.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.rnnt.topology import RnntSizes

Weights = dict[str, npt.NDArray[np.float32]]
FORGET_GATE_BIAS = 1.0


@dataclass(frozen=True)
class Gains:
    encoder_input: float = 1.0
    encoder_recurrent: float = 1.0
    prediction_input: float = 1.0
    prediction_recurrent: float = 1.0


def seeded_weights(sizes: RnntSizes, seed: int, gains: Gains = Gains()) -> Weights:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 45]))
    shapes = sizes.parameter_shapes()
    weights: Weights = {}
    for name, shape in shapes.items():
        if name == "prediction.embed.weight":
            weights[name] = rng.standard_normal(shape, dtype=np.float32)
            continue
        lstm = ".lstm." in name
        # An LSTM: +-1/sqrt(hidden) for all; a Linear: +-1/sqrt(its input width) for both.
        width = shape[0] // 4 if lstm else shapes[name.replace("bias", "weight")][1]
        bound = 1.0 / np.sqrt(width)
        value = rng.uniform(-bound, bound, shape).astype(np.float32)
        gain = _gain(name, gains)
        if gain != 1.0 and "weight" in name:
            value *= np.float32(gain)
        if lstm and "bias_ih" in name:
            value[width : 2 * width] = FORGET_GATE_BIAS
        elif lstm and "bias_hh" in name:
            value[width : 2 * width] = 0.0
        weights[name] = value
    return weights


def _gain(name: str, gains: Gains) -> float:
    recurrent = "weight_hh" in name
    if name.startswith("encoder."):
        return gains.encoder_recurrent if recurrent else gains.encoder_input
    if name.startswith("prediction.dec_rnn"):
        return gains.prediction_recurrent if recurrent else gains.prediction_input
    return 1.0
