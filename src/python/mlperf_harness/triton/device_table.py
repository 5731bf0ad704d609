"""The table benchmarks/resnet50/device/triton.sh ends with: the Triton harness against the direct
harness, both measured in the same call on the same machine (the ratio is the figure), beside the
issue's goals: Triton Offline at least 90% of the direct harness's on one GPU, Server at least
85%, two servers (one per GPU) at least 1.8x one; and the failover soak's verdict.

Runs are result.json files named by the script: `direct_offline_g<n>` (n GPUs, samples in GPU
memory), `direct_offline_host_g1` (from host memory, as the Triton client's samples travel),
`triton_offline_s<n>` (n servers, one per GPU), `direct_server_g<n>_q<qps>`,
`triton_server_s<n>_q<qps>`; `failover_soak.json` is the soak's summary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.result_table import MS, rate, table_main, verdict

OFFLINE_GOAL = 0.90
SERVER_GOAL = 0.85
TWO_SERVERS_GOAL = 1.8
_NAME = re.compile(r"^(direct|triton)_(offline|server)(_host)?_([gs])(\d+)(?:_q(\d+))?$")


def _triton_note(run: dict[str, Any]) -> str:
    """How the samples reached the servers, and what was lost."""
    triton = run.get("triton")
    if not triton:
        return ""
    samples = triton.get("samples", "wire")
    return f"{samples}, lost {triton['lost_servers']}, re-sent {triton['resent_samples']}"


def load(directory: Path) -> dict[str, dict[str, Any]]:
    return {
        path.stem: json.loads(path.read_text())
        for path in sorted(directory.glob("*.json"))
        if _NAME.match(path.stem)
    }


def comparisons(runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each Triton run's figure against its direct counterpart (and n servers against one)."""
    notes: dict[str, str] = {}
    for name, run in runs.items():
        found = _NAME.match(name)
        if found is None or found.group(1) != "triton":
            continue
        scenario, count, qps = found.group(2), int(found.group(5)), found.group(6)
        figure = rate(run)
        parts = []
        if scenario == "offline":
            direct = runs.get(f"direct_offline_g{count}")
            if direct and rate(direct):
                goal = f" (goal {OFFLINE_GOAL:.0%})" if count == 1 else ""
                parts.append(f"{figure / rate(direct):.1%} of direct on {count} GPU(s){goal}")
            host = runs.get("direct_offline_host_g1") if count == 1 else None
            if host and rate(host):
                parts.append(f"{figure / rate(host):.1%} of direct from host memory")
            one = runs.get("triton_offline_s1") if count > 1 else None
            if one and rate(one):
                goal = f" (goal {TWO_SERVERS_GOAL}x)" if count == 2 else ""
                parts.append(f"{figure / rate(one):.2f}x one server{goal}")
        else:
            direct = runs.get(f"direct_server_g{count}_q{qps}") or next(
                (r for n, r in runs.items() if n.startswith(f"direct_server_g{count}_")), None
            )
            if direct and rate(direct):
                parts.append(
                    f"{figure / rate(direct):.1%} of direct Server "
                    f"({verdict(direct)} at {direct.get('scheduled_samples_per_second') or 0:,.0f}; "
                    f"goal {SERVER_GOAL:.0%}, VALID)"
                )
        notes[name] = "; ".join(parts)
    return notes


def soak_lines(directory: Path) -> list[str]:
    path = directory / "failover_soak.json"
    if not path.is_file():
        return []
    soak = json.loads(path.read_text())
    lines = [f"failover soak: {soak['servers']} servers, batch {soak['batch_size']}"]
    for run in soak["runs"]:
        outages = ", ".join(f"{o['how']} at {o['at_s']} s" for o in run["outages"]) or "none"
        outcome = (
            "each sample once, = direct" if not run["problems"] else "; ".join(run["problems"])
        )
        lines.append(
            f"  {run['name']:<13}{run['samples']:>9} samples, outages: {outages}; losses "
            f"{run['losses']}, re-sent {run['resent_samples']}: {outcome}"
        )
    return lines


def format_table(directory: Path) -> str:
    runs = load(directory)
    notes = comparisons(runs)
    lines = [f"{'run':<30}{'samples/s':>12}{'p99 ms':>10}  {'valid':<8}{'':<32}against"]
    for name, run in runs.items():
        p99 = run.get("latency_ns", {}).get("p99", 0) / MS
        lines.append(
            f"{name:<30}{rate(run):>12,.0f}{p99:>10.2f}  {verdict(run):<8}{_triton_note(run):<32}"
            f"{notes.get(name, '')}"
        )
    return "\n".join([*lines, *soak_lines(directory)])


def main(argv: Sequence[str] | None = None) -> int:
    return table_main("device_table", format_table, argv)


if __name__ == "__main__":
    raise SystemExit(main())
