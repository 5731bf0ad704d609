"""Fit BERT's span head — start and end logits per token — on a model body's final hidden states.

The head is linear: logits = hidden @ W + b, W [hidden, 2]. It is fitted by ridge least squares of
one-hot start and end positions on the hidden states of context tokens (segment 1, unmasked): a
closed form in float64, deterministic, with statistics accumulated batch by batch so memory stays
at one batch of hidden states whatever the training set's size. For a two-class problem least
squares gives Fisher's discriminant direction, which is what the argmax over a window's tokens
needs; windows that do not hold the answer (positions 0, as in BERT's SQuAD features) still add
their context tokens as negatives.

Inputs are plain arrays in the layout of BERT's SQuAD features, so this needs no feature
conversion: input_ids, input_mask, segment_ids [N, 384] (int32 or int64) and start_positions,
end_positions [N], the answer's first and last token in the window, 0 where it is not in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort

from mlperf_harness.benchmarks.bert.stand_in_model import (
    END_LOGITS,
    FINAL_HIDDEN,
    INPUT_IDS,
    INPUT_MASK,
    SEGMENT_IDS,
    SEQ_LENGTH,
    START_LOGITS,
)
from mlperf_harness.errors import HarnessError

Float32Array = npt.NDArray[np.float32]
Float64Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int32] | npt.NDArray[np.int64]

RIDGE = 1e-4  # L2 penalty, relative to the mean diagonal of the hidden states' Gram matrix
BATCH_SIZE = 16  # windows per ONNX Runtime call


@dataclass(frozen=True)
class SpanFeatures:
    """BERT SQuAD features as arrays; positions are window token indices, 0 = not in the window."""

    input_ids: IntArray
    input_mask: IntArray
    segment_ids: IntArray
    start_positions: IntArray
    end_positions: IntArray

    def check(self) -> None:
        count = len(self.input_ids)
        for name in ("input_ids", "input_mask", "segment_ids"):
            array = getattr(self, name)
            if array.shape != (count, SEQ_LENGTH):
                raise HarnessError(f"{name} has shape {array.shape}, expected ({count}, 384)")
        for name in ("start_positions", "end_positions"):
            array = getattr(self, name)
            if array.shape != (count,) or array.min(initial=0) < 0 or array.max(initial=0) >= 384:
                raise HarnessError(f"{name} must be [{count}] token indices in [0, 384)")

    def batches(self, size: int) -> Iterator[tuple[slice, dict[str, npt.NDArray[np.int64]]]]:
        """(rows, model inputs) per batch, the inputs cast to the model's int64."""
        for start in range(0, len(self.input_ids), size):
            rows = slice(start, start + size)
            yield (
                rows,
                {
                    INPUT_IDS: np.asarray(self.input_ids[rows], dtype=np.int64),
                    INPUT_MASK: np.asarray(self.input_mask[rows], dtype=np.int64),
                    SEGMENT_IDS: np.asarray(self.segment_ids[rows], dtype=np.int64),
                },
            )


@dataclass(frozen=True)
class SpanHead:
    weight: Float32Array  # [hidden, 2]: column 0 the start logit, column 1 the end logit
    bias: Float32Array  # [2]
    context_tokens: int  # the rows of the least-squares fit
    answers: int  # windows that hold their answer


def context_mask(input_mask: IntArray, segment_ids: IntArray) -> npt.NDArray[np.bool_]:
    """The tokens an answer may start or end on: the context segment, not padding."""
    mask: npt.NDArray[np.bool_] = (np.asarray(segment_ids) == 1) & (np.asarray(input_mask) == 1)
    return mask


def session(model: onnx.ModelProto | bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.use_deterministic_compute = True
    options.log_severity_level = 3  # warnings about unused initialisers etc. are noise here
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def fit_span_head(
    body: onnx.ModelProto | bytes, features: SpanFeatures, batch_size: int = BATCH_SIZE
) -> SpanHead:
    """Run `body` (output FINAL_HIDDEN) over the features and fit the head by ridge least squares."""
    features.check()
    answers = int(np.sum((features.start_positions > 0) & (features.end_positions > 0)))
    if answers == 0:
        raise HarnessError("no window holds its answer: nothing to fit the span head to")
    body_session = session(body)
    gram: Float64Array | None = None
    moment: Float64Array | None = None
    context_tokens = 0
    for rows, inputs in features.batches(batch_size):
        (hidden,) = body_session.run([FINAL_HIDDEN], inputs)
        mask = context_mask(inputs[INPUT_MASK], inputs[SEGMENT_IDS])
        targets = np.zeros((*mask.shape, 2))
        window = np.arange(len(mask))
        targets[window, features.start_positions[rows], 0] = 1.0
        targets[window, features.end_positions[rows], 1] = 1.0
        x = np.asarray(hidden, dtype=np.float64)[mask]
        x = np.concatenate([x, np.ones((len(x), 1))], axis=1)  # the bias column
        y = targets[mask]  # a position 0 ([CLS]) is outside the mask: all-negative windows
        gram = x.T @ x if gram is None else gram + x.T @ x
        moment = x.T @ y if moment is None else moment + x.T @ y
        context_tokens += len(x)
    if gram is None or moment is None or context_tokens == 0:
        raise HarnessError("no context tokens to fit the span head on")
    ridge = np.eye(len(gram)) * (RIDGE * float(np.mean(np.diag(gram))))
    ridge[-1, -1] = 0.0  # the bias is not penalised
    solution = np.linalg.solve(gram + ridge, moment)  # [hidden + 1, 2]
    return SpanHead(
        weight=solution[:-1].astype(np.float32),
        bias=solution[-1].astype(np.float32),
        context_tokens=context_tokens,
        answers=answers,
    )


def span_logits(
    model: onnx.ModelProto | bytes, features: SpanFeatures, batch_size: int = BATCH_SIZE
) -> tuple[Float32Array, Float32Array]:
    """The start and end logits [N, 384] of a model with the official interface."""
    model_session = session(model)
    starts, ends = [], []
    for _, inputs in features.batches(batch_size):
        start, end = model_session.run([START_LOGITS, END_LOGITS], inputs)
        starts.append(np.asarray(start, dtype=np.float32))
        ends.append(np.asarray(end, dtype=np.float32))
    return np.concatenate(starts), np.concatenate(ends)


def position_accuracy(
    model: onnx.ModelProto | bytes, features: SpanFeatures, batch_size: int = BATCH_SIZE
) -> tuple[float, float]:
    """Of windows that hold their answer: how often the argmax over context tokens of the start
    (end) logits is the start (end) position."""
    features.check()
    start_logits, end_logits = span_logits(model, features, batch_size)
    mask = context_mask(features.input_mask, features.segment_ids)
    answered = (features.start_positions > 0) & (features.end_positions > 0)
    if not answered.any():
        raise HarnessError("no window holds its answer: no accuracy to measure")
    starts = np.where(mask, start_logits, -np.inf).argmax(axis=1)
    ends = np.where(mask, end_logits, -np.inf).argmax(axis=1)
    return (
        float(np.mean(starts[answered] == features.start_positions[answered])),
        float(np.mean(ends[answered] == features.end_positions[answered])),
    )
