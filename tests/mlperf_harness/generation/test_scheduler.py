"""In-flight batching: several samples of different lengths decoded together, joining as slots
free up, give each sample the tokens it gets decoded alone; first tokens are reported once, when
certain, and equal the output's first; forced lengths hold; bad requests are one line. Tiny
random GPT-J graphs on ONNX Runtime."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mlperf_harness.benchmarks.gptj.decoding import beam_search
from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, gptj_model, random_weights
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.engine import Int64Array
from mlperf_harness.generation.scheduler import (
    Event,
    Finished,
    FirstToken,
    Request,
    Scheduler,
    StepTimes,
    generate,
)
from mlperf_harness.generation.step_engine import StepModelEngine

TINY = GptjShape(
    layers=2, hidden=32, heads=4, rotary_dim=4, vocab_size=40, inner=64, max_positions=256
)
EOS = 39
_rng = np.random.default_rng(3)
PROMPTS = [_rng.integers(0, EOS, size=int(n)).astype(np.int64) for n in (1, 7, 19, 4, 12, 2, 9)]


def _session(eos_bias: float, seed: int) -> OrtGptj:
    weights = random_weights(TINY, seed)
    weights["lm_head.bias"][EOS] = eos_bias
    return OrtGptj(gptj_model(weights, TINY).SerializeToString(), TINY)


def _engine(session: OrtGptj, slots: int, beams: int) -> StepModelEngine:
    return StepModelEngine(session, EOS, slots=slots, beams=beams, max_length=64)


@pytest.mark.parametrize(
    ("eos_bias", "beams", "minimum", "maximum"),
    [(3.0, 1, 0, 20), (2.0, 4, 3, 12), (3.0, 4, 5, 30), (4.0, 2, 0, 9)],
)
def test_in_flight_batching_decodes_each_sample_as_alone(
    eos_bias: float, beams: int, minimum: int, maximum: int
) -> None:
    session = _session(eos_bias, seed=5)
    config = GenerationConfig(EOS, minimum, maximum, beams)
    alone = [beam_search(session, prompt, config) for prompt in PROMPTS]
    together = generate(_engine(session, slots=3, beams=beams), PROMPTS, config)
    assert together == alone
    lengths = {len(out) for out in alone}
    assert len(lengths) > 1  # samples really ended at different steps, freeing slots mid-run


@pytest.mark.parametrize("beams", [1, 4])
def test_first_token_reported_once_when_certain_and_equal_to_the_output(beams: int) -> None:
    session = _session(2.0, seed=6)
    config = GenerationConfig(EOS, 3, 16, beams)
    events: list[Event] = []
    outputs = generate(_engine(session, slots=2, beams=beams), PROMPTS, config, events.append)
    firsts = [e for e in events if isinstance(e, FirstToken)]
    finished = [e for e in events if isinstance(e, Finished)]
    assert sorted(e.request.key for e in firsts) == list(range(len(PROMPTS)))
    for event in firsts:
        assert event.token == outputs[event.request.key][0]
    if beams == 1:
        # greedy: known after the first step, long before the sample ends
        order = {id(e): i for i, e in enumerate(events)}
        for first in firsts:
            end = next(f for f in finished if f.request.key == first.request.key)
            assert order[id(first)] < order[id(end)]


def test_forced_lengths_hold_and_no_eos_is_chosen() -> None:
    session = _session(1e4, seed=5)  # EOS would win every step it may
    base = GenerationConfig(EOS, 30, 128, 4)
    lengths = [31, 69, 40, 128, 33, 50, 90]
    configs = [base.forced(n) for n in lengths]
    engine = StepModelEngine(session, EOS, slots=4, beams=4, max_length=160)
    outputs = generate(engine, PROMPTS, configs)
    assert [len(out) for out in outputs] == lengths
    assert all(EOS not in out for out in outputs)


def test_step_times_count_every_decode_step_and_split_its_wall_time() -> None:
    session = _session(1e4, seed=5)
    base = GenerationConfig(EOS, 30, 128, 1)
    lengths = [31, 45, 40]
    engine = StepModelEngine(session, EOS, slots=len(lengths), beams=1, max_length=160)
    times = StepTimes()
    started = time.perf_counter()
    generate(engine, PROMPTS[: len(lengths)], [base.forced(n) for n in lengths], times=times)
    wall = time.perf_counter() - started
    # Every sample admitted at the first step: one step a token until the longest is done.
    assert times.steps == max(lengths)
    parts = (times.admit_s, times.wait_s, times.gap_s)
    assert all(part > 0 for part in parts) and sum(parts) <= wall
    ms = times.per_step_ms()
    assert ms["steps"] == max(lengths) and ms["wait_ms"] == round(1e3 * times.wait_s / 45, 2)
    assert times.line().startswith(f"a step {ms['wait_ms']:.1f} ms waiting for the GPU, ")


def test_slots_bound_the_live_samples() -> None:
    session = _session(0.0, seed=5)
    scheduler = Scheduler(_engine(session, slots=3, beams=1))
    config = GenerationConfig(EOS, 0, 8, 1)
    scheduler.add([Request(i, p, config) for i, p in enumerate(PROMPTS)])
    seen = 0
    while not scheduler.idle:
        scheduler.step()
        assert scheduler.live <= 3
        seen = max(seen, scheduler.live)
    assert seen == 3


class _CountedPrefills(StepModelEngine):
    """The engine, its prefill calls counted with their prompts."""

    prefills: list[int]

    def prefill(self, slots, prompts):  # type: ignore[no-untyped-def]
        self.prefills.append(len(slots))
        return super().prefill(slots, prompts)


# The first four fill the slots; then slots free one at a time (forced lengths 3, 4, 5...).
# admit_batch 1: a forward for each; 3: held back 3 steps, then what is free; 50: held back until
# nothing is live, then the three left together.
EXPECTED_PREFILLS = {1: [4, 1, 1, 1], 3: [4, 2, 1], 50: [4, 3]}


@pytest.mark.parametrize("admit_batch", [1, 3, 50])
def test_admitting_together_keeps_each_samples_tokens(admit_batch: int) -> None:
    """admit_batch: fewer prefill forwards, more prompts in each; the tokens are each sample's
    alone; a batch no slot count reaches still admits (the oldest's wait, or nothing live)."""
    session = _session(1e4, seed=5)
    base = GenerationConfig(EOS, 0, 64, 1)
    lengths = [3, 9, 4, 12, 5, 7, 6]
    configs = [base.forced(n) for n in lengths]
    alone = generate(_engine(session, slots=4, beams=1), PROMPTS, configs)
    engine = _CountedPrefills(session, EOS, slots=4, beams=1, max_length=64)
    engine.prefills = []
    assert generate(engine, PROMPTS, configs, admit_batch=admit_batch) == alone
    assert sum(engine.prefills) == len(PROMPTS)
    assert engine.prefills == EXPECTED_PREFILLS[admit_batch]


class _Joining(StepModelEngine):
    """The engine as a chunked prefill runs (TorchLlamaEngine's prefill "chunked"): `prefill` only
    queues; each `advance` takes at most `budget` more prompt tokens, oldest prompt first (the
    model's prefill runs once a prompt has had all its tokens taken); `candidates` refuses a slot
    still prefilling. `turns`: how many advances each prompt took from its queueing."""

    joins_prefill = True
    budget: int
    queued: dict[int, tuple[Int64Array, int, int]]  # slot: prompt, tokens taken, advances
    turns: list[int]

    @property
    def prefilling(self) -> frozenset[int]:  # type: ignore[override]
        return frozenset(self.queued)

    def prefill(self, slots, prompts):  # type: ignore[no-untyped-def]
        for slot, prompt in zip(slots, prompts, strict=True):
            self.queued[slot] = (prompt, 0, 0)

    def candidates(self, slots, beam_scores, block_eos, k):  # type: ignore[no-untyped-def]
        assert not set(slots) & set(self.queued), "candidates named a slot still prefilling"
        return super().candidates(slots, beam_scores, block_eos, k)

    def advance(self, slots, parents, tokens):  # type: ignore[no-untyped-def]
        if len(slots):
            super().advance(slots, parents, tokens)
        left = self.budget
        for slot, (prompt, taken, advances) in list(self.queued.items()):
            step = min(left, prompt.size - taken)
            left -= step
            self.queued[slot] = (prompt, taken + step, advances + 1)
            if taken + step == prompt.size:
                del self.queued[slot]
                self.turns.append(advances + 1)
                super().prefill([slot], [prompt])


@pytest.mark.parametrize("beams", [1, 4])
def test_prefills_joined_to_the_decode_steps_keep_each_samples_tokens(beams: int) -> None:
    """An engine that joins prefills to its advances (chunked prefill): the scheduler admits just
    before an advance and leaves a slot out of the candidates until its prompt is wholly in; the
    tokens are each sample's alone, the 19-token prompt spread over several advances of 8."""
    session = _session(2.0, seed=5)
    config = GenerationConfig(EOS, 2, 12, beams)
    alone = generate(_engine(session, slots=3, beams=beams), PROMPTS, config)
    engine = _Joining(session, EOS, slots=3, beams=beams, max_length=64)
    engine.budget, engine.queued, engine.turns = 8, {}, []
    assert generate(engine, PROMPTS, config) == alone
    assert not engine.queued and len(engine.turns) == len(PROMPTS)
    assert max(engine.turns) >= 3 and min(engine.turns) == 1


def test_admission_waits_at_most_admit_batch_steps() -> None:
    """One request arriving while others decode is held back for admit_batch steps (waiting for
    company), then admitted alone at the next."""
    session = _session(1e4, seed=5)
    config = GenerationConfig(EOS, 0, 64, 1)
    scheduler = Scheduler(_engine(session, slots=4, beams=1), admit_batch=5)
    scheduler.add([Request(0, PROMPTS[0], config.forced(40))])
    scheduler.step()  # nothing live: admitted at once
    assert scheduler.live == 1
    scheduler.add([Request(1, PROMPTS[1], config.forced(40))])
    waited = 0
    while scheduler.live == 1:
        scheduler.step()
        waited += 1
    assert waited == 5 + 1 and scheduler.waiting == 0
    with pytest.raises(HarnessError, match="admit_batch must be at least 1"):
        Scheduler(_engine(session, slots=4, beams=1), admit_batch=0)


def test_bad_requests_are_one_line() -> None:
    from one_line_errors import raised_line

    session = _session(0.0, seed=5)
    scheduler = Scheduler(_engine(session, slots=2, beams=4))
    config = GenerationConfig(EOS, 0, 8, 4)
    empty = np.zeros(0, np.int64)
    assert "non-empty" in raised_line(scheduler.add, [Request("a", empty, config)])
    long = np.ones(60, np.int64)
    assert "exceed the engine's 64" in raised_line(scheduler.add, [Request("b", long, config)])
    greedy = GenerationConfig(EOS, 0, 8, 1)
    assert "1 beams asked of an engine built for 4" in raised_line(
        scheduler.add, [Request("c", PROMPTS[0], greedy)]
    )
    assert scheduler.idle  # nothing of a refused batch was queued


class _FailsAt(StepModelEngine):
    """The engine, failing at the `at`-th call of `call` (a GPU error in the serving loop)."""

    call: str
    at: int

    def _count(self, name: str) -> None:
        if name == self.call:
            self.at -= 1
            if self.at == 0:
                raise RuntimeError(f"{name} failed")

    def prefill(self, slots, prompts):  # type: ignore[no-untyped-def]
        self._count("prefill")
        return super().prefill(slots, prompts)

    def candidates(self, slots, beam_scores, block_eos, k):  # type: ignore[no-untyped-def]
        self._count("candidates")
        return super().candidates(slots, beam_scores, block_eos, k)

    def advance(self, slots, parents, tokens):  # type: ignore[no-untyped-def]
        self._count("advance")
        return super().advance(slots, parents, tokens)


@pytest.mark.parametrize("beams", [1, 4])
@pytest.mark.parametrize(("call", "at"), [("prefill", 2), ("candidates", 4), ("advance", 2)])
def test_a_failed_call_leaves_every_unanswered_sample_for_drain(
    beams: int, call: str, at: int
) -> None:
    """What a failed serving loop answers empty (serving.py): drain holds every request that no
    returned event finished, whichever engine call failed, with samples mid-admission and some
    finishing in the failed step (forced lengths 1 and 2 end at once)."""
    session = _session(1e4, seed=5)
    base = GenerationConfig(EOS, 0, 64, beams)
    engine = _FailsAt(session, EOS, slots=3, beams=beams, max_length=64)
    engine.call, engine.at = call, at
    scheduler = Scheduler(engine)
    scheduler.add([Request(i, prompt, base.forced(1 + i % 3)) for i, prompt in enumerate(PROMPTS)])
    answered = set()
    with pytest.raises(RuntimeError, match=f"{call} failed"):
        while not scheduler.idle:
            answered |= {e.request.key for e in scheduler.step() if isinstance(e, Finished)}
    drained = {request.key for request in scheduler.drain()}
    assert answered and not answered & drained
    assert answered | drained == set(range(len(PROMPTS)))
    assert scheduler.idle
