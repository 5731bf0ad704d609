"""Accuracy-log truncation as MLCommons' truncate_accuracy_log.py does it, on a real LoadGen
accuracy log (null backend): the exact cut, the hash of the whole log, the whole log kept outside
the tree, a second run that changes nothing, and one-line errors for trees it cannot finish."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.truncate import accuracy_dirs, truncate_accuracy_logs

LOG = "mlperf_log_accuracy.json"
SCENARIO = Path("closed/Org/results/sys1/resnet50/Offline")
OPEN_SCENARIO = Path("open/Org/results/sys1/resnet50/SingleStream")
SMALL_LOG = (
    '[\n{ "seq_id" : 0, "qsl_idx" : 12, "data" : "07000000" },\n'
    '{ "seq_id" : 1, "qsl_idx" : 3, "data" : "01000000" }\n]\n'
)


@pytest.fixture(scope="module")
def real_log(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """An accuracy run's whole log: 1024 responses, about 50 KB."""
    log_dir = tmp_path_factory.mktemp("accuracy_run")
    argv = ["--scenario", "Offline", "--test_mode", "AccuracyOnly", "--log_dir", str(log_dir)]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    data = (log_dir / LOG).read_bytes()
    assert len(data) > 8192
    return data


def _tree(root: Path, real_log: bytes) -> Path:
    """A staged tree: a closed scenario with TEST01 (a short audit log) and TEST04, an open one."""
    files = {
        SCENARIO / "accuracy" / LOG: real_log,
        SCENARIO / "accuracy/accuracy.txt": b"accuracy=76.000%, good=38, total=50\n",
        SCENARIO / "TEST01/accuracy" / LOG: SMALL_LOG.encode(),
        SCENARIO / "TEST01/accuracy/accuracy.txt": b"accuracy=50.000%\n",
        SCENARIO / "TEST01/verify_accuracy.txt": b"TEST PASS\n",
        SCENARIO / "TEST04/performance/run_1/mlperf_log_summary.txt": b"summary\n",
        SCENARIO / "performance/run_1/mlperf_log_summary.txt": b"summary\n",
        OPEN_SCENARIO / "accuracy" / LOG: real_log,
        OPEN_SCENARIO / "accuracy/accuracy.txt": b"accuracy=76.000%",  # no final newline
        Path("closed/Org/systems/sys1.json"): b"{}\n",
    }
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    return root


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_logs_are_cut_exactly_hashed_whole_and_kept(tmp_path: Path, real_log: bytes) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    full = tmp_path / "full"
    changed = truncate_accuracy_logs(tree, full)
    assert changed == [
        tree / SCENARIO / "accuracy" / LOG,
        tree / SCENARIO / "TEST01/accuracy" / LOG,
        tree / OPEN_SCENARIO / "accuracy" / LOG,  # open division too, as MLCommons does
    ]
    digest = hashlib.sha256(real_log).hexdigest()
    cut = real_log[:4096] + b"\n\n...\n\n" + real_log[-4096:]
    for scenario, before in (
        (SCENARIO, "accuracy=76.000%, good=38, total=50\n"),
        (OPEN_SCENARIO, "accuracy=76.000%"),
    ):
        assert (tree / scenario / "accuracy" / LOG).read_bytes() == cut
        # MLCommons appends "\nhash=...\n" whatever accuracy.txt ended with.
        assert (
            tree / scenario / "accuracy/accuracy.txt"
        ).read_text() == f"{before}\nhash={digest}\n"
        assert (full / scenario / "accuracy" / LOG).read_bytes() == real_log
    # A log under 4096 bytes stays whole; it is hashed and kept all the same.
    small = SCENARIO / "TEST01/accuracy"
    assert (tree / small / LOG).read_text() == SMALL_LOG
    small_digest = hashlib.sha256(SMALL_LOG.encode()).hexdigest()
    assert (
        tree / small / "accuracy.txt"
    ).read_text() == f"accuracy=50.000%\n\nhash={small_digest}\n"
    assert (full / small / LOG).read_text() == SMALL_LOG
    # Nothing else is touched or copied.
    assert sorted(str(p.relative_to(full)) for p in full.rglob("*") if p.is_file()) == sorted(
        str(path.relative_to(tree)) for path in changed
    )
    assert (
        tree / SCENARIO / "TEST04/performance/run_1/mlperf_log_summary.txt"
    ).read_text() == "summary\n"


def test_a_second_run_changes_nothing(tmp_path: Path, real_log: bytes) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    full = tmp_path / "full"
    truncate_accuracy_logs(tree, full)
    before, kept = _snapshot(tree), _snapshot(full)
    assert truncate_accuracy_logs(tree, full) == []
    assert _snapshot(tree) == before
    assert _snapshot(full) == kept


@pytest.mark.parametrize(("size", "cut"), [(4095, False), (4096, True)])
def test_logs_of_4096_bytes_or_more_are_cut(
    tmp_path: Path, real_log: bytes, size: int, cut: bool
) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    log = tree / SCENARIO / "accuracy" / LOG
    log.write_bytes(real_log[:size])
    truncate_accuracy_logs(tree, tmp_path / "full")
    expected = (
        real_log[:size] + b"\n\n...\n\n" + real_log[:size][-4096:] if cut else real_log[:size]
    )
    assert log.read_bytes() == expected


def test_an_interrupted_run_is_finished_without_hashing_twice(
    tmp_path: Path, real_log: bytes
) -> None:
    # Interrupted after accuracy.txt got its hash, before the log was cut.
    tree = _tree(tmp_path / "tree", real_log)
    digest = hashlib.sha256(real_log).hexdigest()
    accuracy_txt = tree / SCENARIO / "accuracy/accuracy.txt"
    accuracy_txt.write_text(accuracy_txt.read_text() + f"\nhash={digest}\n")
    hashed = accuracy_txt.read_text()
    truncate_accuracy_logs(tree, tmp_path / "full")
    assert accuracy_txt.read_text() == hashed
    assert len((tree / SCENARIO / "accuracy" / LOG).read_bytes()) == 2 * 4096 + 7
    assert (tmp_path / "full" / SCENARIO / "accuracy" / LOG).read_bytes() == real_log


def test_a_truncated_log_without_its_hash_is_refused(tmp_path: Path, real_log: bytes) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    (tree / SCENARIO / "accuracy" / LOG).write_bytes(
        real_log[:4096] + b"\n\n...\n\n" + real_log[-4096:]
    )
    before = _snapshot(tree)
    with pytest.raises(HarnessError, match=r"is truncated but .* has no hash= line"):
        truncate_accuracy_logs(tree, tmp_path / "full")
    assert _snapshot(tree) == before  # the whole tree is checked before anything changes
    assert not (tmp_path / "full").exists()


def test_a_log_that_changed_after_hashing_is_refused(tmp_path: Path, real_log: bytes) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    accuracy_txt = tree / OPEN_SCENARIO / "accuracy/accuracy.txt"
    accuracy_txt.write_text(f"accuracy=76.000%\nhash={'0' * 64}\n")
    with pytest.raises(HarnessError, match="the log changed after it was hashed"):
        truncate_accuracy_logs(tree, tmp_path / "full")


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        (SCENARIO / "accuracy/accuracy.txt", "accuracy.txt is missing"),
        (SCENARIO / "TEST01/accuracy" / LOG, "mlperf_log_accuracy.json is missing"),
        (OPEN_SCENARIO / "accuracy", "mlperf_log_accuracy.json is missing"),
        (Path("closed/Org/results"), "has no results/ directory"),
    ],
)
def test_a_bad_tree_is_one_line_and_changes_nothing(
    tmp_path: Path, real_log: bytes, remove: Path, message: str
) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    target = tree / remove
    if target.is_dir():
        for path in sorted(target.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        target.rmdir()
    else:
        target.unlink()
    before = _snapshot(tree)
    with pytest.raises(HarnessError, match=message) as raised:
        truncate_accuracy_logs(tree, tmp_path / "full")
    assert "\n" not in str(raised.value)
    assert _snapshot(tree) == before


def test_not_a_tree(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="no submission tree"):
        truncate_accuracy_logs(tmp_path / "missing", tmp_path / "full")
    (tmp_path / "empty").mkdir()
    with pytest.raises(HarnessError, match="holds none of closed, open, network"):
        truncate_accuracy_logs(tmp_path / "empty", tmp_path / "full")


def test_full_logs_stay_outside_the_tree(tmp_path: Path, real_log: bytes) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    with pytest.raises(HarnessError, match="outside the tree"):
        truncate_accuracy_logs(tree, tree / "full")


def test_accuracy_dirs_are_the_scenarios_and_their_test01(tmp_path: Path, real_log: bytes) -> None:
    tree = _tree(tmp_path / "tree", real_log)
    (tree / SCENARIO.parent / ".staging").mkdir()  # hidden directories are not the tree's
    assert accuracy_dirs(tree) == [
        tree / SCENARIO / "accuracy",
        tree / SCENARIO / "TEST01/accuracy",
        tree / OPEN_SCENARIO / "accuracy",
    ]
