"""Greedy and beam-search decoding over a GPT-J step model with a KV cache, as Hugging Face's
`generate` does it for MLCommons' GPT-J reference (num_beams 4, early_stopping True, length penalty
1.0, min_new_tokens 30, max_new_tokens 128; EOS ends a sequence or a beam).

What is reproduced of `generate`, each for a reason:

- `min_new_tokens` sets EOS's score to -inf while fewer new tokens were made (its
  MinNewTokensLengthLogitsProcessor), so no sequence ends early; in beam search it acts on the
  log-probabilities, as there;
- beam search: log-softmax plus each beam's running score, the top 2 x beams candidates over
  beams x vocab; a candidate EOS among the top `beams` closes a hypothesis (scored by its sum of
  log-probabilities over its length ** length_penalty), others fill the next beams; with early
  stopping a prompt is done once `beams` hypotheses are closed; at max_new_tokens the open beams
  are closed as they are; the best-scoring hypothesis wins and gets an EOS appended if it is shorter
  than the maximum (so output ends with EOS exactly when it finished);
- the beams run as one batch; after each step the cache is reordered by the surviving beams'
  parent indices.

The length a hypothesis is divided by: Hugging Face 4.35 and later divide by the generated tokens
(`generated_len`), earlier releases by the whole sequence, prompt included. Which transformers
MLCommons' GPT-J runs were made with is not checked here: `length_counts_prompt` chooses; the
default is the newer rule.

Output is the new tokens only, EOS included when produced: what a SUT returns to LoadGen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlperf_harness.benchmarks.gptj.session import Cache, StepModel
from mlperf_harness.benchmarks.gptj.stand_in_model import Float32Array, Int64Array
from mlperf_harness.errors import HarnessError

NUM_BEAMS = 4  # GPT-J's closed-division setting
MIN_NEW_TOKENS = 30
MAX_NEW_TOKENS = 128
_NO_BEAM = -1e9  # Hugging Face's initial score of beams 1.. (only beam 0 expands at first)


@dataclass(frozen=True)
class GenerationConfig:
    eos_id: int
    min_new_tokens: int = MIN_NEW_TOKENS
    max_new_tokens: int = MAX_NEW_TOKENS
    num_beams: int = NUM_BEAMS
    length_penalty: float = 1.0
    length_counts_prompt: bool = False

    def check(self) -> None:
        if not 0 <= self.min_new_tokens <= self.max_new_tokens or self.max_new_tokens < 1:
            raise HarnessError(
                f"need 0 <= min_new_tokens {self.min_new_tokens} <= max_new_tokens "
                f"{self.max_new_tokens}, and max_new_tokens >= 1"
            )
        if self.num_beams < 1:
            raise HarnessError(f"num_beams must be at least 1, got {self.num_beams}")


def _prefill(model: StepModel, prompt: Int64Array) -> tuple[Float32Array, Cache]:
    if prompt.ndim != 1 or prompt.size == 0:
        raise HarnessError("a prompt must be a non-empty 1-D array of token ids")
    ids = prompt.astype(np.int64)[None, :]
    positions = np.arange(ids.shape[1], dtype=np.int64)[None, :]
    logits, cache = model(ids, positions, np.ones_like(ids), model.empty_cache(1))
    return logits[:, -1, :], cache


def _step(
    model: StepModel, tokens: Int64Array, length: int, cache: Cache
) -> tuple[Float32Array, Cache]:
    """Feed one token per row at position `length - 1` over a cache of `length - 1` tokens."""
    batch = tokens.shape[0]
    positions = np.full((batch, 1), length - 1, np.int64)
    mask = np.ones((batch, length), np.int64)
    logits, cache = model(tokens.reshape(batch, 1).astype(np.int64), positions, mask, cache)
    return logits[:, -1, :], cache


def _log_softmax(logits: Float32Array) -> Float32Array:
    shifted = logits - logits.max(-1, keepdims=True)
    out: Float32Array = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return out


def greedy(model: StepModel, prompt: Int64Array, config: GenerationConfig) -> list[int]:
    """The argmax token each step until EOS (kept) or max_new_tokens."""
    config.check()
    logits, cache = _prefill(model, prompt)
    out: list[int] = []
    while True:
        scores = logits[0].astype(np.float32, copy=True)
        if len(out) < config.min_new_tokens:
            scores[config.eos_id] = -np.inf
        token = int(np.argmax(scores))
        out.append(token)
        if token == config.eos_id or len(out) >= config.max_new_tokens:
            return out
        logits, cache = _step(model, np.array([token]), prompt.size + len(out), cache)


@dataclass
class _Hypotheses:
    """Closed hypotheses of one prompt: Hugging Face's BeamHypotheses (keeps the best `beams`)."""

    beams: int
    entries: list[tuple[float, list[int]]]

    def add(self, tokens: list[int], sum_logprobs: float, length: int, penalty: float) -> None:
        # An EOS as the very first token (only possible with min_new_tokens 0) has length 0:
        # counted as 1 rather than divided by zero. GPT-J's min_new_tokens 30 never meets it.
        score = sum_logprobs / (max(length, 1) ** penalty)
        if len(self.entries) < self.beams or score > min(s for s, _ in self.entries):
            self.entries.append((score, tokens))
            if len(self.entries) > self.beams:
                worst = min(range(len(self.entries)), key=lambda i: self.entries[i][0])
                del self.entries[worst]

    def best(self) -> list[int]:
        # Sorted by score as Hugging Face sorts them (stable): the last of equals wins, as its pop().
        return sorted(self.entries, key=lambda entry: entry[0])[-1][1]


def beam_search(model: StepModel, prompt: Int64Array, config: GenerationConfig) -> list[int]:
    """Hugging Face's beam search with early stopping for one prompt (see the module docstring)."""
    config.check()
    beams, eos = config.num_beams, config.eos_id
    logits, cache = _prefill(model, prompt)
    logits = np.repeat(logits, beams, axis=0)
    cache = [(np.repeat(k, beams, axis=0), np.repeat(v, beams, axis=0)) for k, v in cache]
    beam_scores = np.full(beams, _NO_BEAM, np.float32)
    beam_scores[0] = 0.0
    sequences: list[list[int]] = [[] for _ in range(beams)]
    closed = _Hypotheses(beams, [])

    def length_of(generated: int) -> int:
        return generated + prompt.size if config.length_counts_prompt else generated

    while True:
        scores = _log_softmax(logits.astype(np.float32))
        generated = len(sequences[0])
        if generated < config.min_new_tokens:
            scores[:, eos] = -np.inf
        scores = scores + beam_scores[:, None]
        flat = scores.reshape(-1)
        # The top 2 x beams candidates, best first; a stable sort breaks ties by lower index.
        top = np.argsort(-flat, kind="stable")[: 2 * beams]
        vocab = scores.shape[1]
        next_scores, next_tokens, parents = [], [], []
        for rank, index in enumerate(top):
            parent, token = divmod(int(index), vocab)
            if token == eos:
                if rank >= beams:
                    continue
                closed.add(
                    list(sequences[parent]),
                    float(flat[index]),
                    length_of(generated),
                    config.length_penalty,
                )
            else:
                next_scores.append(flat[index])
                next_tokens.append(token)
                parents.append(parent)
            if len(next_tokens) == beams:
                break
        done = len(closed.entries) >= beams  # early_stopping=True
        sequences = [sequences[p] + [t] for p, t in zip(parents, next_tokens, strict=True)]
        beam_scores = np.array(next_scores, np.float32)
        if done:
            break
        if len(sequences[0]) >= config.max_new_tokens:
            for sequence, score in zip(sequences, beam_scores, strict=True):
                closed.add(
                    list(sequence), float(score), length_of(len(sequence)), config.length_penalty
                )
            break
        order = np.array(parents, np.int64)
        cache = [(k[order], v[order]) for k, v in cache]
        logits, cache = _step(
            model, np.array(next_tokens, np.int64), prompt.size + len(sequences[0]), cache
        )
    best = closed.best()
    return [*best, eos] if len(best) < config.max_new_tokens else best
