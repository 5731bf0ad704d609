"""RNN-T's greedy decoding for a whole batch at once, in NumPy around any prediction-step and joint
functions (ONNX Runtime sessions on the CPU: runners.py).

It decides exactly what the reference's ScriptGreedyDecoder decides for each utterance alone: at
encoder frame t, the joint network scores (frame t, the prediction network's output for the last
symbol emitted); a blank moves to frame t + 1; any other symbol is emitted, the prediction network
steps on it, and the same frame is scored again, at most MAX_SYMBOLS_PER_STEP (30) symbols a frame.
Here every utterance of the batch is stepped together: one joint call a step for the utterances
still decoding (each at its own frame), one prediction call for those that just emitted; an
utterance whose frames are done drops out. The prediction network's output is kept between steps
rather than recomputed after a blank (the reference recomputes the same value).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.rnnt.topology import MAX_SYMBOLS_PER_STEP, SOS
from mlperf_harness.datasets.librispeech.alphabet import BLANK

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
# (symbols [n], h [L, n, P], c [L, n, P]) -> (g [n, P], h, c)
PredictionStep = Callable[[I64, F32, F32], tuple[F32, F32, F32]]
# (encoder frames [n, H], prediction outputs [n, P]) -> the best symbol of each [n]
JointStep = Callable[[F32, F32], I64]


def greedy_decode(
    encoded: F32,
    lengths: I64,
    prediction: PredictionStep,
    joint: JointStep,
    layers: int,
    hidden: int,
    max_symbols: int = MAX_SYMBOLS_PER_STEP,
) -> I64:
    """[B, 1 + width] int64: column 0 each utterance's symbol count, then its symbols (zeros after).

    encoded: [B, T, H], the encoder's output; lengths: [B], each utterance's encoder frames."""
    batch = encoded.shape[0]
    zeros = np.zeros((layers, batch, hidden), np.float32)
    g, h, c = prediction(np.full(batch, SOS, np.int64), zeros, zeros.copy())
    frame = np.zeros(batch, np.int64)
    emitted_here = np.zeros(batch, np.int64)  # symbols emitted at the current frame
    counts = np.zeros(batch, np.int64)
    width = max(16, int(lengths.max(initial=0)) * 2)
    out = np.zeros((batch, width), np.int64)
    active = np.flatnonzero(frame < lengths)
    while len(active):
        best = joint(encoded[active, frame[active]], g[active])
        emit = best != BLANK
        emitting = active[emit]
        if len(emitting):
            if int(counts[emitting].max()) >= out.shape[1]:
                out = np.concatenate([out, np.zeros_like(out)], axis=1)
            out[emitting, counts[emitting]] = best[emit]
            counts[emitting] += 1
            emitted_here[emitting] += 1
            g_new, h_new, c_new = prediction(
                best[emit],
                np.ascontiguousarray(h[:, emitting]),
                np.ascontiguousarray(c[:, emitting]),
            )
            g[emitting], h[:, emitting], c[:, emitting] = g_new, h_new, c_new
        moving = active[~emit | (emitted_here[active] >= max_symbols)]
        frame[moving] += 1
        emitted_here[moving] = 0
        active = active[frame[active] < lengths[active]]
    return np.concatenate([counts[:, None], out[:, : max(1, int(counts.max(initial=0)))]], axis=1)
