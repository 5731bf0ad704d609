"""Tensor parallelism of the torch Llama engine (parallel.py) on the CPU where torch is installed:
this process is rank 0 and its workers are `python -m mlperf_harness.engines.torch_llama.parallel`
processes, as on GPUs, joined over gloo. A small seeded Llama in float32 (grouped-query heads)
split over 2 and 4 ranks decodes greedily to the tokens of one process's engine and of the NumPy
model, through the in-flight scheduler (prompts prefilled while other slots decode, slots released
and reused), under each engine option; a call rank 0 refuses reaches no worker; a worker killed
mid-run or before it joins ends the run with one line, and a worker whose rank 0 is killed ends
with one; what cannot be split is refused before any worker starts.

torch is no dependency of the CPU build, so in CI these tests are skipped.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape, random_weights
from mlperf_harness.benchmarks.llama2_70b.session import numpy_llama
from mlperf_harness.engines.torch_llama import parallel
from mlperf_harness.engines.torch_llama.factory import ModelSource, create_llama_engine
from mlperf_harness.engines.torch_llama.options import ATTENTIONS, PREFILLS, EngineOptions
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import (
    DecoderEngine,
    Int64Array,
    PassThroughEngine,
    close_engine,
)
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModelEngine

pytestmark = needs_torch
EOS, SEED, SLOTS, MAX_PROMPT, MAX_NEW = 5, 3, 3, 48, 100
TWO = LlamaShape(
    layers=2, hidden=64, heads=8, kv_heads=2, inner=96, vocab_size=97, max_positions=160
)
FOUR = LlamaShape(
    layers=2, hidden=64, heads=8, kv_heads=4, inner=96, vocab_size=97, max_positions=160
)


@pytest.fixture(autouse=True)
def _threads() -> Iterator[None]:
    """A CPU group gives each rank its share of the cores, this process's too: restored after."""
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _workload() -> tuple[list[Int64Array], list[Any]]:
    rng = np.random.default_rng(7)
    prompts = [rng.integers(0, TWO.vocab_size, n) for n in (5, 17, 9, 30, 1, 12, 3, 44)]
    configs = [llama2_config(EOS).forced(int(n)) for n in (2, 20, 7, 60, 2, 11, 5, 33)]
    return prompts, configs


def _engine(shape: LlamaShape, world: int, options: EngineOptions | None = None) -> DecoderEngine:
    return create_llama_engine(
        max_prompt=MAX_PROMPT, max_new=MAX_NEW, eos_id=EOS, slots=SLOTS, tensor_parallel=world,
        source=ModelSource(small=shape, seed=SEED), options=options, device_kind="cpu",
    )  # fmt: skip


class Calls(PassThroughEngine):
    """Notes what the scheduler asked: a prefill while other slots were live, a slot reused."""

    def __init__(self, engine: DecoderEngine) -> None:
        super().__init__(engine)
        self.live: set[int] = set()
        self.used: set[int] = set()
        self.prefill_beside_live = self.reused = 0

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        self.prefill_beside_live += bool(self.live)
        self.reused += len(self.used & set(slots))
        self.live |= set(slots)
        self.used |= set(slots)
        super().prefill(slots, prompts)

    def release(self, slots: Sequence[int]) -> None:
        self.live -= set(slots)
        super().release(slots)


def _numpy_tokens(shape: LlamaShape) -> list[list[int]]:
    prompts, configs = _workload()
    numpy = StepModelEngine(
        numpy_llama(random_weights(shape, SEED), shape), EOS, slots=SLOTS, beams=1,
        max_length=MAX_PROMPT + MAX_NEW,
    )  # fmt: skip
    return generate(numpy, prompts, configs)


@pytest.mark.parametrize(("shape", "world"), [(TWO, 2), (FOUR, 4)])
def test_tensor_parallel_decodes_as_one_process_and_the_numpy_model(
    shape: LlamaShape, world: int
) -> None:
    prompts, configs = _workload()
    alone = generate(_engine(shape, 1), prompts, configs)
    assert alone == _numpy_tokens(shape)
    engine = _engine(shape, world)
    try:
        calls = Calls(engine)
        assert generate(calls, prompts, configs) == alone
        assert calls.prefill_beside_live and calls.reused  # in-flight batching, slots reused
    finally:
        close_engine(engine)


@pytest.mark.parametrize(
    "options",
    [
        EngineOptions(prefill=p, attention=a, graphs=g, prefill_tokens=24)  # 24: several forwards
        for p, a, g in itertools.product(PREFILLS, ATTENTIONS, (False, True))
    ],
    ids=lambda o: o.name.replace(" ", "-"),
)
def test_every_option_runs_on_every_rank(options: EngineOptions) -> None:
    prompts, configs = _workload()
    engine = _engine(TWO, 2, options)
    try:
        assert generate(engine, prompts, configs) == _numpy_tokens(TWO)
    finally:
        close_engine(engine)


def test_a_chunked_prefill_asked_for_early_runs_on_every_rank() -> None:
    """Candidates naming a slot whose prompt is still queued (chunked prefill): rank 0 tells its
    workers to run the queue (FLUSH) before its own, so the group stays in step and the first
    tokens are one process's; then the run goes on."""
    prompts, configs = _workload()
    options = EngineOptions(prefill="chunked", prefill_tokens=8)
    alone, engine = _engine(TWO, 1, options), _engine(TWO, 2, options)
    try:
        scores, block = np.zeros((2, 1), np.float32), np.zeros(2, bool)
        for each in (alone, engine):
            each.prefill([0, 1], [prompts[3], prompts[7]])
        assert engine.prefilling == {0, 1}
        ours, theirs = (e.candidates([0, 1], scores, block, 3) for e in (engine, alone))
        assert not engine.prefilling
        np.testing.assert_array_equal(ours.tokens, theirs.tokens)
        engine.release([0, 1])
        assert generate(engine, prompts, configs) == _numpy_tokens(TWO)
    finally:
        close_engine(engine)


def test_a_refused_call_leaves_the_group_in_step() -> None:
    """Rank 0 checks a call before telling its workers: a refused one, or one with no slots, is
    told to none, and the run goes on."""
    prompts, configs = _workload()
    engine = _engine(TWO, 2)
    try:
        engine.prefill([0], prompts[:1])
        with pytest.raises(HarnessError, match="slot 0 is in use"):
            engine.prefill([1, 0], prompts[1:3])
        with pytest.raises(HarnessError, match="slot 2 is free"):
            engine.advance([0, 2], np.zeros((2, 1), np.int64), np.ones((2, 1), np.int64))
        engine.advance([], np.zeros((0, 1), np.int64), np.zeros((0, 1), np.int64))
        engine.release([])
        engine.release([0])
        assert generate(engine, prompts, configs) == _numpy_tokens(TWO)
    finally:
        close_engine(engine)


@pytest.mark.parametrize("seen_by", ["collective", "watch"])
def test_a_worker_killed_mid_run_ends_it_in_one_line(
    seen_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen by the next call's collective (gloo's error; the watch kept asleep) or by rank 0's
    watch between calls; either way the calls after it are refused in that line, and the workers
    left, waiting on a broken group, are ended rather than waited for."""
    if seen_by == "collective":
        monkeypatch.setattr(parallel, "POLL_SECONDS", 1000.0)
    prompts, _ = _workload()
    engine = _engine(FOUR, 4)
    workers = engine.workers  # type: ignore[attr-defined]
    line = r"tensor parallel: rank 2 \(pid \d+\) exited with signal SIGKILL; the run ends"
    try:
        engine.prefill([0, 1], prompts[:2])
        workers.processes[1].kill()
        workers.processes[1].wait()
        deadline = time.monotonic() + 60
        while seen_by == "watch" and workers.failure is None and time.monotonic() < deadline:
            time.sleep(0.1)
        for _ in range(2):
            with pytest.raises(HarnessError, match=line):
                engine.advance([0, 1], np.zeros((2, 1), np.int64), np.ones((2, 1), np.int64))
    finally:
        started = time.monotonic()
        close_engine(engine)
    assert time.monotonic() - started < parallel.STOP_SECONDS
    assert all(process.poll() is not None for process in workers.processes)


def _rank_0(code: str) -> subprocess.CompletedProcess[str]:
    """`code` run as rank 0 in a process of its own, after the imports it needs; its output and
    its workers' (they write to rank 0's stderr: the pipe closes once every one has ended)."""
    script = textwrap.dedent(
        f"""
        import os, signal
        import numpy as np
        from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape
        from mlperf_harness.engines.torch_llama import parallel
        from mlperf_harness.engines.torch_llama.factory import ModelSource, create_llama_engine
        def engine():
            return create_llama_engine(
                max_prompt=8, max_new=8, eos_id=5, slots=2, tensor_parallel=2,
                source=ModelSource(small=LlamaShape(**{TWO.__dict__!r})), device_kind="cpu",
            )
        """
    )
    return subprocess.run(
        [sys.executable, "-c", script + textwrap.dedent(code)], capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip


def test_a_worker_dead_before_joining_ends_rank_0_in_one_line() -> None:
    """Rank 0 waits to be joined by its workers, for ever if one is gone: its watch ends it."""
    run = _rank_0(
        """
        parallel.GRACE_SECONDS = 1.0
        start = parallel.start_workers
        def start_and_kill(world, argv):
            workers = start(world, argv)
            workers.processes[0].kill()
            return workers
        parallel.start_workers = start_and_kill
        engine()
        """
    )
    assert run.returncode == 1, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("tensor parallel: rank 1 (pid "), run.stderr
    assert last.endswith("exited with signal SIGKILL; the run ends (rank 0 was starting)")


def test_a_worker_whose_rank_0_is_gone_ends_in_one_line() -> None:
    run = _rank_0(
        """
        tp = engine()
        tp.prefill([0], [np.array([1, 2, 3])])
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    assert run.returncode == -9
    assert re.fullmatch(
        r"torch_llama\.parallel rank 1: rank 0 \(pid \d+\) is gone; ending", run.stderr.strip()
    ), run.stderr


def test_what_cannot_be_split_is_refused_before_any_worker_starts() -> None:
    with pytest.raises(HarnessError, match="kv_heads 2 divisible") as error:
        _engine(TWO, 4)
    assert "\n" not in str(error.value)
