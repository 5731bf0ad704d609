"""gpu_table: the comparisons the device script prints, from result files of the shapes that
run_harness and torch_raw write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.gpu_table import format_table, main
from mlperf_harness.benchmarks.stall_probe import Stall, StallRecord
from mlperf_harness.harness.timeline import LatencyBucket, Timeline


def _run(scenario: str, batch: int, **fields: Any) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "result_valid": True,
        "settings": {"batch_size": {"value": batch, "from": "command line"}},
        **fields,
    }


def _write_timeline(
    run_file: Path,
    *,
    completed: list[int],
    means: list[float | None],
    worst: list[int],
    histogram: tuple[LatencyBucket, ...],
    issued: list[int] | None = None,
    first_issue_ns: int | None = None,
) -> None:
    """The timeline of the run whose result is `run_file`, where the device script keeps it (10 ms
    bins, one batch a sample, arrivals as completions unless `issued` says otherwise); the totals
    follow from the bins and the histogram."""
    samples = sum(completed)
    latencies = [bucket.lower_ns for bucket in histogram for _ in range(bucket.count)]
    timeline = Timeline(
        bin_width_ns=10_000_000,
        issued=tuple(completed if issued is None else issued),
        completed=tuple(completed),
        batches=tuple(completed),
        latency_mean_ns=tuple(means),
        latency_max_ns=tuple(worst),
        histogram=histogram,
        issued_samples=samples,
        completed_samples=samples,
        completed_batches=samples,
        latency_min_ns=min(latencies),
        latency_max_total_ns=max(worst),
        latency_mean_total_ns=sum(latencies) / len(latencies),
        duration_ns=10_000_000 * len(completed),
        first_issue_ns=first_issue_ns,
    )
    (run_file.parent / "timelines").mkdir(exist_ok=True)
    (run_file.parent / "timelines" / run_file.name).write_text(json.dumps(timeline.to_json()))


def _raw(
    batch: int, rate: float, p90: float, p99: float, precision: str = "fp16"
) -> dict[str, Any]:
    latency = {"p50": p90 * 0.9, "p90": p90, "p99": p99}
    return {
        "batch_size": batch,
        "precision": precision,
        "samples_per_second": rate,
        "latency_ms": latency,
    }


def test_each_run_is_compared_with_its_own_reference(tmp_path: Path) -> None:
    engines = [_raw(1, 2900.0, 0.4, 0.5), _raw(8, 14000.0, 0.6, 0.8), _raw(256, 30000.0, 8.5, 8.7)]
    files = {
        "raw": {"device": "NVIDIA H200", "engines": engines},
        "offline_device": _run("Offline", 256, samples_per_second=29100.0, latency_ns={}),
        "server_q25500": _run(
            "Server", 128, completed_samples_per_second=25608.0, latency_ns={"p99": 12.5e6}
        ),
        "singlestream": _run(
            "SingleStream", 1, samples_per_second=2500.0, latency_ns={"p90": 0.44e6}
        ),
        "multistream": _run("MultiStream", 8, latency_ns={"p90": 0.7e6, "p99": 0.84e6}),
        "accuracy": _run("Offline", 256, accuracy={"top1_percent": 100.0, "good": 3, "total": 3}),
        "bert_accuracy": _run("Offline", 256, accuracy={"f1": 99.5, "exact_match": 98.0}),
    }
    for name, record in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(record))
    table = format_table(tmp_path)
    lines = {line.split()[0]: line for line in table.splitlines()}
    assert "97.0% of raw b256" in lines["offline_device"]
    assert "88.0% of Offline" in lines["server_q25500"]
    assert "p90 +10.0% vs raw b1 p90" in lines["singlestream"]
    assert "p99 +5.0% vs raw b8 p99" in lines["multistream"]
    assert "top-1 100.0% (3/3)" in lines["accuracy"]
    assert "F1 99.5, exact match 98.0" in lines["bert_accuracy"]
    assert any(line.startswith("fp16 b256") and "30,000" in line for line in table.splitlines())


def test_a_run_is_compared_with_the_engine_of_its_precision(tmp_path: Path) -> None:
    engines = [_raw(256, 35000.0, 7.4, 7.5, "fp8"), _raw(256, 30000.0, 8.6, 8.8, "fp16")]
    run = _run("Offline", 256, samples_per_second=34300.0, latency_ns={})
    run["settings"]["precision"] = {"value": "fp8", "from": "command line"}
    (tmp_path / "raw.json").write_text(json.dumps({"engines": engines}))
    (tmp_path / "offline_device.json").write_text(json.dumps(run))
    table = format_table(tmp_path)
    assert "98.0% of raw b256" in table  # against fp8's 35,000, not fp16's 30,000
    assert [line.split()[:2] for line in table.splitlines()[1:3]] == [
        ["fp16", "b256"],
        ["fp8", "b256"],
    ]


def test_a_phase_s_own_record_beside_the_runs_is_no_run(tmp_path: Path) -> None:
    # a profile or an engine's timing that a phase writes into the results folder
    (tmp_path / "profile.json").write_text(json.dumps({"batches": [1024], "parts": {}}))
    run = _run("Offline", 256, samples_per_second=29100.0, latency_ns={})
    (tmp_path / "offline_device.json").write_text(json.dumps(run))
    table = format_table(tmp_path)
    assert "offline_device" in table and "profile" not in table


def test_a_directory_is_required(tmp_path: Path) -> None:
    assert main([str(tmp_path / "absent")]) == 2
    assert main([]) == 2


def test_a_series_compares_each_offline_run_with_the_raw_figure_before_it(tmp_path: Path) -> None:
    series = tmp_path / "series"
    series.mkdir()
    for index, (raw_rate, offline_rate) in enumerate(((40000.0, 39000.0), (38000.0, 37240.0)), 1):
        engine = _raw(256, raw_rate, 6.5, 6.6, precision="fp8")
        (series / f"raw_{index}.json").write_text(json.dumps({"engines": [engine]}))
        run = _run("Offline", 256, samples_per_second=offline_rate, latency_ns={})
        (series / f"offline_{index}.json").write_text(json.dumps(run))
    lines = {line.split("  ")[0].strip(): line for line in format_table(tmp_path).splitlines()}
    assert "97.5% of raw fp8 b256" in lines["round 1"]
    assert "98.0% of raw fp8 b256" in lines["round 2"]
    assert lines["lowest share"].endswith("97.5%")


def test_a_series_on_several_gpus_compares_with_the_engine_on_each(tmp_path: Path) -> None:
    series = tmp_path / "series"
    series.mkdir()
    engine = _raw(256, 42000.0, 6.2, 6.3, precision="fp8")
    (series / "raw_1.json").write_text(json.dumps({"gpus": 2, "engines": [engine]}))
    run = _run("Offline", 256, samples_per_second=79800.0, latency_ns={})
    (series / "offline_1.json").write_text(json.dumps(run))
    lines = {line.split("  ")[0].strip(): line for line in format_table(tmp_path).splitlines()}
    assert lines["round 1"].endswith("95.0% of raw fp8 b256 x 2 GPUs")


def test_a_server_run_s_timeline_shows_when_its_slow_samples_were(tmp_path: Path) -> None:
    """Stalls every 0.5 s of a 2 s run, each over two 10 ms bins: four episodes 0.5 s apart."""
    bins = 200
    worst = [3_000_000] * bins
    for start in (20, 70, 120, 170):
        worst[start] = worst[start + 1] = 30_000_000
    _write_timeline(
        tmp_path / "server_q40000.json",
        completed=[100] * bins,
        means=[2e6] * bins,
        worst=worst,
        histogram=(LatencyBucket(2_000_000, 10_000, 20_000),),
    )
    server = _run("Server", 128, completed_samples_per_second=40000.0, latency_ns={"p50": 5e6})
    (tmp_path / "server_q40000.json").write_text(json.dumps(server))
    offline = _run("Offline", 256, samples_per_second=47000.0, latency_ns={"p50": 5e9})
    (tmp_path / "offline_device.json").write_text(json.dumps(offline))  # no timeline: no line
    line = format_table(tmp_path).splitlines()[-1]
    assert line == (
        "server_q40000: 8 of 200 bins of 10.0 ms hold a sample slower than 10.0 ms (2x p50) "
        "in 4 episodes from 0.20, 0.70, 1.20, 1.70 s; median gap 0.50 s"
    )


def _steady_server_run(
    directory: Path,
    qps: int,
    issued: list[int],
    completed: list[int],
    stalls: StallRecord | None = None,
) -> list[str]:
    """The table's lines for one Server run at `qps` (10 ms bins, none slow, the first issue at 1 s
    on the monotonic clock) with these arrivals and completions a bin, and the stall probe's
    record beside it where given."""
    label = f"server_q{qps}"
    if stalls is not None:
        (directory / "stalls").mkdir(exist_ok=True)
        (directory / "stalls" / f"{label}.json").write_text(json.dumps(stalls.to_json()))
    _write_timeline(
        directory / f"{label}.json",
        completed=completed,
        issued=issued,
        first_issue_ns=1_000_000_000,
        means=[2e6] * len(completed),
        worst=[3_000_000] * len(completed),
        histogram=(LatencyBucket(2_000_000, 10_000, sum(completed)),),
    )
    server = _run("Server", 128, completed_samples_per_second=float(qps), latency_ns={"p50": 5e6})
    (directory / f"{label}.json").write_text(json.dumps(server))
    return format_table(directory).splitlines()


def test_a_server_run_s_timeline_names_where_loadgen_s_arrivals_stopped(tmp_path: Path) -> None:
    """Arrivals fall to a tenth in bins 30-31 (completions with them, one bin later in 31-32) and
    in bin 150 (completions carry on); bin 0 and the last, partial, are not counted."""
    issued, completed = [100] * 200, [100] * 200
    issued[0] = issued[-1] = completed[0] = 10
    for i in (30, 31, 150):
        issued[i] = 10
    completed[31] = completed[32] = 20
    assert _steady_server_run(tmp_path, 10000, issued, completed)[-2:] == [
        "server_q10000: 0 of 200 bins of 10.0 ms hold a sample slower than 10.0 ms (2x p50)",
        "server_q10000: arrivals from LoadGen under half their median (100 a bin) in 3 bins, "
        "2 of them with completions down too, at 0.30, 0.31, 1.50 s",
    ]


def test_the_stall_probe_says_which_arrival_dips_held_up_the_host(tmp_path: Path) -> None:
    """Dips in bins 30 and 150; the probe beside the run was held up from 1.301 to 1.306 s (in
    bin 30) and at 1.9 s (no dip): one of the two."""
    issued = [100] * 200
    issued[30] = issued[150] = 10
    stalls = StallRecord(
        1_000_000,
        5_000_000,
        900_000_000,
        3_100_000_000,
        (Stall(1_300_000_000, 5_000_000), Stall(1_900_000_000, 6_000_000)),
        0,
    )
    line = _steady_server_run(tmp_path, 10000, issued, [100] * 200, stalls)[-1]
    assert line.endswith(
        "in 2 bins, 0 of them with completions down too, at 0.30, 1.50 s; "
        "the stall probe (a process beside the run) was held up in 1 of them"
    )


def test_a_server_run_at_a_low_rate_names_no_arrival_dips_in_its_noise(tmp_path: Path) -> None:
    """Under 50 arrivals a bin, a bin at a third of the median is noise, not a stop."""
    issued = [20] * 100
    issued[40] = 6
    lines = _steady_server_run(tmp_path, 2000, issued, [20] * 100)
    assert lines[-1].startswith("server_q2000: 0 of 100 bins")
    assert not any("arrivals" in line for line in lines)


def test_an_unreadable_timeline_costs_its_line_not_the_table(tmp_path: Path) -> None:
    (tmp_path / "timelines").mkdir()
    (tmp_path / "timelines" / "server_q1000.json").write_text("{not json")
    server = _run("Server", 128, completed_samples_per_second=1000.0, latency_ns={"p50": 5e6})
    (tmp_path / "server_q1000.json").write_text(json.dumps(server))
    lines = format_table(tmp_path).splitlines()
    assert lines[1].startswith("server_q1000") and "VALID" in lines[1]
    assert lines[-1].startswith("server_q1000: ") and "is not JSON" in lines[-1]


def test_a_singlestream_run_s_timeline_shows_its_latency_by_tenth(tmp_path: Path) -> None:
    """Twenty busy bins (two idle ones are skipped): the 7th and 8th run 10% slower, so the fourth
    tenth is; the harness's own percentiles come from its histogram, LoadGen's from result.json."""
    busy = [400_000.0] * 6 + [440_000.0] * 2 + [400_000.0] * 12
    means: list[float | None] = [None, *busy, None]
    completed = [0, *[100] * len(busy), 0]
    _write_timeline(
        tmp_path / "singlestream.json",
        completed=completed,
        means=means,
        worst=[450_000] * len(means),
        histogram=(LatencyBucket(400_000, 1_000, 1_800), LatencyBucket(440_000, 1_000, 200)),
    )
    latency = {"p50": 401_000, "p90": 445_000, "p99": 452_000}
    (tmp_path / "singlestream.json").write_text(
        json.dumps(_run("SingleStream", 1, samples_per_second=2400.0, latency_ns=latency))
    )
    lines = format_table(tmp_path).splitlines()
    assert lines[-2] == (
        "mean latency in each tenth of the run; the harness's own percentiles and LoadGen's"
    )
    assert lines[-1] == (
        "singlestream: 0.400 0.400 0.400 0.440 0.400 0.400 0.400 0.400 0.400 0.400 ms "
        "(spread 10.0%); harness / LoadGen p90 0.440 / 0.445, p99 0.441 / 0.452 ms"
    )


def test_a_stream_series_compares_each_run_with_the_engine_latency_before_it(
    tmp_path: Path,
) -> None:
    """Two rounds: the engine slows between them and the runs follow it, so each stays within 10%
    of the engine measured just before it. A run's timeline gives its drift line too."""
    series = tmp_path / "series"
    series.mkdir()
    rounds = {1: (0.420, 0.440, 0.700, 0.710), 2: (0.450, 0.470, 0.750, 0.800)}
    for index, (b1_p90, ss_p90, b8_p99, ms_p99) in rounds.items():
        for name, scenario, batch, raw_ms, run_ms, percentile in (
            ("singlestream", "SingleStream", 1, b1_p90, ss_p90, "p90"),
            ("multistream", "MultiStream", 8, b8_p99, ms_p99, "p99"),
        ):
            engine = _raw(batch, 1000.0, raw_ms, raw_ms, precision="fp8")
            (series / f"raw_{name}_{index}.json").write_text(json.dumps({"engines": [engine]}))
            latency = {"p50": run_ms * 0.9e6, percentile: run_ms * 1e6}
            run = _run(scenario, batch, latency_ns=latency)
            (series / f"{name}_{index}.json").write_text(json.dumps(run))
    _write_timeline(
        tmp_path / "series_singlestream_2.json",
        completed=[100] * 10,
        means=[460_000.0] * 10,
        worst=[480_000] * 10,
        histogram=(LatencyBucket(460_000, 1_000, 1_000),),
    )
    lines = {line.split("  ")[0].strip(): line for line in format_table(tmp_path).splitlines()}
    assert lines["singlestream 1"].split()[2:5] == ["0.420", "0.440", "VALID"]
    assert lines["singlestream 1"].endswith("p90 +4.8% vs raw fp8 b1")
    assert lines["multistream 1"].endswith("p99 +1.4% vs raw fp8 b8")
    assert lines["singlestream 2"].endswith("p90 +4.4% vs raw fp8 b1")
    assert lines["multistream 2"].endswith("p99 +6.7% vs raw fp8 b8")
    assert lines["most above raw"].endswith("singlestream +4.8%, multistream +6.7%")
    drift = [line for line in lines.values() if line.startswith("series_singlestream_2: ")]
    assert drift == [
        "series_singlestream_2: " + " ".join(["0.460"] * 10) + " ms (spread 0.0%); harness / "
        "LoadGen p90 0.461 / 0.470 ms"
    ]


def test_a_stream_series_variant_is_held_to_its_scenario_s_raw_latency(tmp_path: Path) -> None:
    """INLINE_AB's runs: the same round's SingleStream answered in C++ and in Python, each against
    the batch-1 engine measured before both, each line saying who answered."""
    series = tmp_path / "series"
    series.mkdir()
    engine = _raw(1, 1000.0, 0.400, 0.400, precision="fp16")
    (series / "raw_singlestream_1.json").write_text(json.dumps({"engines": [engine]}))
    for name, p90, answers in (
        ("singlestream", 0.420, "C++ round trips"),
        ("singlestream-python", 0.440, "Python"),
    ):
        run = _run("SingleStream", 1, latency_ns={"p50": 0.38e6, "p90": p90 * 1e6})
        (series / f"{name}_1.json").write_text(json.dumps({**run, "inline_answers": answers}))
    lines = {line.split("  ")[0].strip(): line for line in format_table(tmp_path).splitlines()}
    assert lines["singlestream 1"].endswith("p90 +5.0% vs raw fp16 b1, answered in C++ round trips")
    assert lines["singlestream-python 1"].endswith("p90 +10.0% vs raw fp16 b1, answered in Python")
    assert lines["most above raw"].endswith("singlestream +5.0%, singlestream-python +10.0%")


def test_a_server_search_ends_the_runs_with_its_best_valid_run(tmp_path: Path) -> None:
    """DLRM-v2's layout: its Offline run is named offline, its Server runs server_q<target>."""

    def server(target: float, valid: bool, completed: float) -> dict[str, Any]:
        run = _run("Server", 256, completed_samples_per_second=completed, latency_ns={"p99": 5e7})
        run["settings"]["server_target_qps"] = {"value": target, "from": "command line"}
        return {**run, "result_valid": valid}

    files = {
        "offline": _run("Offline", 256, samples_per_second=20_000.0, latency_ns={}),
        "server_q18970": server(18_970, False, 18_939.0),
        "server_q17070": server(17_070, True, 17_000.0),
    }
    for name, record in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(record))
    lines = format_table(tmp_path).splitlines()
    assert "85.0% of Offline" in next(line for line in lines if line.startswith("server_q17070"))
    assert (
        "server search server: best VALID 17,000 samples/s at a target of 17,070 (server_q17070, "
        "p99 50.0 ms); 1 VALID of 2 runs (targets 17,070, 18,970); lowest INVALID above it 18,970"
    ) in lines
    (tmp_path / "server_q17070.json").unlink()
    assert "server search server: no VALID run of 1 run (targets 18,970 queries/s)" in (
        format_table(tmp_path).splitlines()
    )


def test_offline_is_compared_with_the_whole_query_where_raw_ran_it(tmp_path: Path) -> None:
    whole = {
        "order": "length",
        "run_seconds": 20.0,
        "samples": 356_400,
        "batches": 349,
        "seconds": 22.0,
        "samples_per_second": 16_200.0,
    }
    raw = {"engines": [_raw(1024, 16_183.0, 230.0, 285.0)], "whole_query": whole}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    run = _run("Offline", 1024, samples_per_second=15_714.0, latency_ns={})
    (tmp_path / "offline.json").write_text(json.dumps(run))
    line = next(x for x in format_table(tmp_path).splitlines() if x.startswith("raw, the whole"))
    assert line == (
        "raw, the whole query of a 20 s run (356,400 samples, length order): 16,200 samples/s"
        " in 22.0 s; Offline 97.0% of it"
    )
    (tmp_path / "raw.json").write_text(json.dumps({"engines": raw["engines"]}))
    assert "whole query" not in format_table(tmp_path)  # a raw phase that did not run it
