"""What the failover soak checks of one finished run across Triton servers, from its logs alone:

- every sample LoadGen issued was completed exactly once: the accuracy log (every response logged,
  performance runs too: `*.*.accuracy_log_sampling_target` set far above the run's sample count)
  holds each LoadGen sequence id once, as many as LoadGen generated, and the servers' completed
  samples in result.json add up to the same number;
- each answer is the direct harness's for that sample (its AccuracyOnly log, qsl_idx -> data), and
  an AccuracyOnly run scores what the direct one scored;
- result.json records no loss where no server was ended, and a return after each loss whose server
  was ready again well before the run ended.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlperf_harness.loadgen.results import ACCURACY_FILE, DETAIL_FILE, read_detail_log
from mlperf_harness.triton.chaos import Outage, count_by_server

# Logs every response of a performance run (LoadGen's probability is this over the expected count).
LOG_EVERY_RESPONSE = "*.*.accuracy_log_sampling_target = 1000000000\n"
# A restart ready this close to the end of the run's process need not be recorded as a return: the
# prober (every 0.5 s, a reconnect within 1 s) stops with the SUT, and the process ends seconds
# after that (the logs are read and scored first).
RETURN_MARGIN_S = 5.0


@dataclass
class RunCheck:
    name: str
    seconds: float  # the run command's wall time
    record: dict[str, Any]
    samples: int  # issued by LoadGen
    logged: int  # responses in the accuracy log
    outages: list[Outage]
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def triton(self) -> dict[str, Any]:
        entry: dict[str, Any] = self.record.get("triton", {})
        return entry

    def losses(self) -> int:
        return sum(len(server["lost"]) for server in self.triton.get("servers", []))

    def returns(self) -> int:
        return sum(len(server["returned_at_s"]) for server in self.triton.get("servers", []))


def direct_answers(log_dir: Path) -> dict[int, str]:
    """The direct harness's AccuracyOnly log: qsl_idx -> the logged data (hex)."""
    return {entry["qsl_idx"]: entry["data"] for entry in _entries(log_dir)}


def _entries(log_dir: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads((log_dir / ACCURACY_FILE).read_text())
    return entries


def issued_samples(log_dir: Path) -> int:
    """The samples LoadGen generated for the run (its detail log)."""
    entries = read_detail_log(log_dir / DETAIL_FILE).entries
    return int(entries["generated_query_count"]) * int(entries["generated_samples_per_query"])


def check_run(
    name: str,
    log_dir: Path,
    returncode: int,
    seconds: float,
    outages: Sequence[Outage],
    direct: Mapping[int, str],
    direct_accuracy: dict[str, Any] | None,
    ended_at_s: float,
) -> RunCheck:
    """`ended_at_s`: when the run ended on the outages' clock."""
    result = log_dir / "result.json"
    if returncode != 0 or not result.is_file():
        check = RunCheck(name, seconds, {}, 0, 0, list(outages))
        check.problems.append(f"the run failed (exit {returncode}): see {log_dir}")
        return check
    record: dict[str, Any] = json.loads(result.read_text())
    entries = _entries(log_dir)
    check = RunCheck(name, seconds, record, issued_samples(log_dir), len(entries), list(outages))
    problems = check.problems
    sequence = [entry["seq_id"] for entry in entries]
    if len(set(sequence)) != len(sequence):
        problems.append(f"{len(sequence) - len(set(sequence))} responses logged twice")
    if len(entries) != check.samples:
        problems.append(f"{len(entries)} responses logged of {check.samples} samples issued")
    completed = sum(server["completed_samples"] for server in check.triton.get("servers", []))
    if completed != check.samples:
        problems.append(f"the servers completed {completed} samples of {check.samples}")
    wrong = [entry["qsl_idx"] for entry in entries if direct.get(entry["qsl_idx"]) != entry["data"]]
    if wrong:
        problems.append(
            f"{len(wrong)} answers differ from the direct harness's (first qsl_idx {wrong[0]})"
        )
    if direct_accuracy is not None and record.get("accuracy") != direct_accuracy:
        problems.append(f"accuracy {record.get('accuracy')} is not the direct run's")
    problems.extend(_recorded_outages(check.triton, outages, ended_at_s))
    return check


def _recorded_outages(
    triton: dict[str, Any], outages: Sequence[Outage], ended_at_s: float
) -> list[str]:
    """A loss for no outage is a server wrongly given up (a deadline too short); an outage with no
    loss is possible (the server held no batch when it went down and was back before the next one
    was sent to it). Every loss whose restart was ready in time must be followed by a return."""
    problems = []
    ended = count_by_server(outages)
    late = count_by_server(
        [o for o in outages if o.back_at_s is None or o.back_at_s >= ended_at_s - RETURN_MARGIN_S]
    )
    for server in triton.get("servers", []):
        address = server["address"]
        losses, returns = len(server["lost"]), len(server["returned_at_s"])
        if losses > ended.get(address, 0):
            problems.append(
                f"{address}: {losses} losses recorded for {ended.get(address, 0)} outages"
            )
        if not losses - late.get(address, 0) <= returns <= losses:
            problems.append(f"{address}: {returns} returns recorded after {losses} losses")
    return problems
