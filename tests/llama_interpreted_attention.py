"""Run under TRITON_INTERPRET=1 by test_llama_attention_kernel.py (a process of its own: Triton
reads that variable when the kernels are defined): the torch Llama engine's decode attention kernels
(decode_kernel.py) on the CPU, through the launch the engine uses, against the engine's reference
for them (decode_attention.cached over KvCache.own); with the argument `engine`, the tiny Llama's
engine with attention fp8kernel decoding greedily, the kernel interpreted, to the NumPy model's
tokens. Prints one line per check and exits non-zero when one fails."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import tiny_llama_engine
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_llama import decode_attention, decode_kernel
from mlperf_harness.engines.torch_llama.cache import KvCache
from mlperf_harness.engines.torch_llama.options import EngineOptions
from mlperf_harness.generation.scheduler import generate

# What the kernel's output may differ from the reference by, over the reference's largest value:
# float32 sums in another order; fp16/bf16: the query x its scale and the probabilities rounded to
# the model's dtype before their products (as FlashAttention rounds them), the reference's not.
ROUNDING = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def bf16_products_in_float32() -> None:
    """Triton's interpreter (3.7) multiplies bf16 tiles as their raw 16-bit patterns (numpy holds
    bf16 as uint16; its dot converts only 8-bit floats): bf16 operands converted to float32 first,
    the exact products a GPU's tensor cores sum in float32."""
    import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep
    from triton.runtime import interpreter  # type: ignore[import-not-found]  # pants: no-infer-dep

    dot = interpreter.InterpreterBuilder.create_dot

    def widened(handle: Any) -> Any:
        if handle.dtype.scalar != tl.bfloat16:
            return handle
        data = interpreter._convert_float(handle.data, tl.bfloat16, tl.float32, None)
        return interpreter.TensorHandle(data.view(np.float32), tl.float32)

    def create_dot(self: Any, a: Any, b: Any, d: Any, *rest: Any) -> Any:
        return dot(self, widened(a), widened(b), d, *rest)

    interpreter.InterpreterBuilder.create_dot = create_dot


def filled_cache(
    slots: int, length: int, kv_heads: int, dim: int, dtype: Any, fp8: bool
) -> KvCache:
    """One layer's cache of random entries (FP8: e4m3 bits of values up to about 4 x 448, the
    scales those a prefill would set)."""
    cache = KvCache(torch, 1, slots, length, kv_heads, dim, dtype, torch.device("cpu"), fp8)
    k = torch.randn(slots + 1, length, kv_heads, dim) * 2.0
    v = torch.randn(slots + 1, length, kv_heads, dim)
    cache.store(0, slice(None), slice(None), k.to(dtype), v.to(dtype))
    return cache


def compare(
    label: str,
    dtype: Any,
    fp8: bool,
    heads: int,
    kv_heads: int,
    dim: int,
    lengths: list[int],
    splits: list[int],
) -> bool:
    """Rows of `lengths` (the last one a row without a sample: the scratch row's first entry),
    each in a cache row of its own out of order, queries a view of a wider projection as the
    engine's are; the kernel in each of `splits` (over the cache's whole length) against the
    reference. Prints a line per split."""
    length, slots = max(lengths), len(lengths) + 2
    cache = filled_cache(slots, length, kv_heads, dim, dtype, fp8)
    rows = torch.tensor([*range(slots - 1, slots - len(lengths), -1), cache.scratch])
    last = torch.tensor([*lengths[:-1], 1]) - 1
    q = torch.randn(len(lengths), heads + 2 * kv_heads, dim).to(dtype)[:, :heads]
    runs = [cache.own(0, int(r), int(n) + 1) for r, n in zip(rows, last, strict=True)]
    want = decode_attention.cached(torch, q, runs, cache.scale(0)).float()
    good = True
    for split in splits:
        got = decode_kernel.attention(
            torch, q, cache.keys[0], cache.values[0], rows, last, cache.scale(0), fp8, split,
            length,
        )  # fmt: skip
        error = float((got.float() - want).abs().max() / want.abs().max())
        ok = got.dtype == dtype and got.shape == want.shape and error <= ROUNDING[dtype]
        print(
            f"{label}, {str(dtype)[6:]}, {'fp8' if fp8 else 'plain'} cache, {heads}/{kv_heads} "
            f"heads of {dim}, lengths {lengths[:-1]} and a scratch row, {split} split(s): "
            f"{'equal' if ok else 'DIFFER'} to the reference (error {error:.1e} of the largest)"
        )
        good &= ok
    return good


def check_kernels() -> bool:
    """Llama-2-70B's group (8 query heads a key/value head, dim 128) over the FP8 cache in bf16
    and fp16, and the tiny Llama's shape (4 heads a group, dim 8: both padded to the kernel's 16)
    in float32 with either cache; rows of 1 key, one block (64) and either side of it, several
    blocks, the cache's whole length; splits whose chunks some rows do not reach."""
    awkward = [1, 63, 64, 65, 130, 200, 1]
    return all(
        [
            compare("70B group", torch.bfloat16, True, 16, 2, 128, awkward, [1, 2, 3, 4]),
            compare("70B group", torch.float16, True, 16, 2, 128, awkward, [1, 3]),
            compare("tiny", torch.float32, False, 8, 2, 8, awkward, [1, 2, 5]),
            compare("tiny", torch.float32, True, 8, 2, 8, [1, 7, 129, 1], [1, 3]),
        ]
    )


def check_engine() -> bool:
    """The tiny Llama's engine (tiny_llama_engine.py's model and workload) with
    attention fp8kernel, its kernel interpreted, at 3 slots (serial prefills, eager), 17 (packed
    prefills, fixed-shape steps: buckets leave rows without samples) and 5 (chunked prefills: the
    decode rows of a step that prompts join read the kernel too), splitting keys into chunks of 16
    (the engine's 256 would not split caches this short)."""
    prompts, configs = tiny_llama_engine.workload()
    good = True
    for slots, prefill, graphs in (
        (3, "serial", False),
        (17, "packed", True),
        (5, "chunked", True),
    ):
        options = EngineOptions(prefill, 24, "fp8kernel", graphs)
        engine = tiny_llama_engine.engine(slots, options)
        assert engine.static is not None and engine.static.kernel is decode_kernel
        engine.static.split_keys = 16
        same = generate(engine, prompts, configs) == tiny_llama_engine.numpy_tokens()
        print(f"engine {options.name}, {slots} slots: {'equal' if same else 'DIFFER'} to NumPy's")
        good &= same
    return good


if __name__ == "__main__":
    torch.manual_seed(0)
    bf16_products_in_float32()
    results = [check_engine() if sys.argv[1:] == ["engine"] else check_kernels()]
    sys.exit(0 if all(results) else 1)
