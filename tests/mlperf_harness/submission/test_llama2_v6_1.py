"""Llama2-70B through the one submission command for round v6.1: the stand-in's runs, its accuracy
run and the TEST06 audit (run and verified) in Offline and Interactive, staged as
llama2-70b-99.9 in v6.1's layout (results/<system>/<model>/<scenario>/, TEST06 beside the logs),
the summary in tokens per second, and the preflight check of that layout accepting the tree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mlperf_harness.cli.submission import main
from mlperf_harness.submission import audit_dirs
from mlperf_harness.submission.preflight import check_tree
from mlperf_harness.submission.rounds import get_round

# The stand-in's build (about a minute) and twelve runs of it: minutes, so CI's slow set.
pytestmark = pytest.mark.slow

MODEL = "llama2-70b-99.9"
# Server is left out to keep CI's time (the three took 33 minutes on a busy 2-core machine):
# Interactive is LoadGen's Server run under another model name, staged by the same code.
SCENARIOS = ("Offline", "Interactive")
SHORT = ["--min_duration_ms", "300", "--min_query_count", "4"]


@pytest.fixture(scope="module")
def submission(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("submission")
    # A Server rate for both models of mlperf.conf. Its sample_concatenate_permutation makes every
    # Server run (performance, accuracy, TEST06) 60 queries, one per stand-in question: 200 s
    # each at 0.3 queries/s. Short runs cannot be VALID anyway, so the rate is one at which the
    # queries arrive in a few seconds and the runs take as long as answering them.
    user_conf = out / "user.conf"
    user_conf.write_text(
        "llama2-70b.Server.target_qps = 20\nllama2-70b-interactive.Server.target_qps = 20\n"
    )
    code = main(
        [
            "--round", "v6.1",
            "--benchmarks", "llama2-70b",
            "--scenarios", ",".join(SCENARIOS),
            "--submitter", "Tester",
            "--system_type", "datacenter",
            "--out_dir", str(out),
            "--full_results_dir", str(out / "full_results"),
            "--scratch_path", str(tmp_path_factory.mktemp("scratch")),
            "--user_conf", str(user_conf),
            *SHORT,
        ]
    )  # fmt: skip
    assert code == 0
    return out


def test_llama2_stages_for_v6_1_with_test06_in_every_scenario(submission: Path) -> None:
    root = submission / "tree" / "closed" / "Tester"
    (system_file,) = (root / "systems").glob("*.json")
    system = system_file.stem
    assert json.loads(system_file.read_text())["system_type"] == "datacenter"
    v61 = get_round("v6.1")
    for scenario in SCENARIOS:
        results = root / "results" / system / MODEL / scenario
        accuracy_txt = (results / "accuracy" / "accuracy.txt").read_text()
        for metric in ("ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE"):
            pattern = re.compile(v61.accuracy_patterns[metric])
            assert any(pattern.match(line) for line in accuracy_txt.splitlines()), metric
        assert re.search(r"^hash=[0-9a-f]{64}$", accuracy_txt, re.MULTILINE)
        assert (results / "user.conf").is_file() and (results / "measurements.json").is_file()
        test06 = results / "TEST06"
        verdict = (test06 / "verify_accuracy.txt").read_text()
        assert audit_dirs.test06_passes(verdict)
        first_token = "Skipped" if scenario == "Offline" else "True"
        assert f"First token check pass: {first_token}" in verdict
    user_conf = (root / "results" / system / MODEL / "Interactive" / "user.conf").read_text()
    assert "llama2-70b-interactive.Server.target_qps" in user_conf
    summary = next(submission.glob("**/summary.csv")).read_text()
    assert "completed tokens/s" in summary and "tokens/s" in summary
    problems = check_tree(submission / "tree", full_logs=submission / "full_results")
    # Short CPU stand-in runs cannot meet durations, query counts, sample counts or the token
    # latency bounds; the stand-in's 60 answers are no 24,576 and its figures no official model's.
    inherent = {"validity", "latency_bound"}
    remaining = [p.line() for p in problems if not (p.short_run or p.kind.value in inherent)]
    target = re.compile(r".*/accuracy/accuracy.txt: (ROUGE1|ROUGE2|ROUGEL|TOKENS_PER_SAMPLE) ")
    assert all(target.match(line) for line in remaining), remaining
