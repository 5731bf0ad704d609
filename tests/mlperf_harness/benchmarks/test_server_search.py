"""The Server search every device script shares: its rule (search_next), targets quantized to the
scale of the rates, and the command line device_lib.sh's server_search calls, on result files of
the shape run_harness writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.server_search import (
    OWN_RATE,
    early_stopping_alone,
    format_rate,
    main,
    quantum_exponent,
    search,
    search_next,
)
from mlperf_harness.loadgen.results import EARLY_STOPPING_UNMET


def _host_valid_up_to(limit: float) -> tuple[list[float], Callable[[float], bool]]:
    runs: list[float] = []

    def run(target: float) -> bool:
        runs.append(target)
        return target <= limit

    return runs, run


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        # ResNet-50 on eight GPUs (scaling.sh: 4% steps of 352,000, whole hundreds).
        # VALID at the start: one step up (INVALID), then the midpoint.
        (365_000, [(352_000, True), (366_100, False), (359_000, True)]),
        # VALID twice: two steps up, then the run budget ends it.
        (400_000, [(352_000, True), (366_100, True), (380_200, True)]),
        # INVALID at the start: a step down, VALID, then the midpoint.
        (340_000, [(352_000, False), (337_900, True), (345_000, False)]),
        # Far below: stepping down until the runs are spent, none VALID.
        (100_000, [(352_000, False), (337_900, False), (323_800, False)]),
    ],
)
def test_the_search_steps_then_halves(limit: float, expected: list[tuple[float, bool]]) -> None:
    runs, run = _host_valid_up_to(limit)
    tried = search(352_000, 0.04 * 352_000, 3, run)
    assert tried == expected and runs == [target for target, _ in expected]


def test_the_search_stops_at_half_a_step_and_finds_the_bound_with_more_runs() -> None:
    tried = search(100_000, 4_000, 10, lambda target: target <= 105_000)
    assert tried == [
        (100_000, True),
        (104_000, True),
        (108_000, False),
        (106_000, False),  # 104k and 106k lie half a step apart: the end
    ]


def test_an_invalid_run_below_the_best_does_not_bound_the_search() -> None:
    # A noisy host: INVALID at 96k after VALID at 100k: the search still steps up from 100k.
    assert search_next(100_000, 4_000, 5, [(100_000, True), (96_000, False)]) == 104_000


def test_the_search_never_falls_to_zero() -> None:
    assert search_next(100, 100, 5, [(100, False)]) is None
    assert search_next(0.15, 0.1, 5, [(0.15, False)]) == 0.05
    assert search_next(0.15, 0.1, 5, [(0.15, False), (0.05, False)]) is None


@pytest.mark.parametrize(
    ("step", "exponent", "rate", "text"),
    [
        (14_080.0, 2, 366_080.0, "366100"),  # ResNet-50, eight GPUs: whole hundreds as before
        (1_897.0, 1, 18_970.4, "18970"),  # DLRM-v2 on one H200 (10% of 90% of 21,078)
        (50.0, -1, 500.04, "500.0"),  # RetinaNet
        (0.108, -3, 1.08, "1.080"),  # SDXL (10% of 90% of 1.2 samples/s): never rounded to 0
    ],
)
def test_targets_are_quantized_to_the_scale_of_the_step(
    step: float, exponent: int, rate: float, text: str
) -> None:
    assert quantum_exponent(step) == exponent
    assert format_rate(rate, step) == text


def test_an_sdxl_sized_search_keeps_its_decimals() -> None:
    tried = search(1.08, 0.108, 4, lambda target: target <= 1.15)
    assert tried == [(1.08, True), (1.188, False), (1.134, True), (1.161, False)]


def _result(
    path: Path,
    target: float | None,
    valid: bool,
    p99_ms: float,
    scenario: str = "Server",
    completed: float | None = None,
) -> str:
    settings = {} if target is None else {"server_target_qps": {"value": target, "from": "x"}}
    path.write_text(
        json.dumps(
            {
                "scenario": scenario,
                "result_valid": valid,
                "completed_samples_per_second": completed or target,
                "latency_ns": {"p99": p99_ms * 1e6},
                "settings": settings,
            }
        )
    )
    return str(path)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_next_reads_the_runs_so_far(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nxt = ["next", "--start", "176000", "--step", "0.04"]
    assert _run(nxt, capsys) == (0, "176000\n", "")
    # LoadGen's VALID with p99 over a bound given counts as INVALID: one step down.
    first = _result(tmp_path / "a.json", 176_000, True, 15.5)
    assert _run([*nxt, "--p99_ms", "15", first], capsys) == (0, "168960\n", "")
    # Without the bound LoadGen's verdict decides: one step up.
    assert _run([*nxt, first], capsys) == (0, "183040\n", "")
    second = _result(tmp_path / "b.json", 168_960, True, 9.0)
    third = _result(tmp_path / "c.json", 172_480, True, 11.0)
    assert _run([*nxt, "--p99_ms", "15", first, second, third], capsys) == (0, "", "")


def test_without_a_start_the_first_run_takes_its_own_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(["next", "--step", "0.1"], capsys) == (0, f"{OWN_RATE}\n", "")
    # The run set itself 2.5 queries/s (timed at start) and went INVALID: a step of 0.25 down.
    own = _result(tmp_path / "server_own.json", 2.5, False, 3000.0)
    assert _run(["next", "--step", "0.1", own], capsys) == (0, "2.250\n", "")


def test_start_is_the_share_of_a_raw_or_offline_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps({"engines": [{"samples_per_second": 21078.0}]}))
    offline = tmp_path / "offline.json"
    offline.write_text(json.dumps({"scenario": "Offline", "samples_per_second": 1.24}))
    assert _run(["start", "--share", "0.9", str(raw)], capsys) == (0, "18970.2\n", "")
    assert _run(["start", "--share", "0.9", str(offline)], capsys) == (0, "1.116\n", "")
    assert _run(["start", "--share", "0.9", str(tmp_path / "absent.json")], capsys) == (0, "", "")


def test_the_summary_names_the_best_valid_run_or_says_none_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [
        _result(tmp_path / "server_q18970.json", 18_970, False, 77.3),
        _result(tmp_path / "server_q17070.json", 17_070, True, 41.0, completed=17_065.2),
        _result(tmp_path / "server_q18020.json", 18_020, False, 64.0),
    ]
    code, out, _ = _run(["summary", "--label", "server", *runs], capsys)
    assert code == 0
    assert out == (
        "server search server: best VALID 17,065 samples/s at a target of 17,070 "
        "(server_q17070, p99 41.0 ms); 1 VALID of 3 runs (targets 18,970, 17,070, 18,020); "
        "lowest INVALID above it 18,020\n"
    )
    code, out, _ = _run(["summary", "--label", "server", runs[0]], capsys)
    assert out == "server search server: no VALID run of 1 run (targets 18,970 queries/s)\n"
    code, out, _ = _run(["attempt", "--label", "server", "--run", "2", runs[1]], capsys)
    assert out == "server search server: run 2 at 17,070 queries/s: VALID (p99 41.0 ms)\n"


def test_a_run_failed_on_early_stopping_alone_says_it_wants_more_queries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Llama2-70B's Interactive at 1.8 queries/s on one H200 (2026-11-30): both bounds met, TPOT's
    early stopping short of queries. A run failed on other checks too says nothing more."""
    path = Path(_result(tmp_path / "interactive_q1.800.json", 1.8, False, 36_554.3))
    record = json.loads(path.read_text())
    wants = (
        "TPOT early stopping: Would need to run at least 368 more queries, with the run being "
        "successful if every additional query were under latency."
    )
    record["invalid_reasons"] = [
        "Early stopping not satisfied", "TPOT early stopping: Run unsuccessful.",
        "TPOT early stopping: Processed 470 queries.", wants,
    ]  # fmt: skip
    path.write_text(json.dumps(record))
    assert early_stopping_alone(record) == wants
    code, out, _ = _run(["attempt", "--label", "interactive", "--run", "1", str(path)], capsys)
    assert code == 0 and out == (
        "server search interactive: run 1 at 1.8 queries/s: INVALID (p99 36,554.3 ms); on early "
        f"stopping alone, its bounds met: {wants}\n"
    )
    record["invalid_reasons"] = [
        "Performance constraints not satisfied",
        *record["invalid_reasons"],
    ]
    assert early_stopping_alone(record) is None
    early = {"result_valid": False, "invalid_reasons": [EARLY_STOPPING_UNMET]}
    assert early_stopping_alone(early) == EARLY_STOPPING_UNMET
    assert early_stopping_alone({"result_valid": True, "invalid_reasons": []}) is None


def test_the_table_groups_a_directory_by_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _result(tmp_path / "server_q1.080.json", 1.08, True, 9000.0)
    _result(tmp_path / "server_q1.188.json", 1.188, False, 25000.0)
    _result(tmp_path / "interactive_own.json", 0.5, False, 900.0, scenario="Interactive")
    _result(tmp_path / "offline.json", None, True, 1.0, scenario="Offline")
    (tmp_path / "engine.json").write_text("engine alone: a printed line\n{}\n")  # SDXL's
    code, out, _ = _run(["table", str(tmp_path)], capsys)
    assert code == 0
    assert out.splitlines() == [
        "server search interactive: no VALID run of 1 run (targets 0.5 queries/s)",
        "server search server: best VALID 1.08 samples/s at a target of 1.08 (server_q1.080, "
        "p99 9,000.0 ms); 1 VALID of 2 runs (targets 1.08, 1.19); lowest INVALID above it 1.19",
    ]


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    untargeted = _result(tmp_path / "x.json", None, True, 1.0)
    code, out, err = _run(["next", "--start", "100", untargeted], capsys)
    assert (code, out) == (2, "")
    assert err == f"server search: {untargeted} holds no server_target_qps in its settings\n"
    code, _, err = _run(["next", "--start", "0"], capsys)
    assert (code, err) == (2, "server search: the start must be above zero, not 0.0\n")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    code, _, err = _run(["attempt", "--label", "s", "--run", "1", str(broken)], capsys)
    assert code == 2 and err.startswith(f"server search: cannot read {broken}:")
