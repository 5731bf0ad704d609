"""The serving loop: LoadGen's samples into a running batch of generations (in-flight batching),
answered as each finishes, on mlperf_loadgen (`--loadgen_path python`).

LoadGen's issue callback only queues requests; a loop thread per engine (one per GPU) owns its
scheduler and engine: it takes what arrived, prefills it into free slots, decodes every live sample
one token, and hands LoadGen the samples that finished, all of one step in one QuerySamplesComplete
call. Requests wait in one queue that every loop takes from, as many as it has free slots, at each
step: a Server or SingleStream sample starts on the first engine with a slot free instead of
waiting for a batch to fill or end, and Offline's one query keeps every slot of every engine busy
to its last samples (no engine idles at the end while another works through a share fixed at the
start).

Each response is the sample's new token ids (EOS included where the model ended on it) in the
run's token type, with `n_tokens` set to their count: what MLCommons' accuracy scripts decode and
TEST06 checks. Outside Offline each sample's first token is also reported with FirstTokenComplete
as soon as it is certain (generation/beams.BeamSearch.first_token: at once for greedy decoding;
for beam search once every beam agrees on it, at the latest when the sample ends), so that LoadGen
logs it (`token_data`) where a run records token latencies, as TEST06 checks and Llama2's time to
first token needs.

A loop whose engine fails prints the error at once; the run is lost, so every loop then answers
what it holds empty (LoadGen's test ends without waiting out the other loops' shares), and the
error is raised when the SUT exits.
"""

from __future__ import annotations

import collections
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.prompts import PromptStore
from mlperf_harness.generation.scheduler import Finished, FirstToken, Request, Scheduler


class _Loop:
    """One engine's serving loop: its scheduler and its thread, fed from the SUT's queue."""

    def __init__(self, sut: GenerationSUT, engine: Callable[[], DecoderEngine], index: int) -> None:
        self.sut = sut
        self.engine = engine
        self.scheduler: Scheduler | None = None
        self.steps = 0
        self.most_live = 0
        self.answered = 0  # samples this loop finished
        self.thread = threading.Thread(
            target=self.run, name=f"generation-loop-{index}", daemon=True
        )

    def start(self, admit_batch: int) -> None:
        self.scheduler = Scheduler(self.engine(), admit_batch=admit_batch)
        self.thread.start()

    def run(self) -> None:
        scheduler = self.scheduler
        assert scheduler is not None  # made in start, before the thread
        sut = self.sut
        taken: list[Request] = []
        try:
            while True:
                # Enough for every free slot (waiting beyond them would only be work another
                # engine could have started); blocks while this loop has nothing to do.
                free = scheduler.engine.slots - scheduler.live - scheduler.waiting
                taken = sut.take(free, block=scheduler.idle)
                if sut.has_failed:
                    # Another loop failed, so the run is lost: end it now, not after this loop's
                    # samples (a GPU run's minutes).
                    self._abandon(taken)
                    return
                if scheduler.idle and not taken:
                    return  # the SUT is stopping and nothing is left
                if taken:
                    scheduler.add(taken)
                    taken = []
                events = scheduler.step()
                self.steps += 1
                self.most_live = max(self.most_live, scheduler.live)
                self.answered += sut.answer(events)
        except BaseException as error:
            # Said at once (the main thread re-raises it only when LoadGen's test ends, and a
            # process that crashes before then, on a broken CUDA context, would lose it).
            # LoadGen would wait forever for these samples: answer every one empty so the test
            # can end, and re-raise in the main thread on exit.
            print(
                f"{self.thread.name} failed; its samples are answered empty so the test can end:",
                file=sys.stderr,
            )
            traceback.print_exception(error, file=sys.stderr)
            sut.failed(error)
            self._abandon(taken)

    def _abandon(self, taken: list[Request]) -> None:
        """End the loop with every sample it holds answered empty (`taken`: from the queue, not
        yet the scheduler's), and every one still queued, so that LoadGen's test can end."""
        assert self.scheduler is not None
        answer_empty([*taken, *self.scheduler.drain(), *self.sut.take_all()])


def answer_empty(requests: Sequence[Request]) -> None:
    if requests:
        lg.QuerySamplesComplete(
            [lg.QuerySampleResponse(request.key[0], 0, 0, 0) for request in requests]
        )


class GenerationSUT:
    def __init__(
        self,
        engines: Sequence[Callable[[], DecoderEngine]],
        store: PromptStore,
        *,
        token_dtype: str,
        report_first_tokens: bool,
        admit_batch: int = 1,
    ) -> None:
        """`engines`: each loop's active engine, asked for when the loops start (the runners that
        hold them are activated after the SUT is made); `admit_batch`: Scheduler's."""
        if not engines:
            raise ValueError("the serving loop needs at least one engine")
        self._loops = [_Loop(self, engine, i) for i, engine in enumerate(engines)]
        self._admit_batch = admit_batch
        self._store = store
        self._dtype = np.dtype(token_dtype)
        self._report_first = report_first_tokens
        self._queue: collections.deque[Request] = collections.deque()
        self._wake = threading.Condition()  # guards _queue, _stopping and _failure's setting
        self._stopping = False
        self._failure: BaseException | None = None

    # LoadGen's callbacks --------------------------------------------------------------------------
    def issue_queries(self, query_samples: Sequence[Any]) -> None:
        store = self._store
        requests = [
            Request(
                (sample.id, sample.index),
                store.prompts[sample.index],
                store.config_of(sample.index),
            )
            for sample in query_samples
        ]
        with self._wake:
            if self._failure is None:
                self._queue.extend(requests)
                self._wake.notify_all()
                return
        # A loop has failed: the run is lost; answered empty so the test can end.
        answer_empty(requests)

    def flush_queries(self) -> None:
        pass  # every request is decoded as soon as it arrives

    # Lifecycle --------------------------------------------------------------------------------------
    def __enter__(self) -> GenerationSUT:
        for loop in self._loops:
            loop.start(self._admit_batch)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        for loop in self._loops:
            loop.thread.join()
        if self._failure is not None and exc is None:
            raise RuntimeError("the generation loop failed") from self._failure

    def to_json(self) -> dict[str, Any]:
        return {
            "engines": len(self._loops),
            "decode_steps": [loop.steps for loop in self._loops],
            "most_live_samples": [loop.most_live for loop in self._loops],
            "answered_samples": [loop.answered for loop in self._loops],
            # each loop's decode steps: waiting for the GPU, host work with it idle, admitting
            # (scheduler.StepTimes): where a generative run's GPU time was lost to the host
            "step_ms": [
                loop.scheduler.times.per_step_ms() if loop.scheduler is not None else None
                for loop in self._loops
            ],
        }

    # From the loops ---------------------------------------------------------------------------------
    @property
    def has_failed(self) -> bool:
        return self._failure is not None

    def failed(self, error: BaseException) -> None:
        with self._wake:
            self._failure = self._failure or error
            self._wake.notify_all()  # loops waiting for work end now

    def take(self, most: int, *, block: bool) -> list[Request]:
        """Up to `most` queued requests, oldest first; with `block`, waits until there are some,
        the SUT stops or a loop fails (then possibly none)."""
        with self._wake:
            while block and not self._queue and not self._stopping and self._failure is None:
                self._wake.wait()
            queue = self._queue
            return [queue.popleft() for _ in range(min(most, len(queue)))]

    def take_all(self) -> list[Request]:
        """Every queued request (a failed run answers them empty)."""
        with self._wake:
            taken = list(self._queue)
            self._queue.clear()
            return taken

    def answer(self, events: Sequence[FirstToken | Finished]) -> int:
        """Hand LoadGen one step's first tokens, then its finished samples; how many finished."""
        firsts, finished, keep = [], [], []
        for event in events:
            response_id = event.request.key[0]
            if isinstance(event, FirstToken):
                if self._report_first:
                    data = np.array([event.token], self._dtype)
                    keep.append(data)
                    firsts.append(
                        lg.QuerySampleResponse(response_id, data.ctypes.data, data.nbytes)
                    )
            else:
                data = np.array(event.tokens, self._dtype)
                keep.append(data)
                finished.append(
                    lg.QuerySampleResponse(
                        response_id, data.ctypes.data, data.nbytes, len(event.tokens)
                    )
                )
        # LoadGen copies the bytes during each call: `keep` holds them until then.
        if firsts:
            lg.FirstTokenComplete(firsts)
        if finished:
            lg.QuerySamplesComplete(finished)
        del keep
        return len(finished)
