"""The row quantization kernel's launch forms timed side by side on one GPU (a device tool):
engines/fp8_row_kernels' chunked and one-pass quantization, a bias and ReLU first, at the widths
DLRM-v2's FP8 dense part quantizes, on a real-size batch's pairs. Prints one table: ms a call and
GB/s of what each moves (fp16 in, e4m3 out); fp8_row_kernels' one-pass tile is chosen from it.

    python -m mlperf_harness.benchmarks.dlrm_v2.row_quant_ab [--pairs N] [--repeats N]
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from mlperf_harness.benchmarks.dlrm_v2.cross_ab import cuda_ms
from mlperf_harness.engines.torch_aot.torch_host import import_torch

WIDTHS = (512, 1024, 3456)  # the low-rank products' inputs, the top MLP's, the cross network's


def quant_forms(torch: Any, width: int) -> list[tuple[str, Any]]:
    """(label, launcher(x, bias, q, scale)) of every quantization form at this width."""
    import triton  # type: ignore[import-not-found]  # pants: no-infer-dep

    from mlperf_harness.engines import fp8_row_kernels as k

    def chunked(warps: int) -> Any:
        def launch(x: Any, bias: Any, q: Any, scale: Any) -> None:
            k.quant_kernel[(x.shape[0],)](
                x, bias, q, scale, width, x.stride(0), HAS_BIAS=True, RELU=True, CHUNK=k.CHUNK,
                num_warps=warps,
            )  # fmt: skip

        return launch

    def one_pass(tile: int, warps: int) -> Any:
        block = triton.next_power_of_2(width)
        rows = max(1, tile // block)

        def launch(x: Any, bias: Any, q: Any, scale: Any) -> None:
            k.quant_rows_kernel[(triton.cdiv(x.shape[0], rows),)](
                x, bias, q, scale, x.shape[0], width, x.stride(0), HAS_BIAS=True, RELU=True,
                BLOCK=block, ROWS=rows, num_warps=warps,
            )  # fmt: skip

        return launch

    forms = [(f"chunked w{w}", chunked(w)) for w in (4, 8)]
    for tile in (1024, 2048, 4096, 8192):
        if tile >= triton.next_power_of_2(width):
            forms += [(f"one-pass tile {tile} w{w}", one_pass(tile, w)) for w in (2, 4, 8)]
    return forms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=69_632)  # a full real-size batch's bucket
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch = import_torch()
    device = torch.device("cuda")
    generator = torch.Generator(device=device).manual_seed(0)
    print(f"{'kernel':<10} {'width':>6} {'form':<24} {'ms':>8} {'GB/s':>8}")
    for width in WIDTHS:
        x = torch.randn(args.pairs, width, generator=generator, device=device).half()
        bias = torch.randn(width, generator=generator, device=device).half()
        q = torch.empty(args.pairs, width, dtype=torch.float8_e4m3fn, device=device)
        scale = torch.empty(args.pairs, dtype=torch.float32, device=device)
        moved = args.pairs * width * 3  # fp16 in, e4m3 out
        operands = (x, bias, q, scale)
        for label, launch in quant_forms(torch, width):
            launch(*operands)  # compiles
            ms = cuda_ms(functools.partial(launch, *operands), args.repeats)
            print(f"{'quant':<10} {width:>6} {label:<24} {ms:>8.3f} {moved / ms / 1e6:>8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
