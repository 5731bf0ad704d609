"""The torch Llama engine's KV cache: per layer keys and values [slots + 1, length, kv_heads,
head_dim] (this rank's heads under tensor parallelism), allocated once, in FP8 (e4m3, one scale per
layer and tensor, set from the first prompt's largest value with a margin) or in the model's
dtype. Row `slots` is scratch: a fixed-shape decode step (static_step.py) sends the writes of its
rows that hold no live sample there.

Reads, one per decode attention (options.py): `dequantized` (the scales multiplied in, what the
first engine did), `converted` (the same keys in the model's dtype, scales left to the caller),
`gathered` (only the named entries, converted: a packed run); "fp8kernel"'s kernel reads `keys`
and `values` as they lie, its CPU reference each row's own entries (`own`).
"""

from __future__ import annotations

from typing import Any

from mlperf_harness.engines.fp8_linear import E4M3_MAX

KV_MARGIN = 4.0  # the FP8 cache's scale: the first prefill's largest value x this, over 448


class KvCache:
    def __init__(
        self,
        torch: Any,
        layers: int,
        slots: int,
        length: int,
        kv_heads: int,
        head_dim: int,
        dtype: Any,
        device: Any,
        fp8: bool,
    ) -> None:
        self.torch, self.dtype, self.fp8 = torch, dtype, fp8
        self.slots, self.length, self.scratch = slots, length, slots
        # FP8 entries kept as their bytes (uint8): indexed writes of float8 tensors are not
        # implemented for every device and torch; a view reads them back as e4m3.
        stored = torch.uint8 if fp8 else dtype
        dims = (slots + 1, length, kv_heads, head_dim)
        self.keys = [torch.zeros(dims, device=device, dtype=stored) for _ in range(layers)]
        self.values = [torch.zeros(dims, device=device, dtype=stored) for _ in range(layers)]
        self.scales: list[tuple[float, float] | None] = [None] * layers

    @property
    def calibrated(self) -> bool:
        """Whether every layer's FP8 scales are set (always so for a cache in the model's dtype)."""
        return not self.fp8 or all(scale is not None for scale in self.scales)

    def scale(self, layer: int) -> tuple[float, float]:
        """The layer's (key, value) scales: what an entry read back as e4m3 is multiplied by."""
        scale = self.scales[layer] if self.fp8 else (1.0, 1.0)
        if scale is None:
            raise RuntimeError(f"layer {layer}'s FP8 cache scale is read before any prefill")
        return scale

    def store(self, layer: int, rows: Any, columns: Any, k: Any, v: Any) -> None:
        """Keys and values [..., kv_heads, head_dim] into the cache at (rows, columns), which index
        the cache's first two dimensions as k's leading ones."""
        if self.fp8:
            self.calibrate(layer, k, v)
            k_scale, v_scale = self.scale(layer)
            e4m3, raw = self.torch.float8_e4m3fn, self.torch.uint8
            k = (k.float() / k_scale).clamp(-E4M3_MAX, E4M3_MAX).to(e4m3).view(raw)
            v = (v.float() / v_scale).clamp(-E4M3_MAX, E4M3_MAX).to(e4m3).view(raw)
        self.keys[layer][rows, columns] = k
        self.values[layer][rows, columns] = v

    def calibrate(self, layer: int, k: Any, v: Any) -> None:
        """The layer's FP8 scales from these keys and values, if not set yet (the first prefill's
        first prompt: one read back per layer, once)."""
        if self.fp8 and self.scales[layer] is None:
            self.scales[layer] = (
                max(float(k.abs().max()), 1e-6) * KV_MARGIN / E4M3_MAX,
                max(float(v.abs().max()), 1e-6) * KV_MARGIN / E4M3_MAX,
            )

    def dequantized(self, layer: int, count: int, length: int) -> tuple[Any, Any]:
        """Rows 0..count-1's first `length` keys and values, [count, kv_heads, length, dim] in the
        model's dtype, scales multiplied in."""
        k = self.keys[layer][:count, :length].transpose(1, 2)
        v = self.values[layer][:count, :length].transpose(1, 2)
        if self.fp8:
            k_scale, v_scale = self.scale(layer)
            e4m3 = self.torch.float8_e4m3fn
            # in the model's dtype throughout: no float32 copy of the whole visible cache
            k = k.view(e4m3).to(self.dtype).mul_(k_scale)
            v = v.view(e4m3).to(self.dtype).mul_(v_scale)
        return k, v

    def converted(self, layer: int, count: int, length: int) -> tuple[Any, Any]:
        """As `dequantized`, unscaled: one conversion of the FP8 bytes (read in storage order,
        written contiguous), the scales left to the caller (`scale`)."""
        k = self._model_dtype(self.keys[layer][:count, :length])
        v = self._model_dtype(self.values[layer][:count, :length])
        return k.transpose(1, 2), v.transpose(1, 2)

    def gathered(self, layer: int, index: Any) -> tuple[Any, Any]:
        """The entries `index` names (row * length + column) as one packed run [entries, kv_heads,
        dim] in the model's dtype, unscaled."""
        flat = (-1, *self.keys[layer].shape[2:])
        k = self.keys[layer].view(flat).index_select(0, index)
        v = self.values[layer].view(flat).index_select(0, index)
        return self._model_dtype(k), self._model_dtype(v)

    def own(self, layer: int, row: int, length: int) -> tuple[Any, Any]:
        """Cache row `row`'s first `length` keys and values [length, kv_heads, dim] in the model's
        dtype, unscaled."""
        return (
            self._model_dtype(self.keys[layer][row, :length]),
            self._model_dtype(self.values[layer][row, :length]),
        )

    def _model_dtype(self, entries: Any) -> Any:
        if not self.fp8:
            return entries
        return entries.view(self.torch.float8_e4m3fn).to(self.dtype)
