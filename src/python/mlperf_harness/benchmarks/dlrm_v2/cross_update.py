"""DLRM-v2's cross layer update x' = x + x0 * (W y + b) (y = V x, the layer's first product), the
ways the dense part can do it (the run's `--cross`, resolved into torch_plan.TorchPlan):

- `torch` (the default): addmm (W's product and bias, written out in fp16), then addcmul.
- `kernel`: our Triton kernel (cross_kernel.py): the product, the bias and the update in one pass,
  x' the only [pairs, width] tensor written.

`fused_update` launches the kernel; `torch_update` is the torch form (and the kernel's reference
with `cross_float32_reference`: the tests compare them, the kernel run by Triton's interpreter on
the CPU).

Imports torch: GPU hosts and the development environment only (triton: where the kernel runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class CrossConfig:
    """How the kernel is launched: the output tile, the reduction step, row blocks per group,
    warps and pipeline stages."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    group_m: int = 8
    warps: int = 8
    stages: int = 3

    def label(self) -> str:
        return (
            f"{self.block_m}x{self.block_n}x{self.block_k}, group {self.group_m}, "
            f"{self.warps} warps, {self.stages} stages"
        )


# The launch form the dense part uses: a guess (Triton's Hopper matmul shapes for fp16), not yet
# timed on a GPU: the device script's `cross` phase times every form in CANDIDATES on the real-size
# shapes; put the fastest first. Each compiles for sm_90 to wgmma with nothing spilled
# (test_cross_kernel_compiles_for_hopper): the fp32 tile plus the epilogue's x and x0 tiles must
# fit a thread's 255 registers, which 128 x 256 tiles (8 warps) and 128 x 128 ones by 4 warps
# do not.
DEFAULT_CONFIG = CrossConfig()
CANDIDATES = (
    DEFAULT_CONFIG,
    CrossConfig(block_m=128, block_n=128, block_k=64, warps=8, stages=4),
    CrossConfig(block_m=64, block_n=256, block_k=64, warps=8, stages=3),
    CrossConfig(block_m=128, block_n=128, block_k=128, warps=8, stages=3),
    CrossConfig(block_m=64, block_n=128, block_k=64, warps=4, stages=4),
    CrossConfig(block_m=128, block_n=64, block_k=64, warps=4, stages=4),
)


def _checked(y: Any, weight: Any, bias: Any, x: Any, x0: Any) -> tuple[int, int, int]:
    """(M, N, K) of the update's operands; one line for anything the kernel cannot read."""
    m, k = y.shape
    n = weight.shape[0]
    tensors = {"y": y, "W": weight, "b": bias, "x": x, "x0": x0}
    shapes = {"y": (m, k), "W": (n, k), "b": (n,), "x": (m, n), "x0": (m, n)}
    for name, tensor in tensors.items():
        if tensor.dtype != torch.float16 or tuple(tensor.shape) != shapes[name]:
            raise HarnessError(
                f"the cross kernel reads fp16 {name} {list(shapes[name])}, not "
                f"{str(tensor.dtype).removeprefix('torch.')} {list(tensor.shape)}"
            )
        if tensor.stride(-1) != 1 or (name == "W" and tensor.stride(0) != k):
            raise HarnessError(f"the cross kernel reads {name} with contiguous rows")
    return m, n, k


def fused_update(
    y: Any, weight: Any, bias: Any, x: Any, x0: Any, config: CrossConfig | None = None
) -> Any:
    """fp16 [M, N]: x + x0 * (y @ weight.T + bias) by the Triton kernel, in fp32 then rounded once.
    `y` fp16 [M, K], `weight` [N, K], `bias` [N], `x` and `x0` [M, N] (row strides may be
    wider: a column slice is fine); `config`: the launch form (DEFAULT_CONFIG when None)."""
    from mlperf_harness.benchmarks.dlrm_v2.cross_kernel import cross_update_kernel

    m, n, k = _checked(y, weight, bias, x, x0)
    config = config or DEFAULT_CONFIG
    out = torch.empty((m, n), dtype=torch.float16, device=x.device)
    if m == 0:
        return out
    tiles = -(-m // config.block_m) * -(-n // config.block_n)
    cross_update_kernel[(tiles,)](
        y,
        weight,
        bias,
        x,
        x0,
        out,
        m,
        n,
        k,
        y.stride(0),
        x.stride(0),
        x0.stride(0),
        BLOCK_M=config.block_m,
        BLOCK_N=config.block_n,
        BLOCK_K=config.block_k,
        GROUP_M=config.group_m,
        EVEN_K=k % config.block_k == 0,
        num_warps=config.warps,
        num_stages=config.stages,
    )
    return out


def torch_update(y: Any, weight: Any, bias: Any, x: Any, x0: Any) -> Any:
    """What the dense part computes with torch: c = addmm(b, y, W^T) (rounded to the dtype), then
    addcmul(x, x0, c)."""
    return torch.addcmul(x, x0, torch.nn.functional.linear(y, weight, bias))


def cross_float32_reference(y: Any, weight: Any, bias: Any, x: Any, x0: Any) -> Any:
    """float32 [M, N]: the update in float32 from the same (fp16) operands."""
    product = y.float() @ weight.float().t() + bias.float()
    return x.float() + x0.float() * product
