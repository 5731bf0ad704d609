"""The serving loop under the real LoadGen: every sample answered with the tokens the model
generates for it alone, n_tokens its count, and outside Offline its first token logged before it
completes, so that TEST06's three checks pass on the log (and fail on a log that breaks them).
Tiny random GPT-J graphs on ONNX Runtime."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.benchmarks.gptj.decoding import beam_search
from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, gptj_model, random_weights
from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.engine import (
    BoolArray,
    Candidates,
    DecoderEngine,
    Float32Array,
    Int64Array,
    PassThroughEngine,
)
from mlperf_harness.generation.prompts import PromptStore
from mlperf_harness.generation.serving import GenerationSUT
from mlperf_harness.generation.step_engine import StepModelEngine
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode
from mlperf_harness.submission.verify_test06 import check_log

TINY = GptjShape(
    layers=2, hidden=32, heads=4, rotary_dim=4, vocab_size=40, inner=64, max_positions=256
)
EOS = 39
_rng = np.random.default_rng(11)
PROMPTS = [_rng.integers(0, EOS, size=int(n)).astype(np.int64) for n in _rng.integers(1, 16, 12)]


def _accuracy_run(
    sut: GenerationSUT,
    store: PromptStore,
    scenario: Scenario,
    log_dir: Path,
    server_target_qps: float | None = None,
) -> None:
    """One AccuracyOnly test of every prompt under LoadGen through `sut` (entered by the caller),
    token latencies recorded; its logs in `log_dir`."""
    settings = LoadgenSettings(
        model="gptj",
        scenario=scenario,
        mode=TestMode.ACCURACY_ONLY,
        performance_sample_count=len(PROMPTS),
        use_token_latencies=True,
        server_target_qps=server_target_qps,
    )
    library = SampleLibrary(len(PROMPTS), len(PROMPTS), store.load, store.unload)
    run_under_loadgen(sut, library, settings, log_dir)


def _session() -> OrtGptj:
    weights = random_weights(TINY, 7)
    weights["lm_head.bias"][EOS] = 3.0  # some samples end early, others run to the maximum
    return OrtGptj(gptj_model(weights, TINY).SerializeToString(), TINY)


@pytest.mark.parametrize(
    ("scenario", "admit_batch"),  # admit_batch: admission held back for company (scheduler.py)
    [
        (Scenario.OFFLINE, 1),
        (Scenario.OFFLINE, 3),
        (Scenario.SINGLE_STREAM, 1),
        (Scenario.SERVER, 2),
    ],
)
def test_every_sample_answered_as_alone_with_its_first_token(
    scenario: Scenario, admit_batch: int, tmp_path: Path
) -> None:
    session = _session()
    config = GenerationConfig(EOS, 2, 12, 4)
    store = PromptStore(PROMPTS, config, len(PROMPTS))
    # Two loops, each its own engine (a GPU each, on a GPU host): requests spread over both.
    engines = [StepModelEngine(session, EOS, slots=3, beams=4, max_length=64) for _ in range(2)]
    sut = GenerationSUT(
        [lambda: engines[0], lambda: engines[1]],
        store,
        token_dtype="int32",
        report_first_tokens=scenario is not Scenario.OFFLINE,
        admit_batch=admit_batch,
    )
    with sut:
        target = 50.0 if scenario is Scenario.SERVER else None
        _accuracy_run(sut, store, scenario, tmp_path, server_target_qps=target)
    entries = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    assert sorted(entry["qsl_idx"] for entry in entries) == list(range(len(PROMPTS)))
    for entry in entries:
        tokens = np.frombuffer(bytes.fromhex(entry["data"]), np.int32).tolist()
        assert tokens == beam_search(session, PROMPTS[entry["qsl_idx"]], config)
        assert entry["token_count"] == len(tokens)
    lengths = {entry["token_count"] for entry in entries}
    assert len(lengths) > 1
    first_tokens = scenario is not Scenario.OFFLINE
    checks = check_log(entries, "int32", EOS, first_tokens=first_tokens)
    assert checks.passed, checks.reasons
    assert checks.lines()[0] == (
        "First token check pass: True" if first_tokens else "First token check pass: Skipped"
    )
    record = sut.to_json()
    assert record["engines"] == 2
    assert all(live <= 3 for live in record["most_live_samples"])
    assert sum(record["answered_samples"]) == len(PROMPTS)
    # Each loop's decode steps as its scheduler timed them: no more than the loop's calls of
    # step (a call with nothing live decodes nothing), each part a time.
    for steps, times in zip(record["decode_steps"], record["step_ms"], strict=True):
        assert 0 <= times["steps"] <= steps
        assert all(times[part] >= 0 for part in ("admit_ms", "wait_ms", "gap_ms"))


class WaitsForTheOtherLoop(PassThroughEngine):
    """An engine whose first decode step waits until the other loop has answered `until` samples:
    a GPU far slower than the other."""

    sut: GenerationSUT
    until: int

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        deadline = time.monotonic() + 60
        while self.sut.to_json()["answered_samples"][1] < self.until:
            assert time.monotonic() < deadline, "the fast loop never took the slow one's share"
            time.sleep(0.001)
        return super().candidates(slots, beam_scores, block_eos, k)


def test_a_faster_engine_takes_what_a_slower_one_has_no_slot_for(tmp_path: Path) -> None:
    """Offline's one query is not split at its start: the slow loop holds only what its three
    slots took, and the fast loop answers the other nine (a share fixed at the start would have
    left the slow loop six: the fast loop could never answer nine, and the wait would fail)."""
    session = _session()
    config = GenerationConfig(EOS, 2, 12, 4)
    store = PromptStore(PROMPTS, config, len(PROMPTS))
    slow = WaitsForTheOtherLoop(StepModelEngine(session, EOS, slots=3, beams=4, max_length=64))
    fast = StepModelEngine(session, EOS, slots=3, beams=4, max_length=64)
    sut = GenerationSUT(
        [lambda: slow, lambda: fast], store, token_dtype="int64", report_first_tokens=False
    )
    slow.sut, slow.until = sut, len(PROMPTS) - 3
    with sut:
        _accuracy_run(sut, store, Scenario.OFFLINE, tmp_path)
    assert sut.to_json()["answered_samples"] == [3, len(PROMPTS) - 3]
    entries = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    for entry in entries:
        tokens = np.frombuffer(bytes.fromhex(entry["data"]), np.int64).tolist()
        assert tokens == beam_search(session, PROMPTS[entry["qsl_idx"]], config)


class FailingPrefill(PassThroughEngine):
    """An engine that fails on its first prefill, as a GPU error in a loop's thread would."""

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        raise RuntimeError("operation not permitted when stream is capturing")


class PrefillsAfterTheFailure(PassThroughEngine):
    """A healthy engine whose first prefill waits until another loop has failed."""

    sut: GenerationSUT

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        deadline = time.monotonic() + 60
        while not self.sut.has_failed:
            assert time.monotonic() < deadline, "the other loop never failed"
            time.sleep(0.001)
        super().prefill(slots, prompts)


def test_a_failed_loop_is_said_at_once_and_ends_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session()
    config = GenerationConfig(EOS, 2, 12, 4)  # at least 2 tokens: none ends on its first step
    store = PromptStore(PROMPTS, config, len(PROMPTS))
    healthy = PrefillsAfterTheFailure(
        StepModelEngine(session, EOS, slots=3, beams=4, max_length=64)
    )
    engines: list[DecoderEngine] = [
        FailingPrefill(StepModelEngine(session, EOS, slots=3, beams=4, max_length=64)),
        healthy,
    ]
    sut = GenerationSUT(
        [lambda: engines[0], lambda: engines[1]],
        store,
        token_dtype="int64",
        report_first_tokens=False,
    )
    healthy.sut = sut
    with pytest.raises(RuntimeError, match="the generation loop failed") as raised, sut:
        _accuracy_run(sut, store, Scenario.OFFLINE, tmp_path)
    assert "stream is capturing" in str(raised.value.__cause__)
    # Said while LoadGen's test still ran, with its loop and its traceback.
    err = capsys.readouterr().err
    assert "generation-loop-0 failed; its samples are answered empty" in err
    assert "Traceback" in err and "stream is capturing" in err
    # Every sample answered, so LoadGen's test ended: the failed loop's, those it was admitting
    # among them, and the healthy loop's too, at its next step after the failure, none finished.
    entries = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    assert sorted(entry["qsl_idx"] for entry in entries) == list(range(len(PROMPTS)))
    assert all(not entry["data"] for entry in entries)
    assert sut.to_json()["decode_steps"][1] <= 1  # 0: it got its share after the failure


def test_test06_checks_fail_where_the_log_breaks_them() -> None:
    def entry(tokens: list[int], first: list[int], count: int | None) -> dict[str, object]:
        data = {"qsl_idx": 0, "data": np.array(tokens, np.int64).tobytes().hex()}
        data["token_data"] = np.array(first, np.int64).tobytes().hex()
        if count is not None:
            data["token_count"] = count
        return data

    good = entry([5, 6, EOS], [5], 3)
    assert check_log([good], "int64", EOS, first_tokens=True).passed
    padded = check_log([entry([5, 6, EOS, EOS], [5], 4)], "int64", EOS, first_tokens=True)
    assert not padded.eos and padded.lines()[-1] == "TEST06 verification failed"
    wrong_first = check_log([entry([5, 6, EOS], [6], 3)], "int64", EOS, first_tokens=True)
    assert wrong_first.first_token is False
    assert check_log([entry([5, 6, EOS], [6], 3)], "int64", EOS, first_tokens=False).passed
    miscounted = check_log([entry([5, 6, EOS], [5], 2)], "int64", EOS, first_tokens=True)
    assert not miscounted.length
    uncounted = check_log([entry([5, 6, EOS], [5], None)], "int64", EOS, first_tokens=True)
    assert not uncounted.length and "no token_count" in uncounted.reasons[0]
