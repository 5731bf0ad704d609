"""The stand-in RNN-T: the reference's topology at reduced width (encoder 256, prediction 96, joint
256 units; the real model's 1,024 / 320 / 512), whose LSTMs are seeded and never trained and whose
joint network is fitted with NumPy.

What is fitted and what is not (measured on the generated speech at seed 0, build time): seeded LSTMs
with PyTorch's initialisation mixed each frame's sound away (a linear read-out of the symbol heard
from the encoder's output: 20% of frames right; from the features themselves: 97%). So the stand-in
seeds every LSTM "nearly feed-forward": gate biases input +2, forget -2, output +2 with the gates'
input weights scaled by 0.1, the cell's input weights by 1.5 and all recurrent weights by 0.1; the
frames then stay readable (93%). The two joint layers are then fitted (Adam, cross-entropy) on
(encoder frame, prediction output) pairs that the reference's greedy decoder meets on the training
utterances: in each frame of symbol k, the state before k (target: k's symbol) and after it (target:
blank); between symbols, blank. Consecutive symbols of the generated speech always differ, which is
what lets a joint network tell "heard, not yet emitted" from "already emitted" by the last symbol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.rnnt.topology import SOS, RnntSizes
from mlperf_harness.benchmarks.rnnt.weights import Weights, seeded_weights
from mlperf_harness.datasets.librispeech.alphabet import BLANK, SYMBOLS
from mlperf_harness.datasets.librispeech.features import HOP, SPLICE

SIZES = RnntSizes(encoder_hidden=256, prediction_hidden=96, joint_hidden=256)
# Samples per encoder frame (10 ms hops, 3 spliced, 2 stacked) and the centre of frame 0's audio.
FRAME_SAMPLES = HOP * SPLICE * SIZES.stack_time
FRAME_CENTRE = (FRAME_SAMPLES - HOP) // 2  # the mean of its six 10 ms frames' centres
_GATE_BIAS = (2.0, -2.0, 0.0, 2.0)  # input, forget, cell, output (PyTorch's order)
_GATE_INPUT_GAIN = 0.1
_CELL_INPUT_GAIN = 1.5
_RECURRENT_GAIN = 0.1


def stand_in_weights(seed: int) -> Weights:
    """Seeded weights, every LSTM made nearly feed-forward (the module's doc)."""
    weights = seeded_weights(SIZES, seed)
    for name, value in weights.items():
        if ".lstm." not in name:
            continue
        hidden = value.shape[0] // 4
        blocks = [slice(k * hidden, (k + 1) * hidden) for k in range(4)]
        if "weight_ih" in name:
            for k in (0, 1, 3):
                value[blocks[k]] *= np.float32(_GATE_INPUT_GAIN)
            value[blocks[2]] *= np.float32(_CELL_INPUT_GAIN)
        elif "weight_hh" in name:
            value *= np.float32(_RECURRENT_GAIN)
        elif "bias_ih" in name:
            for k, bias in enumerate(_GATE_BIAS):
                value[blocks[k]] = bias
        else:  # bias_hh
            value[:] = 0.0
    return weights


def symbol_of_frames(spans: npt.NDArray[np.int64], frames: int) -> npt.NDArray[np.int64]:
    """For each encoder frame, the index of the symbol whose audio holds the frame's centre; -1."""
    centres = FRAME_CENTRE + FRAME_SAMPLES * np.arange(frames)
    owner = np.full(frames, -1, np.int64)
    for k, (start, end) in enumerate(spans):
        owner[(centres >= start) & (centres < end)] = k
    return owner


def prediction_outputs(
    step: Callable[
        [npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.float32]],
        tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]],
    ],
    transcripts: Sequence[npt.NDArray[np.int64]],
) -> list[npt.NDArray[np.float32]]:
    """Per transcript, [len + 1, P]: the prediction network's output before each symbol and after
    the last, all transcripts stepped together."""
    count, longest = len(transcripts), max(len(t) for t in transcripts)
    padded = np.full((count, longest), SOS, np.int64)
    for row, symbols in enumerate(transcripts):
        padded[row, : len(symbols)] = symbols
    state = np.zeros((SIZES.prediction_layers, count, SIZES.prediction_hidden), np.float32)
    g, h, c = step(np.full(count, SOS, np.int64), state, state.copy())
    outputs = [g]
    for position in range(longest):
        g, h, c = step(padded[:, position], h, c)
        outputs.append(g)
    stacked = np.stack(outputs, axis=1)
    return [stacked[row, : len(symbols) + 1] for row, symbols in enumerate(transcripts)]


def training_pairs(
    encoded: Sequence[npt.NDArray[np.float32]],
    predicted: Sequence[npt.NDArray[np.float32]],
    transcripts: Sequence[npt.NDArray[np.int64]],
    spans: Sequence[npt.NDArray[np.int64]],
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """(inputs [n, H + P], targets [n]) of the joint network (the module's doc)."""
    rows: list[npt.NDArray[np.float32]] = []
    targets: list[npt.NDArray[np.int64]] = []
    for frames, g, symbols, span in zip(encoded, predicted, transcripts, spans, strict=True):
        owner = symbol_of_frames(span, len(frames))
        inside = owner >= 0
        # Between symbols the state is "every symbol before this frame emitted".
        emitted = np.maximum.accumulate(np.where(inside, owner + 1, 0))
        before = owner[inside]
        rows += [
            np.concatenate([frames[inside], g[before]], axis=1),
            np.concatenate([frames[inside], g[before + 1]], axis=1),
            np.concatenate([frames[~inside], g[emitted[~inside]]], axis=1),
        ]
        targets += [
            symbols[before],
            np.full(len(before), BLANK, np.int64),
            np.full(int((~inside).sum()), BLANK, np.int64),
        ]
    return np.concatenate(rows), np.concatenate(targets)


@dataclass(frozen=True)
class JointFit:
    epochs: int = 8
    batch: int = 256
    learning_rate: float = 2e-3
    seed: int = 0


def fit_joint(
    inputs: npt.NDArray[np.float32],
    targets: npt.NDArray[np.int64],
    weights: Weights,
    settings: JointFit = JointFit(),
    on_epoch: Callable[[int, float], None] | None = None,
) -> None:
    """Fit joint.net.0 and joint.net.3 in `weights` (Adam on the softmax cross-entropy), on inputs
    standardised for the fit and the standardisation folded into the first layer after."""
    rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 29]))
    mean = inputs.mean(axis=0)
    scale = inputs.std(axis=0) + np.float32(1e-3)
    x_all = ((inputs - mean) / scale).astype(np.float32)
    width, hidden = inputs.shape[1], SIZES.joint_hidden
    params = [
        (rng.standard_normal((width, hidden)) / np.sqrt(width)).astype(np.float32),
        np.zeros(hidden, np.float32),
        (rng.standard_normal((hidden, SYMBOLS)) / np.sqrt(hidden)).astype(np.float32),
        np.zeros(SYMBOLS, np.float32),
    ]
    first = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    step = 0
    for epoch in range(settings.epochs):
        order = rng.permutation(len(x_all))
        loss = 0.0
        for start in range(0, len(order), settings.batch):
            chosen = order[start : start + settings.batch]
            x, y = x_all[chosen], targets[chosen]
            w0, b0, w3, b3 = params
            pre = x @ w0 + b0
            relu = np.maximum(pre, 0.0)
            logits = relu @ w3 + b3
            logits -= logits.max(axis=1, keepdims=True)
            probabilities = np.exp(logits)
            probabilities /= probabilities.sum(axis=1, keepdims=True)
            rows = np.arange(len(y))
            loss += float(-np.log(probabilities[rows, y] + 1e-12).sum())
            grad = probabilities
            grad[rows, y] -= 1.0
            grad /= len(y)
            back = grad @ w3.T
            back[pre <= 0] = 0.0
            grads = [x.T @ back, back.sum(axis=0), relu.T @ grad, grad.sum(axis=0)]
            step += 1
            for i, (param, g) in enumerate(zip(params, grads, strict=True)):
                first[i] = 0.9 * first[i] + 0.1 * g
                second[i] = 0.999 * second[i] + 0.001 * g * g
                update = (first[i] / (1 - 0.9**step)) / (
                    np.sqrt(second[i] / (1 - 0.999**step)) + 1e-8
                )
                param -= np.float32(settings.learning_rate) * update.astype(np.float32)
        if on_epoch is not None:
            on_epoch(epoch, loss / len(x_all))
    w0, b0, w3, b3 = params
    weights["joint.net.0.weight"] = np.ascontiguousarray((w0 / scale[:, None]).T, np.float32)
    weights["joint.net.0.bias"] = (b0 - (mean / scale) @ w0).astype(np.float32)
    weights["joint.net.3.weight"] = np.ascontiguousarray(w3.T, np.float32)
    weights["joint.net.3.bias"] = b3.astype(np.float32)
