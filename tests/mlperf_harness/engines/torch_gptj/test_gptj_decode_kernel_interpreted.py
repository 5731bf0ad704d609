"""GPT-J's one-kernel decode attention (torch_gptj/decode_kernel.py) on the CPU under Triton's
interpreter, against attention.py's reference on awkward shapes, in fp16 and fp32, split and not; the
engine's build-time gate passing it and refusing a wrong kernel; and the engine decoding with it
exactly as the reference beam search (gptj_interpreted_attention.py,
in a process of its own with TRITON_INTERPRET=1). Skipped where torch or triton is not installed
(CI). Programs run one after another here: what the GPU does with them (timing, the CUDA graph)
is the device script's to check."""

from __future__ import annotations

from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton


def test_the_kernel_computes_what_the_two_parts_and_their_merge_do() -> None:
    import gptj_interpreted_attention

    stdout = run_interpreted(gptj_interpreted_attention.__file__, timeout=600)
    # 1 line of split counts, 28 launches, 7 gates passed, 3 engines (one a tiling)
    assert stdout.count("equal") == 39 and "DIFFER" not in stdout
    assert "a kernel off by 1%: refused" in stdout
