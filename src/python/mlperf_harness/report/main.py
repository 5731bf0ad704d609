"""`./pants run :report -- PATH [--out FILE]`: a run directory gets a run page; a staged submission
tree, or a directory of run directories, gets a submission page."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.errors import HarnessError
from mlperf_harness.report.rundata import is_run_dir
from mlperf_harness.report.write import write_run_report, write_submission_report

RUN_REPORT = "report.html"


def default_out(path: Path) -> Path:
    """Beside a run's logs; beside (never inside) a tree, which the checker wants as it is."""
    if is_run_dir(path):
        return path / RUN_REPORT
    resolved = path.resolve()
    return resolved.parent / f"{resolved.name}_report.html"


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="report", description=__doc__)
    parser.add_argument("path", type=Path, help="a run log directory, a staged tree, or runs")
    parser.add_argument("--out", type=Path, help="the HTML file (default: see above)")
    parser.add_argument(
        "--submission",
        action="store_true",
        help="a submission page even for a single run directory",
    )

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        path: Path = args.path
        if not path.is_dir():
            raise HarnessError(f"no such directory: {path}")
        out = args.out or default_out(path)
        if is_run_dir(path) and not args.submission:
            written = write_run_report(path, out)
        else:
            written = write_submission_report(path, out)
        print(f"report: {written}")
        return 0

    return run_entry_point("report", run)


if __name__ == "__main__":
    sys.exit(main())
