"""The serving loop: LoadGen's samples into a running batch of generations (in-flight batching),
answered as each finishes, on mlperf_loadgen (`--loadgen_path python`).

LoadGen's issue callback only queues requests; one loop thread owns the scheduler and the engine:
it takes what arrived, prefills it into free slots, decodes every live sample one token, and hands
LoadGen the samples that finished, all of one step in one QuerySamplesComplete call. So a Server or
SingleStream sample starts as soon as a slot is free instead of waiting for a batch to fill or end,
and Offline's one query keeps every slot busy to the last sample.

Each response is the sample's new token ids (EOS included where the model ended on it) in the
run's token type, with `n_tokens` set to their count: what MLCommons' accuracy scripts decode and
TEST06 checks. Outside Offline each sample's first token is also reported with FirstTokenComplete
as soon as it is certain (generation/beams.BeamSearch.first_token: at once for greedy decoding;
for beam search once every beam agrees on it, at the latest when the sample ends), so that LoadGen
logs it (`token_data`) where a run records token latencies, as TEST06 checks and Llama2's time to
first token needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.prompts import PromptStore
from mlperf_harness.generation.scheduler import Finished, FirstToken, Request, Scheduler


class GenerationSUT:
    def __init__(
        self,
        engine: Callable[[], DecoderEngine],
        store: PromptStore,
        *,
        token_dtype: str,
        report_first_tokens: bool,
        max_prefill: int | None = None,
    ) -> None:
        """`engine`: the active engine, asked for when the loop starts (the runner that holds it
        is activated after the SUT is made)."""
        self._engine = engine
        self._max_prefill = max_prefill
        self._scheduler: Scheduler | None = None
        self._store = store
        self._dtype = np.dtype(token_dtype)
        self._report_first = report_first_tokens
        self._arrived: list[Request] = []
        self._wake = threading.Condition()
        self._stopping = False
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="generation-loop", daemon=True)
        self.steps = 0  # decode steps run (result.json's record)
        self.most_live = 0  # the most samples decoded together

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
                self._arrived.extend(requests)
                self._wake.notify()
                return
        # The loop has failed: nothing will decode these; answered empty so the test can end.
        lg.QuerySamplesComplete(
            [lg.QuerySampleResponse(request.key[0], 0, 0, 0) for request in requests]
        )

    def flush_queries(self) -> None:
        pass  # every request is decoded as soon as it arrives

    # Lifecycle --------------------------------------------------------------------------------------
    def __enter__(self) -> GenerationSUT:
        self._scheduler = Scheduler(self._engine(), self._max_prefill)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join()
        if self._failure is not None and exc is None:
            raise RuntimeError("the generation loop failed") from self._failure

    def to_json(self) -> dict[str, Any]:
        return {"decode_steps": self.steps, "most_live_samples": self.most_live}

    # The loop -----------------------------------------------------------------------------------------
    def _loop(self) -> None:
        scheduler = self._scheduler
        assert scheduler is not None  # made in __enter__, before the thread starts
        while True:
            with self._wake:
                while not self._arrived and scheduler.idle and not self._stopping:
                    self._wake.wait()
                if self._stopping and not self._arrived and scheduler.idle:
                    return
                arrived, self._arrived = self._arrived, []
            try:
                if arrived:
                    scheduler.add(arrived)
                    arrived = []
                events = scheduler.step()
                self.steps += 1
                self.most_live = max(self.most_live, scheduler.live)
                self._answer(events)
            except BaseException as error:
                # LoadGen would wait forever for these samples: answer every one empty so the test
                # can end, and re-raise in the main thread on exit.
                self._failure = self._failure or error
                self._answer_empty(arrived, scheduler)
                return

    def _answer(self, events: Sequence[FirstToken | Finished]) -> None:
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

    def _answer_empty(self, arrived: Sequence[Request], scheduler: Scheduler) -> None:
        pending = [*arrived, *scheduler.drain()]
        with self._wake:
            pending += self._arrived
            self._arrived = []
            self._stopping = True
        if pending:
            lg.QuerySamplesComplete(
                [lg.QuerySampleResponse(request.key[0], 0, 0, 0) for request in pending]
            )
