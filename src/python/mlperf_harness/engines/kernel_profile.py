"""Where a few calls of an engine's work spend their time, by kernel, under torch.profiler: the
kernels that took the most GPU time per call, the host's time per call, and (optionally) the GPU
time under each named range the work opens (torch.profiler.record_function). What the Llama and
GPT-J profiles (torch_llama/device_profile.py, torch_gptj/device_profile.py) print.

A "step" is one call of the profiled work (a decode step, a prefill call). On a GPU the host time
is taken before the closing synchronisation: what the host spent issuing the work, which the GPU
hides unless it exceeds the GPU's own time. On the CPU (the tests; `on_gpu=False`) nothing is
asynchronous: the "kernels" are torch's CPU ops ranked by their own (self) CPU time, and a named
range's time is its CPU time.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlperf_harness.engines.gpu_timing import gpu_ms

TOP_KERNELS = 8
NAME_WIDTH = 90
# Kinds of GPU kernel by name, first match wins (kernel_kinds). Inductor names its fusions by the
# ops fused (triton_poi_fused_add_convolution_relu: the epilogue after a cuDNN convolution), so
# they go first; then convolutions and GEMMs: cuDNN's, cuBLAS's and CUTLASS's (sm90_xmma_fprop...,
# nvjet_..., cutlass3x_...), Inductor's GEMM templates (triton_tem_) and our FP8 convolution
# (conv_fp8_kernel); then copies and fills; the rest (torch's own kernels, our other Triton
# kernels) is "other".
KERNEL_KINDS = (
    ("Inductor fusion", ("triton_poi_", "triton_red_", "triton_per_")),
    (
        "convolution or GEMM",
        ("conv", "fprop", "xmma", "gemm", "cutlass", "cudnn", "nvjet", "triton_tem_"),
    ),
    ("copy or fill", ("memcpy", "memset")),
)


@dataclass(frozen=True)
class KernelRow:
    gpu_ms_per_step: float  # on the CPU: the op's own CPU ms
    calls_per_step: int
    name: str


@dataclass(frozen=True)
class StepProfile:
    steps: int
    host_ms_per_step: float
    top: list[KernelRow]
    kernel_ms_per_step: float  # every kernel's GPU time summed (CPU: every op's own time)
    labels: dict[str, float] = field(default_factory=dict)  # named range -> ms a step

    def record(self) -> dict[str, Any]:
        """The JSON form (the Llama profile's record, its keys unchanged)."""
        return {
            "host_ms_per_step": round(self.host_ms_per_step, 2),
            "top": [
                {
                    "gpu_ms_per_step": round(row.gpu_ms_per_step, 3),
                    "calls_per_step": row.calls_per_step,
                    "name": row.name,
                }
                for row in self.top
            ],
        }


def _on_cpu(event: Any) -> bool:
    return str(getattr(event.device_type, "name", event.device_type)).endswith("CPU")


def _is_kernel(event: Any) -> bool:
    """A GPU kernel (or memcpy/memset) itself: not a CPU op, not a named range drawn on the GPU."""
    return not _on_cpu(event) and not getattr(event, "is_user_annotation", False)


def _device_us(event: Any) -> float:
    return float(getattr(event, "device_time_total", 0.0) or getattr(event, "cuda_time_total", 0.0))


def profile_steps(
    torch: Any,
    step: Callable[[], Any],
    steps: int,
    *,
    top: int = TOP_KERNELS,
    on_gpu: bool = True,
    kernels_only: bool = False,
    label_prefix: str | None = None,
) -> StepProfile:
    """`steps` calls of `step` under torch.profiler.

    On a GPU the top rows rank every event with GPU time by it: with `kernels_only` the kernels
    alone; without (the Llama profile's table) the CPU ops that launched them too, each with its
    kernels' time summed (so an eager op and its kernel may both be listed). Named ranges starting
    with `label_prefix` get the GPU time of the kernels launched inside them (CPU: their CPU time).
    """
    if steps < 1:
        raise ValueError(f"profile_steps needs at least one step, got {steps}")
    activities = [torch.profiler.ProfilerActivity.CPU]
    if on_gpu:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
        torch.cuda.synchronize()
    with torch.profiler.profile(activities=activities) as prof:
        started = time.perf_counter()
        for _ in range(steps):
            step()
        host = time.perf_counter() - started  # before the sync: what the host spent issuing
        if on_gpu:
            torch.cuda.synchronize()
    rows: list[tuple[float, int, str]] = []
    kernel_us = 0.0
    labels: dict[str, float] = {}
    for event in prof.key_averages():
        name = str(event.key)
        if label_prefix is not None and name.startswith(label_prefix):
            if not _on_cpu(event):
                continue  # the range's GPU-side span (gaps included): its kernels are counted
            us = _device_us(event) if on_gpu else float(event.cpu_time_total)
            labels[name] = labels.get(name, 0.0) + us / steps / 1e3
            continue
        if on_gpu:
            us = _device_us(event)
            if _is_kernel(event):
                kernel_us += us
            elif kernels_only:
                continue
        else:
            us = float(event.self_cpu_time_total)
            kernel_us += us
        if us > 0 and event.count > 0:
            rows.append((us / steps / 1e3, event.count // steps, name))
    rows.sort(reverse=True)
    return StepProfile(
        steps=steps,
        host_ms_per_step=1e3 * host / steps,
        top=[KernelRow(ms, calls, name[:NAME_WIDTH]) for ms, calls, name in rows[:top]],
        kernel_ms_per_step=kernel_us / steps / 1e3,
        labels=labels,
    )


def profiled(
    torch: Any,
    work: Callable[[], Any],
    *,
    calls: int,
    top: int = TOP_KERNELS,
    label_prefix: str,
    on_gpu: bool = True,
) -> dict[str, Any]:
    """`calls` calls of `work` after one unprofiled, its kernels only, as a record (`summary`). On
    a GPU also the call's time on CUDA events (`calls` more after one more): kernels and the gaps
    between them, what a run pays, and a check on the profiler's sum (a profiler that missed a
    graph's kernels would show it). GPT-J's and RNN-T's profiles (torch_gptj/device_profile.py,
    benchmarks/rnnt/call_profile.py)."""
    event_ms = {"event_ms_per_step": round(gpu_ms(torch, work, calls), 3)} if on_gpu else {}
    work()
    profile = profile_steps(
        torch,
        work,
        calls,
        top=top,
        on_gpu=on_gpu,
        kernels_only=True,
        label_prefix=label_prefix,
    )
    return summary(profile, label_prefix, on_gpu) | event_ms


def summary(profile: StepProfile, label_prefix: str, on_gpu: bool = True) -> dict[str, Any]:
    """A profile's figures: kernels' GPU ms a call, host ms, the top kernels, the parts' ms (the
    work's ranges named `label_prefix`..., and on a GPU "other": the kernels outside them; on the
    CPU a range's time is its whole CPU time, Python's included, so the difference means nothing)
    when it opened any."""
    record = profile.record()
    record["kernel_ms_per_step"] = round(profile.kernel_ms_per_step, 3)
    if profile.labels:
        parts = {name.removeprefix(label_prefix): ms for name, ms in profile.labels.items()}
        if on_gpu:
            parts["other"] = profile.kernel_ms_per_step - sum(parts.values())
        record["parts_ms_per_step"] = {
            name: round(ms, 3) for name, ms in sorted(parts.items(), key=lambda kv: -kv[1])
        }
    return record


def kernel_kinds(top: list[dict[str, Any]]) -> dict[str, float]:
    """GPU ms a step by kind of kernel (KERNEL_KINDS; "other" for the rest) over a record's "top"
    rows: a whole account only when the profile kept every kernel (a `top` as large as their
    count)."""
    kinds = {kind: 0.0 for kind, _ in KERNEL_KINDS} | {"other": 0.0}
    for row in top:
        name = row["name"].lower()
        kind = next((k for k, marks in KERNEL_KINDS if any(m in name for m in marks)), "other")
        kinds[kind] += row["gpu_ms_per_step"]
    return {kind: round(ms, 3) for kind, ms in kinds.items()}


def kernel_lines(top: list[dict[str, Any]]) -> list[str]:
    """The top rows of a record (StepProfile.record()'s "top") as printed: GPU ms a step, calls a
    step, name."""
    return [
        f"{row['gpu_ms_per_step']:>10.3f} {row['calls_per_step']:>6}  {row['name']}" for row in top
    ]
