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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MS = 1e6  # ns per ms
OFFLINE_GOAL = 0.90
SERVER_GOAL = 0.85
TWO_SERVERS_GOAL = 1.8
_NAME = re.compile(r"^(direct|triton)_(offline|server)(_host)?_([gs])(\d+)(?:_q(\d+))?$")


def _rate(run: dict[str, Any]) -> float:
    value = run.get("samples_per_second") or run.get("completed_samples_per_second") or 0.0
    return float(value)


def _verdict(run: dict[str, Any]) -> str:
    return {True: "VALID", False: "INVALID", None: "-"}[run.get("result_valid")]


def _losses(run: dict[str, Any]) -> str:
    triton = run.get("triton")
    if not triton:
        return ""
    return f"lost {triton['lost_servers']}, re-sent {triton['resent_samples']}"


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
        rate = _rate(run)
        parts = []
        if scenario == "offline":
            direct = runs.get(f"direct_offline_g{count}")
            if direct and _rate(direct):
                goal = f" (goal {OFFLINE_GOAL:.0%})" if count == 1 else ""
                parts.append(f"{rate / _rate(direct):.1%} of direct on {count} GPU(s){goal}")
            host = runs.get("direct_offline_host_g1") if count == 1 else None
            if host and _rate(host):
                parts.append(f"{rate / _rate(host):.1%} of direct from host memory")
            one = runs.get("triton_offline_s1") if count > 1 else None
            if one and _rate(one):
                goal = f" (goal {TWO_SERVERS_GOAL}x)" if count == 2 else ""
                parts.append(f"{rate / _rate(one):.2f}x one server{goal}")
        else:
            direct = runs.get(f"direct_server_g{count}_q{qps}") or next(
                (r for n, r in runs.items() if n.startswith(f"direct_server_g{count}_")), None
            )
            if direct and _rate(direct):
                parts.append(
                    f"{rate / _rate(direct):.1%} of direct Server "
                    f"({_verdict(direct)} at {direct.get('scheduled_samples_per_second') or 0:,.0f}; "
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
        verdict = (
            "each sample once, = direct" if not run["problems"] else "; ".join(run["problems"])
        )
        lines.append(
            f"  {run['name']:<13}{run['samples']:>9} samples, outages: {outages}; losses "
            f"{run['losses']}, re-sent {run['resent_samples']}: {verdict}"
        )
    return lines


def format_table(directory: Path) -> str:
    runs = load(directory)
    notes = comparisons(runs)
    lines = [f"{'run':<30}{'samples/s':>12}{'p99 ms':>10}  {'valid':<8}{'':<24}against"]
    for name, run in runs.items():
        p99 = run.get("latency_ns", {}).get("p99", 0) / MS
        lines.append(
            f"{name:<30}{_rate(run):>12,.0f}{p99:>10.2f}  {_verdict(run):<8}{_losses(run):<24}"
            f"{notes.get(name, '')}"
        )
    return "\n".join([*lines, *soak_lines(directory)])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: device_table <directory of result JSON files>", file=sys.stderr)
        return 2
    print(format_table(Path(args[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
