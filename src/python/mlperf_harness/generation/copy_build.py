"""The steps of the copy recipe (copy_recipe) that GPT-J's and Llama's builders (their copy_fit.py)
take alike, whatever their blocks: the embedding table, the maps of the induction heads' queries,
the examples the jump head and the output rows are fitted on, lm_head's copy part, and the build's
order of steps into a stand-in."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt
import onnx

from mlperf_harness.generation import copy_recipe
from mlperf_harness.generation.copy_recipe import LAYOUT, SpecialTokens, TrainingSequence
from mlperf_harness.generation.decoder_graph import Forward

Float32Array = npt.NDArray[np.float32]
Int64Array = npt.NDArray[np.int64]

JUMP_KEYS = np.r_[LAYOUT.e, LAYOUT.p1, LAYOUT.p2]  # what the jump head's key reads
CALIBRATION_SEQUENCES = 8  # the training sequences a norm's scale is measured on


def write_embeddings(table: Float32Array, embed: Float32Array, special: SpecialTokens) -> None:
    """Each token's unit embedding into E of the embedding table, and a flag of its own for each
    token the recipe spots ("\\n", " .", the anchor)."""
    table[:, LAYOUT.e] = embed
    for flag, token in (
        (LAYOUT.flag_newline, special.newline),
        (LAYOUT.flag_line_end, special.line_end),
        (LAYOUT.flag_anchor, special.anchor),
    ):
        table[token, flag] = 1.0


def _substitution_map(embed: Float32Array, substitutions: Mapping[int, int | None]) -> Float32Array:
    """A linear map of embeddings: identity, but token s -> token t (or -> 0 for None)."""
    m = np.eye(copy_recipe.EMBED)
    for source, target in substitutions.items():
        es = embed[source].astype(np.float64)
        et = np.zeros(copy_recipe.EMBED) if target is None else embed[target].astype(np.float64)
        m += np.outer(et - es, es)
    return m.astype(np.float32)


def induction_maps(
    embed: Float32Array, special: SpecialTokens
) -> tuple[Float32Array, Float32Array]:
    """The maps the induction heads' queries read this token's and the previous token's embedding
    through: the response joins the article where the prompt's closing ":" stands for the
    article's " --" before the lead (and, as the previous token, the anchor for the ")" before it
    and "\\n" for the "." that ends a sentence); "\\n" as this token and " ." as either map to 0."""
    sp = special
    this = _substitution_map(embed, {sp.colon: sp.dash, sp.newline: None, sp.line_end: None})
    previous = _substitution_map(
        embed,
        {sp.colon: sp.dash, sp.anchor: sp.before_dash, sp.newline: sp.period, sp.line_end: None},
    )
    return this, previous


def calibration_ids(sequences: Sequence[TrainingSequence]) -> Int64Array:
    """[1, positions]: the first training sequences as one, what a norm's scale is measured on."""
    return np.concatenate([s.ids for s in sequences[:CALIBRATION_SEQUENCES]])[None, :]


class Positions(Protocol):
    @property
    def max_positions(self) -> int: ...


def block_input(
    numpy_forward: Callable[..., Forward],
    weights: Mapping[str, Float32Array],
    shape: Positions,
    ids: Int64Array,
    layer: int,
) -> Float32Array:
    """The input of block `layer` (the number of blocks: the final norm's) for `ids` [1, n] at
    positions 0..n-1, by the architecture's reference `numpy_forward`."""
    positions = np.arange(ids.shape[1], dtype=np.int64)[None, :] % shape.max_positions
    forward = numpy_forward(weights, shape, ids, positions, np.ones_like(ids), upto=layer)
    hidden: Float32Array = forward.hidden[layer]
    return hidden


def fit_jump(
    sequences: Sequence[TrainingSequence],
    normed: Callable[[Int64Array], Float32Array],
    steps: int,
) -> tuple[npt.NDArray[np.float64], float]:
    """The jump head's form (copy_recipe.fit_jump_form) over the training jumps: the query S at
    each jump, the keys JUMP_KEYS of every position up to it, read where `normed(ids)` (block 1's
    normed input of one sequence, [positions, hidden]) has them."""
    queries, keys, targets = [], [], []
    for sequence in sequences:
        if not sequence.jumps:
            continue
        a = normed(sequence.ids[None, :])
        for at, target in sequence.jumps:
            queries.append(a[at, LAYOUT.s].astype(np.float64))
            keys.append(a[: at + 1, JUMP_KEYS].astype(np.float64))
            targets.append(target)
    return copy_recipe.fit_jump_form(queries, keys, targets, steps)


@dataclass(frozen=True)
class OutputExamples:
    """What lm_head is fitted on: the final features before each training response token."""

    features: Float32Array  # [N, hidden]
    targets: Int64Array  # [N]: the token that follows
    copy: Float32Array  # [N, vocab]: each token's embedding read in C
    fitted: Int64Array  # the tokens whose rows are fitted: " .", "\n" and EOS


def output_examples(
    sequences: Sequence[TrainingSequence],
    final: Callable[[Int64Array], Float32Array],
    embed: Float32Array,
    special: SpecialTokens,
) -> OutputExamples:
    """`final(ids)`: the final norm's output of one sequence, [positions, hidden]."""
    features, targets = [], []
    for sequence in sequences:
        f = final(sequence.ids[None, :])
        rows = np.arange(sequence.response_start - 1, sequence.ids.size - 1)
        features.append(f[rows])
        targets.append(sequence.ids[rows + 1])
    h = np.concatenate(features).astype(np.float32)
    copy = (h[:, LAYOUT.c] @ embed.T).astype(np.float32)
    fitted = np.array([special.line_end, special.newline, special.eos])
    return OutputExamples(h, np.concatenate(targets), copy, fitted)


def copy_head(
    fit: copy_recipe.OutputFit, embed: Float32Array, fitted: Int64Array, hidden: int
) -> Float32Array:
    """lm_head's weight: alpha x each token's embedding read in C, plus the fitted rows."""
    head = np.zeros((embed.shape[0], hidden), np.float32)
    head[:, LAYOUT.c] = fit.alpha * embed
    head[fitted] += fit.rows
    return head


ShapeT = TypeVar("ShapeT")
ShapeT_co = TypeVar("ShapeT_co", covariant=True)


class CopyBuilder(Protocol[ShapeT_co]):
    """A builder of the recipe's weights for one architecture (its copy_fit.py)."""

    @property
    def shape(self) -> ShapeT_co: ...
    @property
    def weights(self) -> Mapping[str, Float32Array]: ...
    def build_block0(self, sequences: Sequence[TrainingSequence]) -> None: ...
    def build_block1_heads(self, sequences: Sequence[TrainingSequence]) -> None: ...
    def fit_jump_head(self, sequences: Sequence[TrainingSequence]) -> float: ...
    def fit_output(self, sequences: Sequence[TrainingSequence]) -> float: ...


def build_copy_stand_in(
    builder: CopyBuilder[ShapeT],
    sequences: Sequence[TrainingSequence],
    seed: int,
    doc: str,
    model_of: Callable[
        [Mapping[str, Float32Array], ShapeT, str, Mapping[str, str]], onnx.ModelProto
    ],
    started: float,
) -> copy_recipe.CopyStandIn[ShapeT]:
    """The recipe's steps in order on the training sequences, then the graph `model_of` writes,
    marked as a stand-in of `seed`; its seconds counted from `started` (time.perf_counter)."""
    builder.build_block0(sequences)
    builder.build_block1_heads(sequences)
    jump_accuracy = builder.fit_jump_head(sequences)
    token_accuracy = builder.fit_output(sequences)
    metadata = {"mlperf_harness.stand_in": "true", "mlperf_harness.seed": str(seed)}
    model = model_of(builder.weights, builder.shape, doc, metadata)
    return copy_recipe.CopyStandIn(
        model, builder.shape, seed, jump_accuracy, token_accuracy, time.perf_counter() - started
    )
