"""The copy recipe shared by the decoder stand-ins (GPT-J's, Llama's): the residual stream's
layout, the tokens it needs to spot, the training sequences, and the two fits (the jump head's
form and the output layer's rows). How the recipe works: benchmarks/gptj/copy_fit.py; how Llama's
blocks carry it: benchmarks/llama2_70b/copy_fit.py."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt
import onnx

from mlperf_harness.errors import HarnessError

Float32Array = npt.NDArray[np.float32]
Int64Array = npt.NDArray[np.int64]

EMBED = 64  # dims of a token's identity in each subspace
MATCH = 36  # of them, what the induction head compares per term (2 terms in 72 non-rotary dims)
POSITION_GAP = 20.0  # score margin of a previous-token head's peak over any other offset
INDUCTION_SCALE = 25.0  # score per unit match of the induction head (a full match gives ~2 x 0.56)
COUNT_SCALE = 30.0  # score of a counted token where the count head's query is on
MLP_SCALE = 0.01


class Layout:
    """Where each piece lives in the residual stream (hidden 384)."""

    e = slice(0, 64)  # the token's embedding
    p1 = slice(64, 128)  # the previous token's
    p2 = slice(128, 192)  # the one before
    c = slice(192, 256)  # the token the copy heads point at
    s = slice(256, 258)  # at "\n": (1, n) / (n + 1), n the " ." so far
    t = slice(258, 260)  # the same at " ."
    flag_newline = 260
    flag_line_end = 261
    flag_anchor = 262
    const = 263  # 0 in the stream, 1 in every LayerNorm's output
    p3 = slice(264, 328)  # the token three back
    spare = slice(328, 384)  # the MLPs' outputs


LAYOUT = Layout()


@dataclass(frozen=True)
class SpecialTokens:
    eos: int
    newline: int  # "\n" between summary lines
    line_end: int  # " ." ending each summary line
    anchor: int  # " Response" of the prompt's "### Response:"
    colon: int  # ":" closing the prompt
    dash: int  # " --" before the article's lead
    before_dash: int  # the token before " --" (")" of "(CNN)")
    period: int  # "." ending an article sentence


@dataclass
class TrainingSequence:
    ids: Int64Array  # prompt + response tokens (response ends with EOS)
    response_start: int  # index of the first response token
    jumps: list[
        tuple[int, int]
    ]  # (position of a "\n", position it must attend: sentence start + 2)


ShapeT = TypeVar("ShapeT")


@dataclass(frozen=True)
class CopyStandIn(Generic[ShapeT]):
    """A stand-in the copy recipe built: its graph, its shape and what the fits reached."""

    model: onnx.ModelProto
    shape: ShapeT
    seed: int
    jump_accuracy: float  # training jumps whose argmax hits the target
    token_accuracy: float  # teacher-forced training response tokens predicted
    seconds: float

    def serialized(self) -> bytes:
        data: bytes = self.model.SerializeToString()
        return data

    def sha256(self) -> str:
        return hashlib.sha256(self.serialized()).hexdigest()


def find(haystack: Sequence[int], needle: Sequence[int]) -> int:
    """Where `needle` first occurs in `haystack`, or -1."""
    n = len(needle)
    for start in range(len(haystack) - n + 1):
        if list(haystack[start : start + n]) == list(needle):
            return start
    return -1


def training_sequence(
    prompt: Sequence[int],
    response: Sequence[int],
    newline: int,
    later_lines: Sequence[Sequence[int]],
) -> TrainingSequence:
    """A training pair as the fits see it: prompt + response ids (the response ending with EOS),
    and a jump for each "\n" of the response whose next line (`later_lines`' tokens, in order, as
    they are written in the prompt) is found in the prompt: its target is that sentence's third
    token, whose two-back token (P2) is the line's first."""
    ids = np.array([*prompt, *response], np.int64)
    newlines = [len(prompt) + i for i, t in enumerate(response) if t == newline]
    jumps = []
    for at, sentence in zip(newlines, later_lines, strict=False):
        start = find(prompt, sentence)
        if start >= 0 and len(sentence) >= 3:
            jumps.append((at, start + 2))
    return TrainingSequence(ids, len(prompt), jumps)


def unit_rows(rng: np.random.Generator, rows: int, dims: int) -> Float32Array:
    x = rng.standard_normal((rows, dims))
    x -= x.mean(axis=1, keepdims=True)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def positional_amplitude(inv_freq: npt.NDArray[np.float64], head_dim: int, positions: int) -> float:
    """a^2 such that a previous-token head's peak beats every other offset by POSITION_GAP, its
    query and key spread over the rotary pairs of angles `inv_freq` per position."""
    offsets = np.arange(1, positions)
    margin = (inv_freq.size - np.cos(offsets[:, None] * inv_freq[None, :]).sum(1)).min()
    return float(POSITION_GAP * np.sqrt(head_dim) / margin)


def fit_jump_form(
    queries: Sequence[npt.NDArray[np.float64]],
    keys: Sequence[npt.NDArray[np.float64]],
    targets: Sequence[int],
    steps: int,
) -> tuple[npt.NDArray[np.float64], float]:
    """The jump head's bilinear form M [2, keys' width] (query . M . key is a position's score),
    by Adam on softmax cross-entropy over each jump's positions; and the fraction of jumps whose
    argmax is the target. `queries[n]` is jump n's S part [2], `keys[n]` [positions, width] the
    key features of the positions it may attend, `targets[n]` the one it must."""
    width = keys[0].shape[1] if keys else 0
    if not queries:
        raise HarnessError("no training jumps: the summaries were not found in their articles")
    # Padded to one array: [jumps, longest, keys]; positions past a jump's own are masked.
    longest = max(len(key) for key in keys)
    padded = np.zeros((len(keys), longest, width))
    valid = np.zeros((len(keys), longest), bool)
    for row, key in enumerate(keys):
        padded[row, : len(key)] = key
        valid[row, : len(key)] = True
    query = np.array(queries)
    goal = np.array(targets)
    every = np.arange(len(keys))
    m = np.zeros((2, width))
    first, second = np.zeros_like(m), np.zeros_like(m)

    def probabilities(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        scores = np.einsum("nlk,nk->nl", padded, query @ m)
        scores = np.where(valid, scores, -np.inf)
        probs = np.exp(scores - scores.max(1, keepdims=True))
        out: npt.NDArray[np.float64] = probs / probs.sum(1, keepdims=True)
        return out

    for step in range(1, steps + 1):
        probs = probabilities(m)
        probs[every, goal] -= 1.0
        grad = query.T @ np.einsum("nl,nlk->nk", probs, padded) / len(keys) + 1e-4 * m
        first = 0.9 * first + 0.1 * grad
        second = 0.999 * second + 0.001 * grad**2
        m -= 0.05 * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    hits = int((probabilities(m).argmax(1) == goal).sum())
    return m, hits / len(queries)


@dataclass(frozen=True)
class OutputFit:
    alpha: float  # the copy logit's weight
    rows: Float32Array  # [3, hidden]: " .", "\n" and EOS's rows over the final features
    row_bias: npt.NDArray[np.float64]  # [3]
    other_bias: float  # every other token's
    accuracy: float  # training response tokens whose argmax is right


def fit_output_rows(
    h: Float32Array,
    y: npt.NDArray[np.int64],
    copy: Float32Array,
    special: npt.NDArray[np.int64],
    steps: int,
    biases: bool = True,
    row_features: Float32Array | None = None,
    feature_gain: Float32Array | None = None,
) -> OutputFit:
    """The output layer's fitted part, by Adam on softmax cross-entropy at the response positions:
    logits = alpha x `copy` (each token's embedding read in C) + other_bias, and for the `special`
    tokens (" .", "\n", EOS) h @ rows + row_bias instead of the bias. `biases` False: no bias at
    all (an architecture whose lm_head has none: the rows' constant feature stands for it).

    `row_features` [3, hidden], 0 or 1: the features each row may read (the others stay 0), so
    that a decision rests on what should decide it and not on whatever else told the training
    answers apart. `feature_gain` [hidden]: what the fit multiplies each feature by (the rows
    returned are for the features as they are). Adam moves a weight by about its step size a
    step, so a feature whose small differences must decide (a count) is given a gain instead of
    many more steps."""
    # parameters: alpha, rows [3, hidden], their biases [3], one bias for the other tokens
    alpha, rows, row_bias, other_bias = (
        1.0,
        np.zeros((3, h.shape[1]), np.float32),
        np.zeros(3),
        0.0,
    )
    params = [np.array([alpha]), rows, row_bias, np.array([other_bias])]
    moments = [(np.zeros_like(q), np.zeros_like(q)) for q in params]
    n = y.size
    if feature_gain is not None:
        h = h * feature_gain
    for step in range(1, steps + 1):
        logits = params[0][0] * copy + params[3][0]
        logits[:, special] += h @ params[1].T + params[2] - params[3][0]
        logits -= logits.max(1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(1, keepdims=True)
        probs[np.arange(n), y] -= 1.0
        probs /= n
        grads = [
            np.array([(probs * copy).sum()]),
            probs[:, special].T @ h,
            probs[:, special].sum(0),
            np.array([probs.sum() - probs[:, special].sum()]),
        ]
        if row_features is not None:
            grads[1] *= row_features
        if not biases:  # both stay 0, as in the lm_head the rows are written into
            grads[2][:] = 0.0
            grads[3][:] = 0.0
        for q, g, (m1, m2) in zip(params, grads, moments, strict=True):
            m1 *= 0.9
            m1 += 0.1 * g
            m2 *= 0.999
            m2 += 0.001 * g**2
            q -= 0.1 * (m1 / (1 - 0.9**step)) / (np.sqrt(m2 / (1 - 0.999**step)) + 1e-8)
    alpha, rows, row_bias, other_bias = params[0][0], params[1], params[2], params[3][0]
    logits = alpha * copy + other_bias
    logits[:, special] += h @ rows.T + row_bias - other_bias
    accuracy = float((logits.argmax(1) == y).mean())
    if feature_gain is not None:
        rows = rows * feature_gain
    return OutputFit(float(alpha), rows, row_bias, float(other_bias), accuracy)
