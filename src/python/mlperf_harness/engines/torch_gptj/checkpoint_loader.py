"""MLCommons' GPT-J checkpoint (a Hugging Face directory) into the torch engine's model: checked by
`checkpoint_files` before anything is read, then shard by shard onto the device in the engine's
precision (fp8: each projection quantized on the device from its float32 copy as its block is
made). The shards are opened memory-mapped: 24 GB of float32 never sit in host memory at once,
and the engine never holds a float32 copy.

Runs only where torch is (the GPU hosts): torch reads pytorch_model*.bin, the `safetensors` package
(when installed) reads *.safetensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.gptj.checkpoint_layout import IGNORED, check_shapes
from mlperf_harness.engines.torch_gptj.checkpoint_files import (
    SAFETENSORS,
    CheckpointFiles,
    check_checkpoint,
    safetensors_available,
)
from mlperf_harness.engines.torch_gptj.module import (
    TorchGptj,
    compute_dtype,
    from_tensors,
    linear_maker,
    load_dtype,
)
from mlperf_harness.errors import HarnessError


def load_checkpoint(torch: Any, directory: Path, device: Any, precision: str) -> TorchGptj:
    """The model of the checkpoint in `directory` on `device` in `precision`'s dtype."""
    files = check_checkpoint(directory)
    host = _host_tensors(torch, files)
    check_shapes(
        {name: tuple(t.shape) for name, t in host.items()},
        files.shape,
        f"GPT-J checkpoint {directory}",
    )
    loaded = load_dtype(torch, precision)
    return from_tensors(
        torch,
        lambda name: host[name].to(device=device, dtype=loaded),
        files.shape,
        linear_maker(torch, precision, device),
        compute_dtype(torch, precision),
    )


def _host_tensors(torch: Any, files: CheckpointFiles) -> dict[str, Any]:
    """Every tensor of every shard, on the host and memory-mapped (buffers such as the causal mask
    dropped)."""
    tensors: dict[str, Any] = {}
    for shard in files.shards:
        for name, value in _read_shard(torch, shard, files.format).items():
            if not IGNORED.fullmatch(name):
                tensors[name] = value
    return tensors


def _read_shard(torch: Any, shard: Path, fmt: str) -> dict[str, Any]:
    if fmt == SAFETENSORS:
        if not safetensors_available():
            raise HarnessError(
                f"{shard} is a safetensors file: reading it needs the safetensors package "
                "(pip install safetensors), or give the checkpoint's pytorch_model*.bin copy"
            )
        from safetensors.torch import load_file  # type: ignore[import-not-found]  # pants: no-infer-dep

        loaded: dict[str, Any] = load_file(str(shard), device="cpu")
        return loaded
    try:
        # weights_only: a checkpoint is data, never code to run; mmap: read pages as they are used.
        state = torch.load(str(shard), map_location="cpu", weights_only=True, mmap=True)
    except (RuntimeError, OSError, EOFError, ValueError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise HarnessError(f"cannot read GPT-J checkpoint shard {shard}: {first}") from error
    if not isinstance(state, dict):
        raise HarnessError(f"{shard} is not a state dict (tensor name -> tensor)")
    return dict(state)
