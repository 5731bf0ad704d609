"""Weights for the Llama stand-in: GPT-J's copy recipe (benchmarks/gptj/copy_fit.py says how it
answers by copying from the question) carried by Llama's blocks, which differ in four ways:

- RMSNorm has no bias, so no norm can output the recipe's constant 1. Every token's embedding
  carries CONST_VALUE on the CONST dim instead (no layer writes it), which every norm turns into
  CONST_VALUE / rms(x): near-constant, and measured (`_scales`) to size what reads it. Large
  against a token's unit embedding, it also keeps rms(x) nearly the same at every position, which
  the counters need: they weigh flags normed by each position's rms. At 3 (rather than 10) the
  anchor weighed from 0.96 to 1.35 times a " ." depending on the question, enough to count two
  lines as three or three as two.
- Rotary turns the WHOLE head (rotate_half: pairs (i, i + 48) of a 96-dim head). The stand-in's
  rope_theta, 1e16 (a config field, Llama 2's being 10,000), makes pair i turn 10^(-i/3) rad per
  position: pairs 0..11 turn exactly as GPT-J's 12 rotary pairs do (its 24 rotary dims, theta
  10,000), and pairs 12..47 turn by at most 1e-4 rad per position, 0.2 rad over 2,048 positions:
  the recipe's 72 "non-rotary" dims, where heads match content.
- Grouped-query attention: 4 query heads share 2 key/value heads, each pair the same keys and
  values, so the heads that share one are chosen to need the same: block 0's previous-token heads
  (offsets 1 and 2) one, the "\\n" counter and the three-back head the other (their keys on
  different dims, their values at dims 0..63 and 64..65); in block 1 the two induction heads (the
  key holds P1, P2 and P3 on 24 dims each, the term they share on the same dims; 24 rather than 36
  dims each, the score scaled by 36/24) and the jump head with the " ." counter.
- The MLP comes after attention from its own norm (SwiGLU); it writes small seeded values into the
  spare dims, as GPT-J's does. lm_head has no bias: the fitted rows read the constant dim instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.model import (
    Float32Array,
    Int64Array,
    LlamaShape,
    inverse_frequencies,
    numpy_forward,
    rms_norm,
    weight_shapes,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation import copy_build
from mlperf_harness.generation.copy_recipe import (
    COUNT_SCALE,
    EMBED,
    INDUCTION_SCALE,
    LAYOUT,
    MATCH,
    MLP_SCALE,
    SpecialTokens,
    TrainingSequence,
    fit_output_rows,
    positional_amplitude,
    unit_rows,
)

COPY_ROPE_THETA = 1e16  # pair i turns 10^(-i/3) rad per position (see the module's docstring)
POSITION_PAIRS = 12  # the pairs the previous-token heads use: GPT-J's rotary_dim 24
SHARED_MATCH = 24  # dims per induction term when two heads share a key (3 terms in 72 dims)
CONST_VALUE = 10.0  # the constant dim's value in every embedding (see the module's docstring)
COUNT_GAIN = 30.0  # the " ." count's gain in the output fit (LlamaCopyBuilder._row_features)


def stand_in_shape(vocab_size: int) -> LlamaShape:
    """2 blocks, hidden 384, 4 query heads of 96 sharing 2 key/value heads, SwiGLU of 1,024."""
    return LlamaShape(
        layers=2,
        hidden=384,
        heads=4,
        kv_heads=2,
        inner=1024,
        vocab_size=vocab_size,
        rope_theta=COPY_ROPE_THETA,
        max_positions=2048,
    )


class LlamaCopyBuilder:
    """Writes the recipe's weights step by step; `fit_*` need the training sequences."""

    def __init__(self, shape: LlamaShape, special: SpecialTokens, seed: int) -> None:
        if (shape.layers, shape.hidden, shape.heads, shape.kv_heads) != (2, 384, 4, 2) or (
            shape.rope_theta != COPY_ROPE_THETA
        ):
            raise HarnessError(f"the copy recipe is written for {stand_in_shape(0)}, not {shape}")
        self.shape, self.special, self.lay = shape, special, LAYOUT
        hd = shape.head_dim
        half = hd // 2
        # A head's static dims: the second and first members of pairs 12..47, which barely turn.
        self.static = np.r_[POSITION_PAIRS:half, half + POSITION_PAIRS : hd]
        rng = np.random.default_rng(np.random.SeedSequence([seed, 70]))
        self.embed = unit_rows(rng, shape.vocab_size, EMBED)
        w = {n: np.zeros(d, np.float32) for n, d in weight_shapes(shape).items()}
        copy_build.write_embeddings(w["model.embed_tokens.weight"], self.embed, special)
        w["model.embed_tokens.weight"][:, self.lay.const] = CONST_VALUE
        for layer in range(2):
            p = f"model.layers.{layer}"
            w[f"{p}.input_layernorm.weight"][:] = 1.0
            w[f"{p}.post_attention_layernorm.weight"][:] = 1.0
            # seeded SwiGLU writing small values into the spare dims
            w[f"{p}.mlp.gate_proj.weight"][:] = (
                rng.standard_normal((shape.inner, shape.hidden)) * 0.05
            )
            w[f"{p}.mlp.up_proj.weight"][:] = (
                rng.standard_normal((shape.inner, shape.hidden)) * 0.05
            )
            spare = self.lay.spare
            w[f"{p}.mlp.down_proj.weight"][spare] = (
                rng.standard_normal((spare.stop - spare.start, shape.inner)) * MLP_SCALE
            )
        w["model.norm.weight"][:] = 1.0
        self.weights = w

    # -- helpers -------------------------------------------------------------------------------

    def _rows(self, name: str, layer: int, head: int) -> tuple[Float32Array, int]:
        """A projection's weight and the first row of `head` in it."""
        return self.weights[
            f"model.layers.{layer}.self_attn.{name}.weight"
        ], head * self.shape.head_dim

    def _normed(self, ids: Int64Array, layer: int, norm: str) -> Float32Array:
        """Block `layer`'s input for `ids` [1, n] through the RMSNorm `norm`: [n, hidden]."""
        x = copy_build.block_input(numpy_forward, self.weights, self.shape, ids, layer)
        normed: Float32Array = rms_norm(x, self.weights[f"{norm}.weight"])[0]
        return normed

    def _scales(self, sequences: Sequence[TrainingSequence], layer: int) -> tuple[float, float]:
        """Mean norm of a unit embedding as block `layer`'s norm outputs it (E part), and the mean
        value of the constant dim there."""
        ids = copy_build.calibration_ids(sequences)
        a = self._normed(ids, layer, f"model.layers.{layer}.input_layernorm")
        return (
            float(np.linalg.norm(a[:, self.lay.e], axis=-1).mean()),
            float(a[:, self.lay.const].mean()),
        )

    def _position_head(
        self, layer: int, head: int, offset: int, into: slice, scale: float, const: float
    ) -> None:
        """Query head `head` attends the token `offset` back and writes its embedding into `into`;
        its key/value head gets the positional key and the embedding as value (dims 0..63)."""
        s, lay = self.shape, self.lay
        half = s.head_dim // 2
        theta = inverse_frequencies(s)[:POSITION_PAIRS]
        a = np.sqrt(positional_amplitude(theta, s.head_dim, s.max_positions)) / const
        q, qs = self._rows("q_proj", layer, head)
        k, ks = self._rows("k_proj", layer, head // s.group)
        for i, angle in enumerate(theta):  # q~ = a e^{-i offset theta}, k~ = a: peak at offset
            q[qs + i, lay.const] = a * np.cos(offset * angle)
            q[qs + half + i, lay.const] = -a * np.sin(offset * angle)
            k[ks + i, lay.const] = a
        v, vs = self._rows("v_proj", layer, head // s.group)
        v[vs : vs + EMBED, lay.e] = np.eye(EMBED) / scale
        o = self.weights[f"model.layers.{layer}.self_attn.o_proj.weight"]
        o[into, head * s.head_dim : head * s.head_dim + EMBED] = np.eye(EMBED)

    def _count_head(
        self, layer: int, head: int, gate_flag: int, key_dim: int, into: slice, scale: float
    ) -> None:
        """At tokens with `gate_flag`, (1, n) / (n + 1) where n counts the " ." tokens so far; its
        key on static dim `key_dim`, its value at dims 64, 65."""
        s, lay = self.shape, self.lay
        dim = int(self.static[key_dim])
        strength = np.sqrt(COUNT_SCALE * np.sqrt(s.head_dim)) / scale
        q, qs = self._rows("q_proj", layer, head)
        k, ks = self._rows("k_proj", layer, head // s.group)
        v, vs = self._rows("v_proj", layer, head // s.group)
        q[qs + dim, gate_flag] = strength
        k[ks + dim, lay.flag_anchor] = strength
        k[ks + dim, lay.flag_line_end] = strength
        v[vs + EMBED, lay.flag_anchor] = 1.0 / scale
        v[vs + EMBED + 1, lay.flag_line_end] = 1.0 / scale
        o = self.weights[f"model.layers.{layer}.self_attn.o_proj.weight"]
        o[into, head * s.head_dim + EMBED : head * s.head_dim + EMBED + 2] = np.eye(2)

    # -- the recipe ------------------------------------------------------------------------------

    def build_block0(self, sequences: Sequence[TrainingSequence]) -> None:
        scale, const = self._scales(sequences, 0)
        self._position_head(0, 0, 1, self.lay.p1, scale, const)
        self._position_head(0, 1, 2, self.lay.p2, scale, const)
        self._count_head(0, 2, self.lay.flag_newline, 0, self.lay.s, scale)
        self._position_head(0, 3, 3, self.lay.p3, scale, const)

    def build_block1_heads(self, sequences: Sequence[TrainingSequence]) -> None:
        lay, s = self.lay, self.shape
        scale, _ = self._scales(sequences, 1)
        self.block1_scale = scale
        this, previous = copy_build.induction_maps(self.embed, self.special)
        # Key/value head 0, shared by query heads 0 and 1: the key holds P1, P2, P3 (M dims each);
        # head 0 matches (this token, previous) against (P1, P2), head 1 (previous, one before)
        # against (P2, P3) at half weight (GPT-J's heads 0 and 3 of block 1).
        m = SHARED_MATCH
        strength = INDUCTION_SCALE * np.sqrt(s.head_dim) / scale**2 * (MATCH / m)
        terms = [self.static[t * m : (t + 1) * m] for t in range(3)]
        k, ks = self._rows("k_proj", 1, 0)
        for dims, source in zip(terms, (lay.p1, lay.p2, lay.p3), strict=True):
            k[ks + dims, source] = np.eye(EMBED)[:m]
        v, vs = self._rows("v_proj", 1, 0)
        v[vs : vs + EMBED, lay.e] = np.eye(EMBED) / scale
        o = self.weights["model.layers.1.self_attn.o_proj.weight"]
        for head, queries, weight in (
            (0, ((0, lay.e, this), (1, lay.p1, previous)), 1.0),
            (1, ((1, lay.p1, previous), (2, lay.p2, previous)), 0.5),
        ):
            q, qs = self._rows("q_proj", 1, head)
            for term, source, mapping in queries:
                q[qs + terms[term], source] = strength * mapping[:m]
            o[lay.c, head * s.head_dim : head * s.head_dim + EMBED] = weight * np.eye(EMBED)
        # Key/value head 1: the jump head (query head 2, fitted later) and the " ." counter.
        self._count_head(1, 3, lay.flag_line_end, 2, lay.t, scale)

    def fit_jump_head(self, sequences: Sequence[TrainingSequence], steps: int = 300) -> float:
        """The jump head's form S x M x (E, P1, P2) (copy_recipe.fit_jump_form); returns the
        fraction of training jumps whose argmax is the target."""
        w, s, lay = self.weights, self.shape, self.lay
        m, accuracy = copy_build.fit_jump(
            sequences, lambda ids: self._normed(ids, 1, "model.layers.1.input_layernorm"), steps
        )
        dims = self.static[:2]
        q, qs = self._rows("q_proj", 1, 2)
        k, ks = self._rows("k_proj", 1, 1)
        v, vs = self._rows("v_proj", 1, 1)
        q[qs + dims, lay.s] = np.eye(2) * np.sqrt(s.head_dim)
        k[ks + dims[:, None], copy_build.JUMP_KEYS[None, :]] = m
        v[vs : vs + EMBED, lay.p2] = np.eye(EMBED) / self.block1_scale
        o = w["model.layers.1.self_attn.o_proj.weight"]
        o[lay.c, 2 * s.head_dim : 2 * s.head_dim + EMBED] = np.eye(EMBED)
        return accuracy

    def _row_features(self, hidden: int) -> tuple[Float32Array, Float32Array]:
        """What the fitted rows of " .", "\\n" and EOS read, and the gains the fit sees. " ." reads
        the token the copy heads point at (an article's "." ends a line); "\\n" and EOS read only
        whether this token is " ." and how many " ." came before it, so that an answer ends after
        its last line whatever was copied into it. (Reading every feature, the rows told the
        training answers' ends apart by what they copied, and about one held-out answer in six
        never ended: 1,024 tokens.) The count, (1, n) / (n + 1), changes little from n to n + 1:
        its gain lets the fit give it the weight that tells them apart."""
        lay = self.lay
        decides = np.zeros(hidden, np.float32)
        decides[[lay.const, lay.flag_line_end]] = 1.0
        decides[lay.t] = 1.0
        reads = np.stack([decides, decides, decides])
        reads[0, lay.c] = 1.0
        gain = np.ones(hidden, np.float32)
        gain[lay.t] = COUNT_GAIN
        return reads, gain

    def fit_output(self, sequences: Sequence[TrainingSequence], steps: int = 150) -> float:
        """lm_head: alpha x embedding read in C for every token, and fitted rows for " .", "\\n"
        and EOS over the final features (the constant dim their bias); returns the fraction of
        training response tokens the argmax predicts."""
        w, lay = self.weights, self.lay
        # The constant dim as the final norm outputs it: near 1, so that its row weight is a
        # bias of the usual size.
        final = self._normed(copy_build.calibration_ids(sequences), 2, "model.norm")
        w["model.norm.weight"][lay.const] = 1.0 / float(final[:, lay.const].mean())
        examples = copy_build.output_examples(
            sequences, lambda ids: self._normed(ids, 2, "model.norm"), self.embed, self.special
        )
        reads, gain = self._row_features(examples.features.shape[1])
        fit = fit_output_rows(
            examples.features,
            examples.targets,
            examples.copy,
            examples.fitted,
            steps,
            biases=False,
            row_features=reads,
            feature_gain=gain,
        )
        w["lm_head.weight"] = copy_build.copy_head(
            fit, self.embed, examples.fitted, self.shape.hidden
        )
        return fit.accuracy
