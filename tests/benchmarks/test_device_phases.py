"""device_lib.sh's run_phase and phases_summary: a device script's phase that fails ends itself, not
the script; the phases after it run, the table prints, then one line names the failed phases and
the script exits non-zero. First the functions in bash on their own, then scaling.sh's CPU rehearsal
(the sim backend: no GPU) with its server phase forced to fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# The modules scaling.sh runs with `python -m` (imported here so that Pants ships them).
import mlperf_harness.benchmarks.harness_overhead.scaling
import mlperf_harness.benchmarks.scaling_plan
import mlperf_harness.benchmarks.scaling_table
import mlperf_harness.benchmarks.server_search  # noqa: F401

LIB = Path("benchmarks/device_lib.sh")
SCALING = Path("benchmarks/resnet50/device/scaling.sh")
BASH = shutil.which("bash") or "/bin/bash"


def _run(*command: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, *command],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


# A script's shape: its phases' steps in one function, each phase through run_phase, the table,
# then phases_summary. `long` stands for a harness run that took 42 s (harness sets longest).
PHASES = f"""
set -euo pipefail
source {LIB}
phase_cleanup() {{ echo "cleanup after $phase"; }}
phase_steps() {{
  case "$1" in
  fails) echo "fails: first step"; false; echo "fails: a step after the failure" ;;
  exits) echo "exits: no input"; exit 3 ;;
  long) longest=42; echo "long: ran" ;;
  later) echo "later: ran, longest $longest" ;;
  monitor) sleep 30 & echo "monitor: started"; kill $! ;;
  esac
}}
for phase in "$@"; do
  run_phase "$phase" phase_steps "$phase"
done
echo "the table"
phases_summary
"""


def test_a_failed_phase_ends_itself_and_the_script_goes_on_to_its_table() -> None:
    done = _run("-c", PHASES, "script", "fails", "long", "exits", "later")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "fails: first step",
        "cleanup after fails",
        "phase fails FAILED (exit status 1); the phases after it still run",
        "long: ran",
        "cleanup after long",
        "exits: no input",
        "cleanup after exits",
        "phase exits FAILED (exit status 3); the phases after it still run",
        # What a phase sets stays in its subshell, all but the longest run (fits reads it).
        "later: ran, longest 42",
        "cleanup after later",
        "the table",
        "failed phases: fails (exit 1), exits (exit 3)",
    ]


def test_phases_that_all_pass_print_no_summary_and_exit_zero() -> None:
    # monitor: a background job killed as soon as it started (harness's monitors, after a run that
    # failed at once) may run the phase's exit trap before bash resets it in the job (without
    # run_phase's guard it did here, in most runs); the cleanup is the phase's alone, once
    # (triton.sh's stops the phase's servers).
    done = _run("-c", PHASES, "script", "monitor", "long", "later")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "monitor: started",
        "cleanup after monitor",
        "long: ran",
        "cleanup after long",
        "later: ran, longest 42",
        "cleanup after later",
        "the table",
    ]


def test_scaling_sh_runs_the_phases_after_a_failed_one_and_prints_its_table(
    tmp_path: Path,
) -> None:
    # server's search fails at once (its step is no number: server_search's Python refuses it);
    # sim, after it, runs the harness over one simulated GPU; table prints scaling_table's.
    env = {
        "BACKEND": "sim",
        "PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "GPU_MONITOR": "0",
        "GPU_SIZES": "1",
        "SIM_GPUS": "1",
        "LOADGEN_PATHS": "python",
        "SERVER_STEP": "not-a-number",
        **{name: str(tmp_path / name.lower()) for name in ("SCRATCH", "RESULTS", "LOGS", "OUT")},
    }
    done = _run(str(SCALING), "server", "sim", "table", **env)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    failed = lines.index("phase server FAILED (exit status 1); the phases after it still run")
    assert "invalid float value: 'not-a-number'" in done.stderr
    # sim ran after it: its report, kept in the results.
    sim = next(i for i, line in enumerate(lines) if line.startswith("harness scaling over"))
    assert failed < sim
    assert (tmp_path / "results" / "sim.txt").read_text().startswith("harness scaling over")
    # Then the table (no Offline or Server run: scaling_table says so), then the failed phases.
    assert lines[-2:] == [
        f"no offline_gpus<N>.json or server_gpus<N>[_q<rate>].json under {tmp_path / 'results'}",
        "failed phases: server (exit 1)",
    ]
    assert (tmp_path / "out" / "scaling_results.tgz").is_file()


def test_monitored_says_at_which_clocks_a_raw_timing_ran(tmp_path: Path) -> None:
    # A stand-in for nvidia-smi's sampling loop: two samples of GPU 0 busy, one idle, a mark that
    # they are written, then it waits to be killed, as `nvidia-smi -lms 500` does. The timed
    # command waits for the mark, however slowly the machine starts the sampler.
    mark = tmp_path / "sampled"
    fake = tmp_path / "nvidia-smi"
    fake.write_text(
        f"#!/bin/sh\nprintf '0, 80, 1700\\n0, 0, 345\\n0, 90, 1980\\n'\ntouch {mark}\n"
        "exec sleep 60\n"
    )
    fake.chmod(0o755)
    path = f"{tmp_path}:{os.environ['PATH']}"
    waits = f"until [ -e {mark} ]; do sleep 0.05; done; echo timed; exit $0"
    script = f"source {LIB}; monitored raw sh -c '{waits}' \"$1\""
    done = _run("-c", script, "script", "0", PATH=path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["timed", "raw: GPUs while it ran: gpu0 85% 1700-1980 MHz"]
    mark.unlink()
    failed = _run("-c", script, "script", "4", PATH=path)
    assert failed.returncode == 4  # the command's own status, the clocks said all the same
    assert failed.stdout.splitlines()[-1] == "raw: GPUs while it ran: gpu0 85% 1700-1980 MHz"
    # Not sampled: no sampler started, no line about the GPUs.
    mark.unlink()
    quiet = f"source {LIB}; monitored raw echo timed"
    unsampled = _run("-c", quiet, PATH=path, GPU_MONITOR="0")
    assert unsampled.returncode == 0 and unsampled.stdout.splitlines() == ["timed"]
    assert not mark.exists()


def test_passes_fit_refuses_a_search_whose_whole_passes_cannot_end_in_the_call() -> None:
    """An LLM's Server-type run issues whole passes over its COUNT samples: at 3.5 queries/s the
    default 4,096 take 1,171 s, past a call's 560 s budget, and the search is refused in one line
    before anything loads; 480 fit; a search from its own rate (no start) is not judged."""

    def fit(start: str, count: str) -> subprocess.CompletedProcess[str]:
        script = f"source {LIB}; passes_fit interactive '{start}' {count}"
        return _run("-c", script, PYTHON=sys.executable, BUDGET_S="560")

    refused = fit("3.5", "4096")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "interactive: not run: its 4096 queries (COUNT) at 3.5 queries/s take 1171 s, past the "
        "budget (560 s, "
    )  # then the seconds the shell has run, as slow as the machine
    assert len(refused.stderr.splitlines()) == 1
    assert fit("3.5", "480").returncode == 0
    assert fit("", "4096").returncode == 0
