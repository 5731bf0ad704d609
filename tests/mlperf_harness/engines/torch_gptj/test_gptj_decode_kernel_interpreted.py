"""GPT-J's one-kernel decode attention (torch_gptj/decode_kernel.py) on the CPU under Triton's
interpreter, against attention.py's reference on awkward shapes, in fp16 and fp32, split and not; the
engine's build-time gate passing it and refusing a wrong kernel; and the engine decoding with it
exactly as the reference beam search (gptj_interpreted_attention.py,
in a process of its own with TRITON_INTERPRET=1). Skipped where torch or triton is not installed
(CI). Programs run one after another here: what the GPU does with them (timing, the CUDA graph)
is the device script's to check."""

from __future__ import annotations

import os
import subprocess
import sys

from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton


def test_the_kernel_computes_what_the_two_parts_and_their_merge_do() -> None:
    import gptj_interpreted_attention

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, gptj_interpreted_attention.__file__],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # 1 line of split counts, 28 launches, 7 gates passed, 3 engines (one a tiling)
    assert result.stdout.count("equal") == 39 and "DIFFER" not in result.stdout
    assert "a kernel off by 1%: refused" in result.stdout
