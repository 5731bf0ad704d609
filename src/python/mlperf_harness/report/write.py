"""Write the report pages (atomically: a reader never sees half of one)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.report.run_page import run_page
from mlperf_harness.report.rundata import read_run
from mlperf_harness.report.submission_page import submission_page
from mlperf_harness.report.tree import find


def write_run_report(run_dir: Path, out_html: Path) -> Path:
    """One run's page: its verdict and metric, latency distribution, timeline and settings."""
    write_text_atomic(out_html, run_page(read_run(run_dir)))
    return out_html


def write_submission_report(
    run_dirs_or_tree: Path | Sequence[Path], out_html: Path, title: str | None = None
) -> Path:
    """One page over a staged tree (results/<system>/<model>/<scenario>/ and systems/*.json) or
    run log directories (or directories holding them): a summary table, the systems, then each
    scenario's performance run, accuracy and audits."""
    sources = [run_dirs_or_tree] if isinstance(run_dirs_or_tree, Path) else list(run_dirs_or_tree)
    found = find(sources)
    name = title or "MLPerf Inference submission report: " + ", ".join(s.name for s in sources)
    write_text_atomic(out_html, submission_page(name, found.entries, found.systems))
    return out_html
