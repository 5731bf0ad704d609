"""A check script run under Triton's interpreter in a process of its own: Triton reads
TRITON_INTERPRET when the kernels are defined, so the variable must be set before the script
imports them (the FP8 engine's kernels, GPT-J's and Llama's decode attention, DLRM-v2's pooling);
and the interpreter's float casts made the GPU's (exact_float_casts), called by such a script."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any


def run_interpreted(script: str, timeout: int, *argv: str) -> str:
    """The stdout of `script` (with `argv`) run by this Python with TRITON_INTERPRET=1 and this
    process's import path; fails with its output when it exits non-zero."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, script, *argv], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def exact_float_casts() -> None:
    """Triton's interpreter (3.9) casts float32 to bf16 by truncation and to e4m3 rounding ties
    away from zero (and 31 to 16: fp8_interpreted_kernels.py), where the GPU rounds to nearest
    even as torch does: those casts done by torch instead, so that what is compared is the
    kernels' arithmetic, not the interpreter's casts (device_check compares the GPU's)."""
    import numpy as np
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
    import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep
    from triton.runtime import interpreter  # type: ignore[import-not-found]  # pants: no-infer-dep

    types = {
        tl.float32: torch.float32, tl.float16: torch.float16, tl.bfloat16: torch.bfloat16,
        tl.float8e4nv: torch.float8_e4m3fn,
    }  # fmt: skip
    bits = {32: torch.int32, 16: torch.int16, 8: torch.uint8}
    original = interpreter._convert_float

    def convert(data: Any, source: Any, target: Any, rounding: Any) -> Any:
        if source not in types or target not in types:
            return original(data, source, target, rounding)
        raw = torch.from_numpy(np.ascontiguousarray(data).copy())
        values = raw.view(bits[source.primitive_bitwidth]).view(types[source])
        out = values.to(types[target]).view(bits[target.primitive_bitwidth])
        return out.numpy().view(getattr(np, f"uint{target.primitive_bitwidth}"))

    interpreter._convert_float = convert
