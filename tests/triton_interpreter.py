"""A check script run under Triton's interpreter in a process of its own: Triton reads
TRITON_INTERPRET when the kernels are defined, so the variable must be set before the script
imports them (the FP8 engine's kernels, GPT-J's and Llama's decode attention, DLRM-v2's pooling)."""

from __future__ import annotations

import os
import subprocess
import sys


def run_interpreted(script: str, timeout: int, *argv: str) -> str:
    """The stdout of `script` (with `argv`) run by this Python with TRITON_INTERPRET=1 and this
    process's import path; fails with its output when it exits non-zero."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, script, *argv], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
