"""The table benchmarks/resnet50/device/scaling.sh ends with: Offline and Server on 1..N GPUs of one
host, each against one GPU measured in the same call (the scaling ratio), Server against Offline
at the same size, and the issue's goals beside them (1.95x on two GPUs, 7.6x on eight; Server at
least 90% of Offline with p99 <= 15 ms).

Reads the result.json copies the script keeps as <dir>/offline_gpus<N>.json and, for each Server
target its search ran at a size, <dir>/server_gpus<N>_q<target>.json (server_gpus<N>.json: one
Server run, as the script kept them before the search). Server's row is the size's best VALID run
(LoadGen's verdict and p99 <= 15 ms): its completed rate and p99, and the search beside it (VALID
runs of all, the lowest INVALID target above the best). `python -m
mlperf_harness.benchmarks.scaling_table <dir>`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.server_search import server_target
from mlperf_harness.benchmarks.server_search import server_valid as search_valid

GOALS = {2: 1.95, 8: 7.6}  # Offline, against one GPU (issue 17)
SERVER_SHARE_GOAL = 0.90  # Server's completed rate against Offline's at the same size
SERVER_P99_NS = 15_000_000
NVIDIA_8XH200 = {"Offline": 756_960, "Server": 632_229}  # published v4.1, for the 8-GPU row


def _runs(directory: Path, scenario: str) -> dict[int, list[dict[str, Any]]]:
    """Each size's runs of `scenario`: <scenario>_gpus<N>.json and <scenario>_gpus<N>_q<rate>.json."""
    runs: dict[int, list[dict[str, Any]]] = {}
    for path in sorted(directory.glob(f"{scenario}_gpus*.json")):
        match = re.fullmatch(rf"{scenario}_gpus(\d+)(?:_q\d+(?:\.\d+)?)?", path.stem)
        if match:
            runs.setdefault(int(match.group(1)), []).append(json.loads(path.read_text()))
    return runs


def server_valid(run: dict[str, Any]) -> bool:
    """VALID as the goal counts it: LoadGen's verdict and p99 within Server's 15 ms bound."""
    return search_valid(run, SERVER_P99_NS)


def best_server(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The VALID run (p99 within the bound) with the highest completed rate, else {}."""
    valid = [run for run in runs if server_valid(run)]
    return max(valid, key=lambda run: run.get("completed_samples_per_second") or 0.0, default={})


def _search(runs: list[dict[str, Any]], best: dict[str, Any]) -> str:
    """'<VALID>/<runs>' and the lowest INVALID target above the best VALID one's."""
    valid = sum(server_valid(run) for run in runs)
    floor = server_target(best) if best else 0.0
    above = [
        target
        for run in runs
        if not server_valid(run)
        and (target := server_target(run)) is not None
        and target > (floor or 0)
    ]
    return f"{valid}/{len(runs)}" + (f" <{min(above):,.0f}" if above else "")


def table(directory: Path) -> str:
    offline, server = _runs(directory, "offline"), _runs(directory, "server")
    sizes = sorted(set(offline) | set(server))
    if not sizes:
        return f"no offline_gpus<N>.json or server_gpus<N>[_q<rate>].json under {directory}"
    best = {n: best_server(runs) for n, runs in server.items()}
    one_offline = (offline.get(1) or [{}])[-1].get("samples_per_second")
    one_server = best.get(1, {}).get("completed_samples_per_second")
    lines = [
        f"{'GPUs':>4} {'Offline/s':>11} {'x 1 GPU':>8} {'goal':>6} {'Server/s':>10} "
        f"{'x 1 GPU':>8} {'p99 ms':>7} {'of Offline':>11} {'Offline':>8} "
        f"{'Server VALID/runs <INVALID':>27}"
    ]
    for n in sizes:
        off = (offline.get(n) or [{}])[-1]
        srv = best.get(n, {})
        off_rate = off.get("samples_per_second")
        srv_rate = srv.get("completed_samples_per_second")
        p99 = srv.get("latency_ns", {}).get("p99")
        search = _search(server[n], srv) if n in server else "-"
        lines.append(
            f"{n:>4} {_num(off_rate):>11} {_ratio(off_rate, one_offline):>8} "
            f"{(f'{GOALS[n]}x' if n in GOALS else ''):>6} {_num(srv_rate):>10} "
            f"{_ratio(srv_rate, one_server):>8} {(f'{p99 / 1e6:.2f}' if p99 else '-'):>7} "
            f"{_share(srv_rate, off_rate):>11} {_verdict(off):>8} {search:>27}"
        )
    lines.append(
        "Server/s: the best VALID run's completed rate (p99 <= 15 ms); VALID/runs: of the targets"
        " tried at that size; <N: the lowest INVALID target above it."
    )
    lines.append(
        f"goals: Offline >= {GOALS[2]}x at 2 GPUs and {GOALS[8]}x at 8; Server >= "
        f"{SERVER_SHARE_GOAL:.0%} of Offline with p99 <= 15 ms. NVIDIA 8xH200 (v4.1): Offline "
        f"{NVIDIA_8XH200['Offline']:,}, Server {NVIDIA_8XH200['Server']:,}."
    )
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ratio(value: float | None, base: float | None) -> str:
    return "-" if value is None or not base else f"{value / base:.2f}x"


def _share(server: float | None, offline: float | None) -> str:
    return "-" if server is None or not offline else f"{server / offline:.1%}"


def _verdict(run: dict[str, Any]) -> str:
    if not run:
        return "-"
    return "VALID" if run.get("result_valid") else "INVALID"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m mlperf_harness.benchmarks.scaling_table <results dir>")
        return 2
    print(table(Path(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
