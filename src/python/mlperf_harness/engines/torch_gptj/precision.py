"""The precisions GPT-J's torch engine runs, torch-free: the run refuses another one before any GPU
is set up, and the cache arithmetic knows what a precision stores its keys and values in.

"fp8" is FP8 (e4m3) weights for the projections (q, k, v, out_proj, fc_in, fc_out), one scale per
output channel quantized from the loaded weights (engines/fp8_linear.py), with everything else in
fp16: activations, the KV cache, LayerNorms, biases, the embedding and lm_head. How the projections'
activations are quantized (per row, or by calibrated static scales) is a setting of its own,
scale_artifact.py's FP8_ACTIVATIONS.
"""

from __future__ import annotations

from mlperf_harness.errors import HarnessError

# precision -> the dtype of its activations, KV cache and unquantized weights (as torch names it)
COMPUTE_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8": "float16"}
PRECISIONS = tuple(COMPUTE_DTYPES)
COMPUTE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
FP8 = "fp8"


def check_precision(precision: str) -> str:
    """`precision` if the engine runs it, else one line naming those it runs."""
    if precision not in COMPUTE_DTYPES:
        raise HarnessError(
            f"GPT-J's torch engine runs {', '.join(PRECISIONS)}, not precision {precision!r}"
        )
    return precision


def compute_bytes(precision: str) -> int:
    """Bytes of one activation or cached key/value value in `precision`."""
    return COMPUTE_BYTES[COMPUTE_DTYPES[check_precision(precision)]]
