"""A LoadGen log cut off mid-run is an error that names it, never a finished run.

The disk that fills during a run is played by a limit on file size (RLIMIT_FSIZE, no root needed):
LoadGen's log writes past it fail as silently as on a full disk, while the harness's small files
still fit, which is how a full disk looked in the report (summary VALID, detail log cut off,
`result: n/a`, exit 0). The parser's side is also checked on real logs cut at each place.
"""

from __future__ import annotations

import resource
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability_support import Harness

from mlperf_harness.benchmarks.harness_overhead import main as overhead_main
from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK as OVERHEAD_BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import parse_logs

# Child processes run it as a module; the import also makes Pants ship it with the test.
OVERHEAD = overhead_main.__name__
# A 300 ms query at 1,000 samples/s: harness_overhead's config sizes its Offline query by a count
# (10 million samples, seconds of CPU each run) unless min_query_count says otherwise.
SHORT = (
    "--scenario", "Offline", "--min_duration_ms", "300", "--offline_expected_qps", "1000",
    "--min_query_count", "1",
)  # fmt: skip


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize(
    ("mode", "limit", "cut"),
    [
        ("PerformanceOnly", 20_000, "mlperf_log_detail.txt"),  # the detail log runs to ~30 kB
        ("AccuracyOnly", 40_000, "mlperf_log_accuracy.json"),  # 1024 responses: ~50 kB
    ],
)
def test_a_log_cut_off_by_a_full_disk_is_an_error(
    mode: str, limit: int, cut: str, harness: Harness, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    command = harness.command("--log_dir", logs, "--test_mode", mode, *SHORT, module=OVERHEAD)
    done = harness.run(command, preexec_fn=_file_size_limit(limit))
    line = done.error_line("harness_overhead")
    assert f"{logs / cut} is incomplete" in line, done.stderr
    assert not (logs / "result.json").exists()
    assert "VALID" not in done.stdout


@pytest.fixture(scope="module")
def complete_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = tmp_path_factory.mktemp("complete")
    assert run_benchmark_cli(OVERHEAD_BENCHMARK, ["--log_dir", str(logs), *SHORT]) == 0
    return logs


def _copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "logs"
    shutil.copytree(source, target)
    return target


def test_complete_logs_parse(complete_logs: Path) -> None:
    assert parse_logs(complete_logs).valid is not None


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.995])
def test_a_detail_log_cut_anywhere_is_refused(
    keep: float, complete_logs: Path, tmp_path: Path
) -> None:
    logs = _copy(complete_logs, tmp_path)
    detail = logs / "mlperf_log_detail.txt"
    data = detail.read_bytes()
    detail.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(HarnessError, match=r"mlperf_log_detail\.txt is incomplete"):
        parse_logs(logs)


def test_a_detail_log_cut_at_a_line_end_is_refused(complete_logs: Path, tmp_path: Path) -> None:
    logs = _copy(complete_logs, tmp_path)
    detail = logs / "mlperf_log_detail.txt"
    lines = detail.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"result_validity"' in line)
    detail.write_text("".join(lines[: cut + 1]))  # the verdict is there, the rest is not
    with pytest.raises(HarnessError, match="lacks"):
        parse_logs(logs)


def test_an_empty_summary_is_refused(complete_logs: Path, tmp_path: Path) -> None:
    logs = _copy(complete_logs, tmp_path)
    (logs / "mlperf_log_summary.txt").write_text("")
    with pytest.raises(HarnessError, match=r"mlperf_log_summary\.txt is missing or incomplete"):
        parse_logs(logs)
