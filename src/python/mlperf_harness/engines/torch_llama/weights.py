"""Where the torch Llama's weights come from: NumPy arrays by the checkpoint's names (the CPU tests:
the NumPy model's weights, so the two can be compared), or seeded random numbers at any size drawn
on the GPU itself (Llama-2-70B's 69 billion parameters never pass through the host, nor exist in
fp16 anywhere but one layer's weight at a time: each is quantized to FP8 as it is drawn).

Each is one rank's shard under tensor parallelism (module.shard_rows); the random weights of a
shard are drawn from a generator seeded by (seed, rank, layer, weight), so one layout is the same
on every run, and another layout holds other random numbers (timing only: they answer nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.model import Float32Array, LlamaShape, weight_shapes
from mlperf_harness.engines.torch_llama.module import Parallel, shard_rows

INIT_STD = 0.02  # Llama 2's initializer_range
ALONE = Parallel()


def numpy_tensors(
    torch: Any,
    weights: Mapping[str, Float32Array],
    shape: LlamaShape,
    device: Any,
    dtype: Any,
    parallel: Parallel = ALONE,
) -> Callable[[str], Any]:
    rows = shard_rows(shape, parallel)

    def tensor(name: str) -> Any:
        array = weights[name]
        part = rows.get(name.split(".")[-2]) if name.endswith("_proj.weight") else None
        if part is not None:
            array = array[part]
        return torch.from_numpy(np.array(array, np.float32, order="C")).to(
            device=device, dtype=dtype
        )

    return tensor


def random_tensors(
    torch: Any,
    shape: LlamaShape,
    device: Any,
    dtype: Any,
    seed: int,
    parallel: Parallel = ALONE,
) -> Callable[[str], Any]:
    dims_of = weight_shapes(shape)
    rows = shard_rows(shape, parallel)
    names = list(dims_of)

    def tensor(name: str) -> Any:
        dims = dims_of[name]
        if len(dims) == 1:  # the norms
            return torch.ones(dims, device=device, dtype=dtype)
        part = rows.get(name.split(".")[-2]) if name.endswith("_proj.weight") else None
        if part is not None:
            dims = tuple(
                len(range(*piece.indices(size)))
                for piece, size in zip((*part, slice(None))[: len(dims)], dims, strict=True)
            )
        generator = torch.Generator(device=device)
        generator.manual_seed((seed * 1_000_003 + parallel.rank) * 1_000_003 + names.index(name))
        values = torch.randn(dims, device=device, generator=generator, dtype=dtype)
        return values.mul_(INIT_STD)

    return tensor
