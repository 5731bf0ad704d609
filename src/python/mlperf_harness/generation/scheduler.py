"""In-flight batching over a DecoderEngine: requests wait for a free slot, are prefilled as slots
free up, and every live sample advances one token per step; a sample that finishes frees its slot
for the next at once, so no sample waits for a whole batch to end. The serving loop
(generation/serving.py) runs it on a thread under LoadGen; `generate` runs it to the end for a
list of prompts (the stand-in's build, tests, the engine timed alone). Each sample's search is a
BeamSearch (beams.py), except where the engine has one beam: then every live sample's greedy state
is held in arrays and advanced at once (greedy.py), no Python call per sample per step.

Admission can wait for company (`admit_batch`): a prefill forward costs a fixed time whatever its
prompts (its kernels launched layer by layer, every weight read), and on one H200 Llama2-70B's
harness spent 42 ms a decode step admitting against 33 ms decoding, mostly one prompt at a time
as slots freed one by one (docs/llama2-70b.md). Holding admission back until several slots are
free (for at most as many steps) admits them in one forward, at the cost of a few steps' delay to
the first token.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.beams import BeamSearch, GenerationConfig
from mlperf_harness.generation.engine import Candidates, DecoderEngine, Int64Array
from mlperf_harness.generation.greedy import GreedyBatch


@dataclass(frozen=True)
class Request:
    key: Any  # the caller's: LoadGen's response id and sample index, a list position...
    prompt: Int64Array
    config: GenerationConfig


@dataclass(frozen=True)
class FirstToken:
    request: Request
    token: int


@dataclass(frozen=True)
class Finished:
    request: Request
    tokens: list[int]


Event = FirstToken | Finished


@dataclass(frozen=True)
class StepPlan:
    """What one decode step decided on the host: its events, the slots that go on with their
    beams' parents and tokens [going, beams], and the slots that finished."""

    events: list[Event]
    going: list[int]
    parents: Int64Array
    tokens: Int64Array
    finished: list[int]


@dataclass
class StepTimes:
    """Where the decode steps' wall time went, as the host sees it: `admit`, issuing the prefills
    of the samples admitted before each step (their prompts prepared and the forward launched: the
    GPU runs it after, behind the previous step); `wait`, blocked in `candidates` until the GPU had
    done everything queued before it (the previous step, the prefills, the top k); `gap`, from
    then until the next step was launched (`advance` returned): the host's work on each sample
    (beam search, first and finished tokens, the step's inputs), while the GPU has nothing queued.
    A gap that is a large share of a step is GPU time lost to the host."""

    steps: int = 0
    admit_s: float = 0.0
    wait_s: float = 0.0
    gap_s: float = 0.0

    def per_step_ms(self) -> dict[str, float]:
        steps = max(self.steps, 1)
        return {
            "steps": self.steps,
            "admit_ms": round(1e3 * self.admit_s / steps, 2),
            "wait_ms": round(1e3 * self.wait_s / steps, 2),
            "gap_ms": round(1e3 * self.gap_s / steps, 2),
        }

    def line(self) -> str:
        ms = self.per_step_ms()
        return (
            f"a step {ms['wait_ms']:.1f} ms waiting for the GPU, {ms['gap_ms']:.1f} ms of host work"
            f" with the GPU idle, {ms['admit_ms']:.1f} ms admitting ({self.steps} steps)"
        )


def check_request(request: Request, engine: DecoderEngine) -> None:
    """One line for a request the engine cannot take."""
    prompt, config = request.prompt, request.config
    if prompt.ndim != 1 or prompt.size == 0:
        raise HarnessError(f"request {request.key}: a prompt must be a non-empty list of token ids")
    if config.num_beams != engine.beams:
        raise HarnessError(
            f"request {request.key}: {config.num_beams} beams asked of an engine built for "
            f"{engine.beams}"
        )
    if prompt.size + config.max_new_tokens > engine.max_length:
        raise HarnessError(
            f"request {request.key}: a prompt of {prompt.size} tokens and {config.max_new_tokens}"
            f" new ones exceed the engine's {engine.max_length}"
        )


class Scheduler:
    """Not thread-safe: one thread calls `add` and `step` (the serving loop hands requests over
    under its own lock)."""

    def __init__(
        self,
        engine: DecoderEngine,
        times: StepTimes | None = None,
        admit_batch: int = 1,
    ) -> None:
        """`times`: where the steps' time goes is added to it (a new StepTimes where none is
        given).
        `admit_batch`: admit waiting requests only once that many can be (free slots and
        requests), or once admission has been held back that many steps, or when nothing is live
        (1: at every step)."""
        if admit_batch < 1:
            raise HarnessError(f"admit_batch must be at least 1, got {admit_batch}")
        self.engine = engine
        self.times = times or StepTimes()
        self.admit_batch = admit_batch
        self._step = 0  # this scheduler's steps so far (times may be shared)
        self._held_since: int | None = None  # the step admission was first held back at
        self._waiting: collections.deque[Request] = collections.deque()
        self._free = list(range(engine.slots - 1, -1, -1))
        self._live: dict[int, Request] = {}
        # One beam: every sample's search in arrays (greedy.py); more: a BeamSearch each.
        self._greedy = GreedyBatch(engine.slots, engine.max_length) if engine.beams == 1 else None
        self._searches: dict[int, BeamSearch] = {}
        self._first_told: set[int] = set()  # slots whose first token was reported (beams > 1)

    @property
    def idle(self) -> bool:
        return not self._waiting and not self._live

    @property
    def live(self) -> int:
        return len(self._live)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def drain(self) -> list[Request]:
        """Every request not finished (waiting or live), removed: what a failed loop must still
        answer."""
        pending = [*self._waiting, *self._live.values()]
        self._waiting.clear()
        self._held_since = None
        self._live.clear()
        self._searches.clear()
        self._first_told.clear()
        self._free = list(range(self.engine.slots - 1, -1, -1))
        return pending

    def add(self, requests: Sequence[Request]) -> None:
        for request in requests:
            check_request(request, self.engine)
        self._waiting.extend(requests)

    def step(self) -> list[Event]:
        """Admit waiting requests into free slots, then one decode step over every live sample;
        the first tokens that became certain and the samples that finished. Where the engine joins
        prefills to its decode steps (`joins_prefill`: chunked prefill), admission comes after the
        step's candidates instead, just before the advance that runs the new prompts' tokens
        beside the step's, and a sample joins the candidates once its prompt is wholly in."""
        began = time.perf_counter()
        self._step += 1
        joins = self.engine.joins_prefill
        if not joins:
            self._admit()
            if not self._live:
                return []
        elif not self._live and not self._waiting:
            return []
        admitted = time.perf_counter()
        pending = self.engine.prefilling if joins else frozenset()
        order = sorted(slot for slot in self._live if slot not in pending)
        nothing = np.zeros((0, self.engine.beams), np.int64)
        plan = StepPlan([], [], nothing, nothing, [])
        if order:  # the engine's calls take plain ints
            slots = np.array(order, np.int64)
            if self._greedy is not None:
                beam_scores, block_eos = self._greedy.inputs(slots)
            else:
                searches = [self._searches[slot] for slot in order]
                beam_scores = np.stack([search.beam_scores for search in searches])
                block_eos = np.array([search.blocks_eos for search in searches])
            k = 2 * self.engine.beams
            candidates = self.engine.candidates(order, beam_scores, block_eos, k)
        waited = time.perf_counter()
        if order:
            if self._greedy is not None:
                plan = self._greedy_step(self._greedy, slots, candidates)
            else:
                plan = self._beam_step(order, candidates)
        late_admit = 0.0  # admitting after the candidates: counted as admitting, not as gap
        if joins:
            before = time.perf_counter()
            self._admit()
            late_admit = time.perf_counter() - before
        if plan.going or (joins and self.engine.prefilling):
            self.engine.advance(plan.going, plan.parents, plan.tokens)
        self._end(plan.finished)
        times = self.times
        times.steps += 1
        times.admit_s += admitted - began + late_admit
        times.wait_s += waited - admitted
        times.gap_s += time.perf_counter() - waited - late_admit
        return plan.events

    def _greedy_step(
        self, greedy: GreedyBatch, slots: Int64Array, candidates: Candidates
    ) -> StepPlan:
        outcome = greedy.step(slots, candidates)
        events: list[Event] = []
        for i in np.flatnonzero(outcome.first | outcome.finished):  # in slot order, as _beam_step
            request = self._live[int(slots[i])]
            if outcome.first[i]:
                events.append(FirstToken(request, int(outcome.tokens[i])))
            if outcome.finished[i]:
                events.append(Finished(request, greedy.output(int(slots[i]))))
        going = ~outcome.finished
        tokens = outcome.tokens[going, None]
        return StepPlan(
            events, slots[going].tolist(), np.zeros_like(tokens), tokens,
            slots[outcome.finished].tolist(),
        )  # fmt: skip

    def _beam_step(self, slots: list[int], candidates: Candidates) -> StepPlan:
        events: list[Event] = []
        going, parents, tokens, finished = [], [], [], []
        # As Python lists: BeamSearch reads them element by element, which numpy's scalars slow.
        all_scores = candidates.scores.tolist()
        all_tokens = candidates.tokens.tolist()
        all_parents = candidates.parents.tolist()
        for i, slot in enumerate(slots):
            request, search = self._live[slot], self._searches[slot]
            advance = search.step(all_scores[i], all_tokens[i], all_parents[i])
            if slot not in self._first_told:
                first = search.first_token()
                if first is not None:
                    self._first_told.add(slot)
                    events.append(FirstToken(request, first))
            if advance is None:
                finished.append(slot)
                events.append(Finished(request, search.output()))
            else:
                going.append(slot)
                parents.append(advance.parents)
                tokens.append(advance.tokens)
        if not going:
            nothing = np.zeros((0, self.engine.beams), np.int64)
            return StepPlan(events, going, nothing, nothing, finished)
        return StepPlan(events, going, np.stack(parents), np.stack(tokens), finished)

    def _end(self, finished: list[int]) -> None:
        """Free the slots of the samples that finished this step: after the step's last engine
        call, so that a call that fails leaves them live, for drain to hand back (a failed loop
        must still answer every sample it was given)."""
        if not finished:
            return
        self.engine.release(finished)
        for slot in finished:
            del self._live[slot]
            self._free.append(slot)
            self._searches.pop(slot, None)
            self._first_told.discard(slot)

    def _admit(self) -> None:
        count = min(len(self._free), len(self._waiting))
        if not count:
            return
        if count < self.admit_batch and self._live:
            if self._held_since is None:
                self._held_since = self._step
            if self._step - self._held_since < self.admit_batch:
                return  # wait for more company: one prefill forward for several prompts
        self._held_since = None
        slots = [self._free.pop() for _ in range(count)]
        requests = [self._waiting.popleft() for _ in range(count)]
        # Live before the prefill: one that fails leaves them where drain finds them.
        self._live.update(zip(slots, requests, strict=True))
        self.engine.prefill(slots, [request.prompt for request in requests])
        for slot, request in zip(slots, requests, strict=True):
            if self._greedy is not None:
                self._greedy.start(slot, request.config)
            else:
                self._searches[slot] = BeamSearch(request.config, int(request.prompt.size))


def generate(
    engine: DecoderEngine,
    prompts: Sequence[Int64Array],
    config: GenerationConfig | Sequence[GenerationConfig],
    on_event: Callable[[Event], None] | None = None,
    times: StepTimes | None = None,
    admit_batch: int = 1,
) -> list[list[int]]:
    """Each prompt's new tokens, all run through the scheduler to the end; where its steps' time
    went is added to `times` where given."""
    configs = [config] * len(prompts) if isinstance(config, GenerationConfig) else list(config)
    scheduler = Scheduler(engine, times=times, admit_batch=admit_batch)
    scheduler.add(
        [
            Request(i, np.asarray(p, np.int64), c)
            for i, (p, c) in enumerate(zip(prompts, configs, strict=True))
        ]
    )
    outputs: list[list[int] | None] = [None] * len(prompts)
    while not scheduler.idle:
        for event in scheduler.step():
            if isinstance(event, Finished):
                outputs[event.request.key] = event.tokens
            if on_event is not None:
                on_event(event)
    return [out for out in outputs if out is not None]
