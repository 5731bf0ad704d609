"""GPT-J through the one submission command for its last round, v5.0 (the two test files
test_gptj_99_v5_0.py and test_gptj_99_9_v5_0.py, one submission each so that CI runs them side by
side): the stand-in's runs, its accuracy run and the TEST06 audit (run and verified), staged in
v5.0's layout (measurements/, compliance/<system>/<model>/<scenario>/TEST06/), and the preflight
check of that layout accepting the tree."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mlperf_harness.cli.submission import main
from mlperf_harness.submission import audit_dirs
from mlperf_harness.submission.preflight import check_tree
from mlperf_harness.submission.rounds import get_round

SHORT = ["--min_duration_ms", "300", "--min_query_count", "8"]


def stage(
    model: str, system_type: str, scenarios: tuple[str, ...], flags: tuple[str, ...], scratch: Path,
    out: Path,
) -> None:  # fmt: skip
    """The submission command for `model`'s `scenarios` into `out`."""
    code = main(
        [
            "--round", "v5.0",
            "--benchmarks", "gptj",
            "--scenarios", ",".join(scenarios),
            "--submitter", "Tester",
            "--system_type", system_type,
            "--out_dir", str(out),
            "--full_results_dir", str(out / "full_results"),
            "--scratch_path", str(scratch),
            *flags,
            *SHORT,
        ]
    )  # fmt: skip
    assert code == 0


def check_staged(model: str, system_type: str, scenarios: tuple[str, ...], out: Path) -> None:
    root = out / "tree" / "closed" / "Tester"
    (system_file,) = (root / "systems").glob("*.json")
    system = system_file.stem
    assert json.loads(system_file.read_text())["system_type"] == system_type
    assert (root / "code" / "README.md").is_file() and not (root / "src").exists()
    v50 = get_round("v5.0")
    for scenario in scenarios:
        results = root / "results" / system / model / scenario
        assert sorted(p.name for p in results.iterdir()) == ["accuracy", "performance"]
        # The line the v5.0 tag's checker reads (figures unquoted), and the current one too.
        accuracy_txt = (results / "accuracy" / "accuracy.txt").read_text()
        for metric in ("ROUGE1", "ROUGE2", "ROUGEL", "GEN_LEN"):
            pattern = re.compile(v50.accuracy_patterns[metric])
            assert any(pattern.match(line) for line in accuracy_txt.splitlines()), metric
        assert re.search(r"^hash=[0-9a-f]{64}$", accuracy_txt, re.MULTILINE)
        measurements = root / "measurements" / system / model / scenario
        assert (measurements / "user.conf").is_file() and (measurements / "README.md").is_file()
        assert (measurements / f"{system}_mlperf_harness_{scenario}.json").is_file()
        # TEST06: its three checks and the audit run's accuracy log; no performance part.
        test06 = root / "compliance" / system / model / scenario / "TEST06"
        assert sorted(p.name for p in test06.iterdir()) == ["accuracy", "verify_accuracy.txt"]
        verdict = (test06 / "verify_accuracy.txt").read_text()
        assert audit_dirs.test06_passes(verdict)  # (imported by module: pytest collects test*)
        first_token = "Skipped" if scenario == "Offline" else "True"
        assert f"First token check pass: {first_token}" in verdict
        assert (test06 / "accuracy" / "mlperf_log_accuracy.json").is_file()
    problems = check_tree(out / "tree", full_logs=out / "full_results", round_name="v5.0")
    # Short CPU stand-in runs cannot meet durations, query counts, sample counts or latency bounds;
    # the stand-in's summaries of its 60 generated articles are far shorter than GPT-J's 13,368
    # (GEN_LEN is the sum of the summaries' characters); nothing else.
    gen_len = re.compile(
        rf".*/accuracy/accuracy.txt: GEN_LEN \d+ is below {re.escape(model)}'s target 3615190\.200"
    )
    inherent = {"validity", "latency_bound"}
    remaining = [p.line() for p in problems if not (p.short_run or p.kind.value in inherent)]
    assert len(remaining) == len(scenarios), remaining
    assert all(gen_len.match(line) for line in remaining), remaining
