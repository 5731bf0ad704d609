"""Self-contained HTML reports of runs and submissions (figures drawn with matplotlib, inline).

`write_run_report(run_dir, out_html)`: one run's page. `write_submission_report(sources, out_html)`:
one page over a staged submission tree or a set of run directories. `./pants run :report -- PATH`.
"""

from mlperf_harness.report.write import write_run_report, write_submission_report

__all__ = ["write_run_report", "write_submission_report"]
