"""The submission page: a summary of every (system, model, scenario), the systems, then each
scenario's performance run (the run page's sections), accuracy and audits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlperf_harness.report.html import Markup, page, table, tag, verdict
from mlperf_harness.report.run_page import generated, headline, plain, run_body, run_verdict, within
from mlperf_harness.report.rundata import RunData


@dataclass(frozen=True)
class ScenarioEntry:
    """One (system, model, scenario) of a submission: its runs and what else is known of it."""

    system: str
    model: str
    scenario: str
    performance: RunData | None
    accuracy: RunData | None = None
    audits: Mapping[str, str] = field(default_factory=dict)  # "TEST01" -> "PASS" / "FAIL" / note
    notes: Sequence[str] = ()


def submission_page(
    title: str,
    entries: Sequence[ScenarioEntry],
    systems: Mapping[str, Mapping[str, Any]],
    notes: Iterable[str] = (),
) -> str:
    body: list[Markup] = [tag("h1", title), generated()]
    body.extend(tag("p", note, class_="note") for note in notes)
    body.append(tag("h2", "Summary"))
    rows = []
    for i, entry in enumerate(entries):
        run = entry.performance
        metric = run.metric() if run is not None else None
        anchor = tag("a", f"{entry.model} {entry.scenario}", href=f"#entry-{i}")
        rows.append(
            (
                entry.system,
                anchor,
                run_verdict(run) if run is not None else verdict("no performance run", False),
                metric.value if metric else "",
                within(metric.bound, metric.within) if metric else "",
                entry.accuracy.accuracy_line
                if entry.accuracy and entry.accuracy.accuracy_line
                else "",
                Markup(" ".join(_audit(test, outcome) for test, outcome in entry.audits.items())),
            )
        )
    body.append(
        table(
            ["system", "model / scenario", "result", "metric", "bound", "accuracy", "audits"], rows
        )
    )
    if systems:
        body.append(tag("h2", "Systems"))
        for name, description in systems.items():
            body.append(tag("h3", name))
            body.append(table(["field", "value"], [(k, plain(v)) for k, v in description.items()]))
    for i, entry in enumerate(entries):
        body.append(
            tag("h2", f"{entry.system} / {entry.model} / {entry.scenario}", id=f"entry-{i}")
        )
        body.extend(tag("p", note, class_="note") for note in entry.notes)
        if entry.audits:
            body.append(
                table(["audit", "verdict"], [(t, _audit(t, o)) for t, o in entry.audits.items()])
            )
        if entry.performance is not None:
            body.extend(run_body(entry.performance, "h3")[1:])
        if entry.accuracy is not None:
            body.append(tag("h3", "Accuracy run"))
            body.extend(headline(entry.accuracy))
    return page(title, body)


def _audit(test: str, outcome: str) -> Markup:
    good = True if outcome == "PASS" else (False if outcome == "FAIL" else None)
    return verdict(f"{test} {outcome}", good)
