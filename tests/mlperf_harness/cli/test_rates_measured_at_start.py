"""Rates measured at a run's start, end to end: our CLI, the real LoadGen, a custom system file for
this machine whose rates are null, and a runner clearly named as a stand-in for an engine whose
speed is capped (it sleeps 1 ms a batch), so that the runs are VALID whatever this machine's speed."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.backends import registry
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.config.measured_rates import (
    MAX_ATTEMPTS,
    MEASURED_BY_EARLIER_ATTEMPT,
    MEASURED_SOURCES,
)
from mlperf_harness.harness.engine_timing import time_engine
from mlperf_harness.loadgen.results import MIN_DURATION_UNMET
from mlperf_harness.systems.custom import add_custom_system
from mlperf_harness.systems.detect import detect_system

SYSTEM = "testbox"


class CappedEngineRunner(NullRunner):
    """Stands in for an engine: at most one batch a millisecond, the GIL released."""

    name = "capped_engine"

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        threading.Event().wait(0.001)
        return super().infer(batch)


@pytest.fixture
def capped_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        registry._FACTORIES, "capped_engine", lambda options: [CappedEngineRunner()]
    )


class BusyWhileTimedRunner(NullRunner):
    """Stands in for an engine on a machine that is busy with other work while the engine is timed
    at the run's start (12 ms a batch), and idle after (1 ms): the rate timed is far too low. The
    ratio is wide so that it holds on a loaded machine, where a 1 ms wait and the harness's own work
    around it can take 4 ms a batch (a 4 ms busy wait once left the run no faster than timed)."""

    name = "busy_while_timed"
    busy = False

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        threading.Event().wait(0.012 if BusyWhileTimedRunner.busy else 0.001)
        return super().infer(batch)


@pytest.fixture
def busy_while_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        registry._FACTORIES, "busy_while_timed", lambda options: [BusyWhileTimedRunner()]
    )

    def time_engine_busy(*args: Any, **kwargs: Any) -> Any:
        BusyWhileTimedRunner.busy = True
        try:
            return time_engine(*args, **kwargs)
        finally:
            BusyWhileTimedRunner.busy = False

    # run_harness times the engine at start through its own name for it.
    monkeypatch.setattr("mlperf_harness.cli.run_harness.time_engine", time_engine_busy)


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """This machine registered as a custom system, every setting null (add_custom_system's stub)."""
    configs = tmp_path / "systems"
    add_custom_system(detect_system(), SYSTEM, configs, ["harness_overhead"], allow_known=True)
    return configs


def _run(
    config_dir: Path, log_dir: Path, *extra: str, backend: str = "capped_engine"
) -> dict[str, Any]:
    argv = [
        "--backend",
        backend,
        "--config_dir",
        str(config_dir),
        "--log_dir",
        str(log_dir),
    ]
    # Offline by its rate: a minimum duration (harness_overhead's configs size runs by count).
    argv += ["--scenario", "Offline", "--min_duration_ms", "300", "--min_query_count", "1"]
    assert run_benchmark_cli(BENCHMARK, [*argv, *extra]) == 0
    record: dict[str, Any] = json.loads((log_dir / "result.json").read_text())
    return record


def test_a_custom_system_with_null_rates_measures_them_and_runs_valid(
    capped_engine: None, config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = _run(config_dir, tmp_path / "logs")
    assert record["system_name"] == SYSTEM
    assert record["result_valid"] is True, record["invalid_reasons"]
    measured = record["measured_at_start"]
    timing = measured["timing"]
    assert timing["batch_size"] == 1024 and timing["runners"] == 1 and timing["calls"] >= 3
    # 1.25 x the peak, which a runner that sleeps 1 ms a batch keeps under 1024 samples/ms; the run
    # at that rate, or (a machine busier while timed than during the run) at an earlier attempt's.
    at_start = measured["set"]["offline_expected_qps"]
    assert at_start == pytest.approx(1.25 * timing["peak_samples_per_second"], rel=1e-3)
    earlier = measured.get("earlier_attempts", [])
    rate = record["settings"]["offline_expected_qps"]
    if earlier:
        assert earlier[0]["offline_expected_qps"] == at_start
        assert rate == {
            "value": earlier[-1]["set"]["offline_expected_qps"],
            "from": MEASURED_BY_EARLIER_ATTEMPT,
        }
    else:
        assert rate == {"value": at_start, "from": "measured at start"}
    assert timing["peak_samples_per_second"] < 1_024_000
    assert "timed the engine at start" in capsys.readouterr().err


def test_an_offline_run_faster_than_timed_at_start_runs_again_at_its_own_rate(
    busy_while_timed: None, config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "logs"
    record = _run(config_dir, log_dir, backend="busy_while_timed")
    # The first attempt's query, sized at 1.25 x a peak timed far too low, ended early...
    earlier = record["measured_at_start"]["earlier_attempts"]
    assert 1 <= len(earlier) < MAX_ATTEMPTS
    first = earlier[0]
    assert MIN_DURATION_UNMET in first["invalid_reasons"]
    assert first["samples_per_second"] > 1.375 * first["offline_expected_qps"]
    # ...and the next (rarely a third: the first attempt's start weighs on a short query), at 1.25 x
    # the rate the one before ran at, is the run's result and its logs.
    assert record["result_valid"] is True, record["invalid_reasons"]
    rate = record["settings"]["offline_expected_qps"]
    assert rate == {
        "value": earlier[-1]["set"]["offline_expected_qps"],
        "from": MEASURED_BY_EARLIER_ATTEMPT,
    }
    assert "Result is : VALID" in (log_dir / "mlperf_log_summary.txt").read_text()
    value = rate["value"]
    expected = str(int(value)) if float(value).is_integer() else repr(float(value))
    assert (
        f"harness_overhead.Offline.target_qps = {expected}" in (log_dir / "user.conf").read_text()
    )
    assert "running it again at offline_expected_qps" in capsys.readouterr().err


def test_a_single_stream_run_that_ran_out_of_queries_runs_again_at_its_fastest_query(
    busy_while_timed: None, config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "logs"
    # Queries generated for twice the minimum duration at the 12 ms timed: 50, where 1 ms queries
    # need 300 to last it.
    record = _run(config_dir, log_dir, "--scenario", "SingleStream", backend="busy_while_timed")
    earlier = record["measured_at_start"]["earlier_attempts"]
    first = earlier[0]
    fastest = first["latency_ns"]["min"]
    assert first["set"] == {"single_stream_expected_latency_ns": fastest}
    assert fastest < first["single_stream_expected_latency_ns"] / 2
    # The last attempt's logs hold no error: LoadGen had queries enough.
    assert record["loadgen"]["errors"] == []
    assert record["settings"]["single_stream_expected_latency_ns"] == {
        "value": earlier[-1]["set"]["single_stream_expected_latency_ns"],
        "from": MEASURED_BY_EARLIER_ATTEMPT,
    }
    assert "ran out of the queries it had generated" in capsys.readouterr().err


def test_a_rate_in_the_systems_file_is_used_unchanged(
    capped_engine: None, config_dir: Path, tmp_path: Path
) -> None:
    path = config_dir / f"{SYSTEM}.json"
    document = json.loads(path.read_text())
    document["settings"]["harness_overhead"]["Offline"]["offline_expected_qps"] = 400_000
    path.write_text(json.dumps(document))
    record = _run(config_dir, tmp_path / "logs")
    assert record["settings"]["offline_expected_qps"] == {"value": 400_000.0, "from": str(path)}
    assert "measured_at_start" not in record
    # ...and so is a flag's.
    record = _run(config_dir, tmp_path / "flag", "--offline_expected_qps", "300000")
    assert record["settings"]["offline_expected_qps"] == {
        "value": 300_000.0,
        "from": "command line",
    }


def test_a_systems_rate_is_not_another_engines(
    capped_engine: None, config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The file names its engine (the capped engine, fp32, its batch size) and the rate measured with
    # it: a run whose flags ask for int8 times its own, and says why, once.
    path = config_dir / f"{SYSTEM}.json"
    document = json.loads(path.read_text())
    offline = document["settings"]["harness_overhead"]["Offline"]
    offline.update(
        backend="capped_engine", precision="fp32", batch_size=512, offline_expected_qps=400_000
    )
    path.write_text(json.dumps(document))
    record = _run(config_dir, tmp_path / "logs", "--precision", "int8")
    assert record["settings"]["offline_expected_qps"]["from"] in MEASURED_SOURCES
    said = (
        "offline_expected_qps of the config (backend capped_engine, precision fp32, batch_size 512)"
        " not used"
    )
    assert capsys.readouterr().err.count(said) == 1
    argv = ["--config_dir", str(config_dir), "--precision", "int8", "--show_config"]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    out = capsys.readouterr().out
    assert said in out and "offline_expected_qps = (timed at start" in out


def test_show_config_names_what_would_be_measured(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--backend", "onnxruntime", "--config_dir", str(config_dir), "--show_config"]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--scenario", "SingleStream"]) == 0
    out = capsys.readouterr().out
    assert f"harness_overhead/SingleStream on {SYSTEM}" in out
    assert "single_stream_expected_latency_ns = (timed at start" in out
    # The null backend does no work: nothing is timed, its runs go by count.
    assert run_benchmark_cli(BENCHMARK, ["--config_dir", str(config_dir), "--show_config"]) == 0
    out = capsys.readouterr().out
    assert "timed at start" not in out and "the null backend does no work" in out
