"""One sample's beam search, fed each step's candidates by a DecoderEngine: Hugging Face's
`generate` as MLCommons' GPT-J reference calls it (num_beams 4, early_stopping True, length
penalty 1.0, min_new_tokens 30, max_new_tokens 128; EOS ends a hypothesis). With one beam it is
greedy decoding (Llama2's), EOS kept.

What is reproduced of `generate`, each for a reason:

- `min_new_tokens` sets EOS's log-probability to -inf while fewer new tokens were made (its
  MinNewTokensLengthLogitsProcessor): the engine does it (`block_eos`), before the top-k;
- each step's candidates are the top 2 x beams over beams x vocab of the beam's running score plus
  the token's log-probability; a candidate EOS among the top `beams` closes a hypothesis (scored
  by its sum of log-probabilities over its length ** length_penalty), the others fill the next
  beams in order; with early stopping a sample is done once `beams` hypotheses are closed; at
  max_new_tokens the open beams are closed as they are; the best-scoring hypothesis wins and gets
  an EOS appended if it is shorter than the maximum (so output ends with EOS exactly when the
  sample finished on it);
- the first step expands beam 0 only: the other beams start at -1e9, as there.

The length a hypothesis is divided by: Hugging Face 4.35 and later divide by the generated tokens,
earlier releases by the whole sequence, prompt included: `length_counts_prompt` chooses; the
default is the newer rule.

Output is the new tokens only, EOS included when produced: what a SUT returns to LoadGen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import Float32Array, Int64Array

NO_BEAM = -1e9  # Hugging Face's initial score of beams 1.. (only beam 0 expands at first)


@dataclass(frozen=True)
class GenerationConfig:
    eos_id: int
    min_new_tokens: int
    max_new_tokens: int
    num_beams: int = 1
    length_penalty: float = 1.0
    length_counts_prompt: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.min_new_tokens <= self.max_new_tokens or self.max_new_tokens < 1:
            raise HarnessError(
                f"need 0 <= min_new_tokens {self.min_new_tokens} <= max_new_tokens "
                f"{self.max_new_tokens}, and max_new_tokens >= 1"
            )
        if self.num_beams < 1:
            raise HarnessError(f"num_beams must be at least 1, got {self.num_beams}")

    @property
    def candidates(self) -> int:
        """How many candidates a step needs: 2 x beams, so that `beams` non-EOS remain."""
        return 2 * self.num_beams

    def forced(self, new_tokens: int) -> GenerationConfig:
        """Exactly `new_tokens` new tokens, EOS never chosen (timing a model whose random weights
        would not stop as the real one does)."""
        length = min(max(new_tokens, 1), self.max_new_tokens)
        return GenerationConfig(
            self.eos_id,
            length,
            length,
            self.num_beams,
            self.length_penalty,
            self.length_counts_prompt,
        )


@dataclass
class _Hypotheses:
    """Closed hypotheses of one sample: Hugging Face's BeamHypotheses (keeps the best `beams`)."""

    beams: int
    entries: list[tuple[float, list[int]]] = field(default_factory=list)

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


@dataclass(frozen=True)
class Advance:
    """What the engine does next for a sample that goes on: beam b continues beam parents[b]
    with tokens[b]."""

    parents: Int64Array  # [beams]
    tokens: Int64Array  # [beams]


class BeamSearch:
    """One sample's search state between engine steps."""

    def __init__(self, config: GenerationConfig, prompt_length: int) -> None:
        self.config = config
        self.prompt_length = prompt_length
        beams = config.num_beams
        self.beam_scores: Float32Array = np.full(beams, NO_BEAM, np.float32)
        self.beam_scores[0] = 0.0
        self.sequences: list[list[int]] = [[] for _ in range(beams)]
        self._closed = _Hypotheses(beams)
        self._output: list[int] | None = None

    @property
    def generated(self) -> int:
        return len(self.sequences[0])

    @property
    def blocks_eos(self) -> bool:
        return self.generated < self.config.min_new_tokens

    @property
    def done(self) -> bool:
        return self._output is not None

    def output(self) -> list[int]:
        if self._output is None:
            raise RuntimeError("the search has not finished")
        return self._output

    def first_token(self) -> int | None:
        """The output's first token, once no later step can change it: every open beam and every
        closed hypothesis starts with it (greedy: after the first step). None until then."""
        if self._output is not None:
            return self._output[0]
        firsts = {sequence[0] for sequence in self.sequences if sequence}
        firsts |= {tokens[0] for _, tokens in self._closed.entries if tokens}
        if len(firsts) != 1 or any(not s for s in self.sequences):
            return None
        return firsts.pop()

    def step(
        self,
        scores: Float32Array | Sequence[float],
        tokens: Int64Array | Sequence[int],
        parents: Int64Array | Sequence[int],
    ) -> Advance | None:
        """Take this step's candidates (best first: at least 2 x beams of them, as arrays or
        lists); the next step's beams, or None when the sample is done (then `output()`)."""
        config = self.config
        beams, eos = config.num_beams, config.eos_id
        generated = self.generated
        next_scores: list[float] = []
        next_tokens: list[int] = []
        next_parents: list[int] = []
        for rank in range(len(tokens)):
            parent, token, score = int(parents[rank]), int(tokens[rank]), float(scores[rank])
            if token == eos:
                if rank < beams:
                    self._closed.add(
                        list(self.sequences[parent]),
                        score,
                        self._length(generated),
                        config.length_penalty,
                    )
            else:
                next_scores.append(score)
                next_tokens.append(token)
                next_parents.append(parent)
            if len(next_tokens) == beams:
                break
        if len(next_tokens) < beams:
            raise HarnessError(
                f"a step gave {len(tokens)} candidates: beam search over {beams} beams needs "
                f"{config.candidates}"
            )
        done = len(self._closed.entries) >= beams  # early_stopping=True
        self.sequences = [
            self.sequences[p] + [t] for p, t in zip(next_parents, next_tokens, strict=True)
        ]
        self.beam_scores = np.array(next_scores, np.float32)
        if not done and self.generated >= config.max_new_tokens:
            for sequence, score in zip(self.sequences, self.beam_scores, strict=True):
                self._closed.add(
                    list(sequence), float(score), self._length(len(sequence)), config.length_penalty
                )
            done = True
        if done:
            best = self._closed.best()
            self._output = [*best, eos] if len(best) < config.max_new_tokens else best
            return None
        return Advance(np.array(next_parents, np.int64), np.array(next_tokens, np.int64))

    def _length(self, generated: int) -> int:
        return generated + self.prompt_length if self.config.length_counts_prompt else generated
