"""An engine in a process of its own (generation/engine_process.py): the same tokens as the same
engine in this process, through the scheduler and under LoadGen's serving loop with two engines;
an engine's error, a maker's error and a process that dies each one line; close ends the process.
Tiny random GPT-J graphs on ONNX Runtime, the maker the benchmark's own (it must pickle)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, gptj_model, random_weights
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.engine_process import EngineProcess
from mlperf_harness.generation.prompts import PromptStore
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.serving import GenerationSUT
from mlperf_harness.generation.step_engine import step_engine_makers
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode

TINY = GptjShape(
    layers=2, hidden=32, heads=4, rotary_dim=4, vocab_size=40, inner=64, max_positions=256
)
EOS = 39
_rng = np.random.default_rng(5)
PROMPTS = [_rng.integers(0, EOS, size=int(n)).astype(np.int64) for n in _rng.integers(1, 16, 10)]
CONFIG = GenerationConfig(EOS, 2, 12, 4)


def _maker() -> Callable[[], DecoderEngine]:
    weights = random_weights(TINY, 7)
    weights["lm_head.bias"][EOS] = 3.0  # some samples end early, others run to the maximum
    graph = gptj_model(weights, TINY).SerializeToString()
    (maker,) = step_engine_makers(
        OrtGptj, graph, TINY, threads=1, eos_id=EOS, slots=3, beams=4, max_length=64, workers=1
    )()
    return maker


def test_the_same_tokens_as_in_this_process_and_close_ends_it() -> None:
    make = _maker()
    here = generate(make(), PROMPTS, CONFIG)
    engine = EngineProcess(make, "engine 0")
    try:
        assert (engine.slots, engine.beams, engine.max_length, engine.eos_id) == (3, 4, 64, EOS)
        assert generate(engine, PROMPTS, CONFIG) == here
        assert len({len(tokens) for tokens in here}) > 1  # slots freed and reused mid-run
    finally:
        engine.close()
    assert engine._process.returncode == 0
    engine.close()  # again: nothing left to do


def test_an_engines_error_is_one_line_and_the_process_goes_on(
    capfd: pytest.CaptureFixture[str],
) -> None:
    engine = EngineProcess(_maker(), "engine 1")
    try:
        with pytest.raises(HarnessError, match=r"engine 1's process: prefill failed: ValueError"):
            engine.prefill([0, 1], [PROMPTS[0]])  # two slots, one prompt
        assert "Traceback" in capfd.readouterr().err  # the child's, on the run's stderr
        assert generate(engine, PROMPTS[:2], CONFIG) == generate(_maker()(), PROMPTS[:2], CONFIG)
    finally:
        engine.close()


def _children() -> set[str]:
    """This process's children (Linux: /proc), as pids."""
    tasks = Path(f"/proc/{os.getpid()}/task")
    return {pid for task in tasks.iterdir() for pid in (task / "children").read_text().split()}


def _refused() -> DecoderEngine:
    raise HarnessError("no GPU here")


def _dies() -> DecoderEngine:
    os._exit(3)


def test_a_makers_error_and_a_process_that_dies_are_one_line() -> None:
    children = _children()
    with pytest.raises(HarnessError, match="engine 2's process: make failed: HarnessError: no GPU"):
        EngineProcess(_refused, "engine 2")
    assert _children() == children  # its process ended with the error
    with pytest.raises(
        HarnessError, match=r"engine 3's process \(pid \d+\) exited with code 3 during its make"
    ):
        EngineProcess(_dies, "engine 3")


def test_two_engine_processes_under_loadgen_answer_as_one_engine_alone(tmp_path: Path) -> None:
    make = _maker()
    store = PromptStore(PROMPTS, CONFIG, len(PROMPTS))
    engines = [EngineProcess(make, f"engine {i}") for i in range(2)]
    sut = GenerationSUT(
        [lambda: engines[0], lambda: engines[1]],
        store,
        token_dtype="int64",
        report_first_tokens=True,
    )
    settings = LoadgenSettings(
        model="gptj",
        scenario=Scenario.SERVER,
        mode=TestMode.ACCURACY_ONLY,
        performance_sample_count=len(PROMPTS),
        use_token_latencies=True,
        server_target_qps=50.0,
    )
    library = SampleLibrary(len(PROMPTS), len(PROMPTS), store.load, store.unload)
    try:
        with sut:
            run_under_loadgen(sut, library, settings, tmp_path)
    finally:
        for engine in engines:
            engine.close()
    alone = generate(make(), PROMPTS, CONFIG)
    entries = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    assert sorted(entry["qsl_idx"] for entry in entries) == list(range(len(PROMPTS)))
    for entry in entries:
        tokens = np.frombuffer(bytes.fromhex(entry["data"]), np.int64).tolist()
        assert tokens == alone[entry["qsl_idx"]]
    assert min(sut.to_json()["decode_steps"]) >= 1  # both engines' processes decoded
