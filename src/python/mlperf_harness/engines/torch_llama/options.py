"""How the torch Llama engine runs its prefills and decode steps: each switch a way to spend less
of a step, so that one device call can time them side by side; the default is the variant that
ran fastest on an H200 with per-row FP8 activations (packed prefills, the fp8kernel attention, CUDA
graphs, the fused inputs: a decode step of 173 slots in 46 ms where packed attention unfused took
93) (device_profile.py). docs/llama2-70b.md says what each does and what has been timed.

- prefill "serial": one forward per prompt; "packed": prompts packed into forwards of at most
  `prefill_tokens` tokens (no padding), causal attention per prompt (varlen_attention.py);
  "static": a call of one prompt (Interactive's admissions) over a fixed length bucket, on a GPU
  under a CUDA graph per bucket (static_prefill.py), a call of several packed; with row-wise
  activations only (a per-tensor scale would see the padding). "chunked": no forward of its own;
  the prompts' tokens join the next decode steps' forwards, at most `prefill_tokens` a step
  (chunked_prefill.py).
- attention "gqa": SDPA with `enable_gqa` and a boolean mask over every slot 0..count-1 up to the
  longest live length, the FP8 cache dequantized (scale multiplied in) each layer; "folded": the
  same keys, the query heads that share a key/value head folded into the query length (no GQA
  left for SDPA to expand, so its memory-efficient kernel takes the mask) and the FP8 scales
  folded into the query and the output (one conversion of the cache, no multiply); "packed":
  only each slot's own keys gathered (the sum of the live lengths, not count x longest) into one
  packed run and FlashAttention's varlen kernel over it; "fp8kernel": a Triton kernel of ours
  (decode_kernel.py) reading each slot's own keys from the cache where they lie (FP8 converted in
  registers: no converted copy, no gather), split over the keys where rows are few and long.
- graphs: the decode step over fixed shapes (slot count and extent rounded up to buckets), one
  upload of its inputs, and on a GPU a CUDA graph captured per bucket on first use.
- activation_scale (FP8 weights only; engines/fp8_linear.py): "row", the activations of each
  product quantized to e4m3 with one scale per row (token); "tensor", one scale per product over
  all its rows (torch._scaled_mm's tensor-wise kernel, the weights' per-channel scales applied to
  its output), which a single outlier token coarsens for every row (docs/llama2-70b.md).
- fused (FP8 weights, row-wise activations): each product's input normalised, activated and
  quantized by one Triton kernel (fused_kernels.py: RMSNorm with the residual add before it, SiLU x
  up, the quantization alone), and the rotary embedding by one, where torch's kernels take five to
  a dozen small ones each; on a CPU without Triton, elementwise.py's torch functions of the same
  arithmetic. "auto" (the default): fused wherever the model's products are FP8 with row-wise
  activations by torch._scaled_mm (on one H200 a decode step of 173 slots took 46.4 ms fused
  against 59.5 ms), unfused elsewhere; the engine resolves it (its `options` say which ran).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from mlperf_harness.engines.fp8_linear import ACTIVATION_SCALES
from mlperf_harness.errors import HarnessError

PREFILLS = ("serial", "packed", "static", "chunked")
ATTENTIONS = ("gqa", "folded", "packed", "fp8kernel")
DEFAULT_PREFILL_TOKENS = 8192
FUSED_TEXT = {True: "1", False: "0", None: "auto"}


@dataclass(frozen=True)
class EngineOptions:
    # the defaults: the fastest variant one H200 timed (device_profile.py, docs/llama2-70b.md);
    # activation_scale "tensor" stepped 6% faster still, but how its one scale per product treats
    # the real model's outlier tokens cannot be measured here (no checkpoint), so "row" stays
    prefill: str = "packed"
    prefill_tokens: int = DEFAULT_PREFILL_TOKENS
    attention: str = "fp8kernel"
    graphs: bool = True
    activation_scale: str = "row"
    fused: bool | None = None  # None: "auto", resolved by the engine against its model

    def check(self) -> EngineOptions:
        if self.prefill not in PREFILLS:
            raise HarnessError(f"Llama engine: prefill {self.prefill!r} is not one of {PREFILLS}")
        if self.attention not in ATTENTIONS:
            raise HarnessError(
                f"Llama engine: attention {self.attention!r} is not one of {ATTENTIONS}"
            )
        if self.activation_scale not in ACTIVATION_SCALES:
            raise HarnessError(
                f"Llama engine: activation_scale {self.activation_scale!r} is not one of "
                f"{ACTIVATION_SCALES}"
            )
        if self.prefill == "static" and self.activation_scale == "tensor":
            raise HarnessError(
                "Llama engine: prefill static pads its prompt, which a per-tensor activation "
                "scale would see: use activation_scale row"
            )
        if self.prefill_tokens < 1:
            raise HarnessError(f"Llama engine: prefill_tokens {self.prefill_tokens} must be >= 1")
        return self

    @property
    def name(self) -> str:
        graphs = "graphs" if self.graphs else "eager"
        tensor = " tensor-scaled" if self.activation_scale == "tensor" else ""  # row: as before
        fused = {True: " fused", False: " unfused", None: ""}[self.fused]
        return f"prefill={self.prefill} attention={self.attention} {graphs}{tensor}{fused}"

    @property
    def text(self) -> str:
        """The form `parse` reads: how tensor parallelism's rank 0 tells its workers the options."""
        return (
            f"prefill={self.prefill},prefill_tokens={self.prefill_tokens},"
            f"attention={self.attention},graphs={int(self.graphs)},"
            f"activation_scale={self.activation_scale},fused={FUSED_TEXT[self.fused]}"
        )

    @classmethod
    def parse(cls, text: str) -> EngineOptions:
        """'prefill=packed,attention=folded,graphs=1,activation_scale=tensor,fused=0' (any subset; the
        rest default; fused takes 0, 1 or auto)."""
        known = [field.name for field in fields(cls)]
        options = cls()
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, _, value = item.partition("=")
            if key not in known or not value:
                raise HarnessError(
                    f"Llama engine options: {item!r} is not one of {', '.join(known)} as key=value"
                )
            if key == "graphs":
                if value not in ("0", "1"):
                    raise HarnessError(f"Llama engine options: graphs={value}: say 0 or 1")
                options = replace(options, graphs=value == "1")
            elif key == "fused":
                said = {text: fused for fused, text in FUSED_TEXT.items()}
                if value not in said:
                    raise HarnessError(f"Llama engine options: fused={value}: say 0, 1 or auto")
                options = replace(options, fused=said[value])
            elif key == "prefill_tokens":
                if not value.isdigit():
                    raise HarnessError(f"Llama engine options: prefill_tokens={value}: a count")
                options = replace(options, prefill_tokens=int(value))
            elif key == "prefill":
                options = replace(options, prefill=value)
            elif key == "activation_scale":
                options = replace(options, activation_scale=value)
            else:
                options = replace(options, attention=value)
        return options.check()
