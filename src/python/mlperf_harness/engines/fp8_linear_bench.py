"""How fast the decoder engines' linear layers run on a GPU host, per way of computing them: the
products of Llama-2-70B's and GPT-J 6B's layers (fp8_linear.py's shapes: q/k/v stacked, the MLP's
first layers stacked) at decode-sized and prefill-sized row counts, in bf16 and in FP8 with
row-wise scales (what fp8_linear.Linear runs), FP8 with fast accumulation (no periodic promotion of
the tensor cores' partial sums to float32), and fp8_linear's tensor-wise form ("fp8 tensor fast":
_scaled_mm with one scale for the activation and one for the weight, then the per-channel weight
scale multiplied into its output, as Linear computes it with activation_scale="tensor"). Each
product alone (CUDA events over many repetitions, inputs made beforehand); the activations'
quantization is timed on its own, per form ("q row": the row maxima, the division, the cast;
"q tensor": one maximum over the whole activation, then the same), since each FP8 form pays its
own: a layer of the row form costs "fp8 rowwise fast" + "q row", of the tensor form "fp8 tensor
fast" + "q tensor".

    python -m mlperf_harness.engines.fp8_linear_bench [--rows 16,173,692,4096] [--out FILE]

Prints one table: microseconds per product and the rate it reads weights at (TB/s) or computes at
(TFLOP/s), and writes the numbers as JSON. torch is imported in main: CPU hosts import the module
without it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.engines.fp8_linear import (
    Linear,
    row_quantized,
    tensor_quantized,
    tensorwise_product,
)
from mlperf_harness.engines.gpu_timing import gpu_ms

# (name, in_features, out_features) of one layer's products
SHAPES = {
    "llama2-70b": [
        ("qkv", 8192, 10240),
        ("o", 8192, 8192),
        ("gate_up", 8192, 57344),
        ("down", 28672, 8192),
    ],
    "gptj-6b": [("qkv_in", 4096, 3 * 4096 + 16384), ("out", 4096, 4096), ("fc_out", 16384, 4096)],
}
FORMS = ("bf16", "fp8 rowwise", "fp8 rowwise fast", "fp8 tensor fast")
QUANTIZATIONS = ("q row", "q tensor")
REPEATS = 50


def products(
    torch: Any, rows: int, k: int, n: int, device: str = "cuda"
) -> dict[str, Callable[[], Any]]:
    """Each form's work on `device` (the CPU tests run them there: this torch's own kernels)."""
    e4m3 = torch.float8_e4m3fn
    x = torch.randn(rows, k, device=device, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=device, dtype=torch.bfloat16) * 0.02
    w8 = w.to(e4m3)
    row_scale = torch.rand(rows, 1, device=device, dtype=torch.float32) + 0.5
    col_scale = torch.rand(1, n, device=device, dtype=torch.float32) + 0.5
    one = torch.ones((), device=device, dtype=torch.float32)
    x8 = x.to(e4m3)
    tensorwise = Linear(weight8=w8, scale=col_scale[0], scaled_mm=True, unit=one)

    def scaled(scale_a: Any, scale_b: Any, fast: bool) -> Callable[[], Any]:
        return lambda: torch._scaled_mm(
            x8,
            w8.t(),
            scale_a=scale_a,
            scale_b=scale_b,
            out_dtype=torch.bfloat16,
            use_fast_accum=fast,
        )

    return {
        "bf16": lambda: torch.nn.functional.linear(x, w),
        "fp8 rowwise": scaled(row_scale, col_scale, False),
        "fp8 rowwise fast": scaled(row_scale, col_scale, True),
        "fp8 tensor fast": lambda: tensorwise_product(torch, x8, one, tensorwise, torch.bfloat16),
        "q row": lambda: row_quantized(torch, x),
        "q tensor": lambda: tensor_quantized(torch, x),
    }


def measure(torch: Any, rows_list: Sequence[int]) -> list[dict[str, Any]]:
    records = []
    for model, shapes in SHAPES.items():
        for name, k, n in shapes:
            for rows in rows_list:
                record: dict[str, Any] = {
                    "model": model,
                    "layer": name,
                    "k": k,
                    "n": n,
                    "rows": rows,
                    "us": {},
                }
                for form, work in products(torch, rows, k, n).items():
                    try:
                        record["us"][form] = round(gpu_ms(torch, work, REPEATS) * 1000.0, 2)
                    except (RuntimeError, TypeError, ValueError) as error:
                        record["us"][form] = None
                        record.setdefault("errors", {})[form] = str(error).splitlines()[0][:160]
                records.append(record)
                torch.cuda.empty_cache()
    return records


def table(records: list[dict[str, Any]]) -> list[str]:
    head = f"{'model':<11}{'layer':<8}{'rows':>6}" + "".join(f"{f:>18}" for f in FORMS)
    head += "".join(f"{q:>10}" for q in QUANTIZATIONS)
    lines = [head + "   (us; TB/s of weights read or TFLOP/s, the larger)"]
    for r in records:
        cells = []
        for form in FORMS:
            us = r["us"].get(form)
            if us is None:
                cells.append(f"{'-':>18}")
                continue
            weight_bytes = r["k"] * r["n"] * (2 if form == "bf16" else 1)
            tbs = weight_bytes / us / 1e6
            tflops = 2 * r["rows"] * r["k"] * r["n"] / us / 1e6
            rate = f"{tbs:.2f}TB/s" if tbs * 1000 > tflops * 2 else f"{tflops:.0f}TF"
            cells.append(f"{us:>9.1f} {rate:>8}")
        for name in QUANTIZATIONS:
            us = r["us"].get(name)
            cells.append(f"{us if us is not None else '-':>10}")
        lines.append(f"{r['model']:<11}{r['layer']:<8}{r['rows']:>6}" + "".join(cells))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="16,173,692,4096", help="row counts, comma-separated")
    parser.add_argument("--out", type=Path, help="where to write the JSON record")
    args = parser.parse_args(argv)
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    if not torch.cuda.is_available():
        print("fp8_linear_bench: needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = [int(r) for r in args.rows.split(",") if r]
    records = measure(torch, rows)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("\n".join(table(records)))
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "gpu": torch.cuda.get_device_name(),
                    "torch": torch.__version__,
                    "records": records,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
