"""The torch Llama engine's options (options.py) on the CPU where torch is installed: every
combination of prefill (serial, packed), decode attention (gqa, folded, packed, fp8kernel: here its
reference; llama_interpreted_attention.py runs its kernel interpreted) and fixed-shape
steps (graphs: on the CPU the same step runs eagerly) decodes greedily as the NumPy model does,
with more prompts than slots, in float32; with slot counts whose buckets leave rows without a
sample (their writes go to the scratch row); with the FP8 cache, each variant's logits are the
first engine's to float32 rounding (the scales folded elsewhere, the same numbers); FP8 weights
through torch._scaled_mm (where this torch has it on the CPU) match their dequantized product.

FP8 weights with tensor-wise activations (`activation_scale=tensor`): the engine's held logits
after serial prefills and eager steps equal a NumPy model whose products quantize the same way
(tiny_llama_engine.fp8_product), through the CPU's arithmetic and through this torch's
_scaled_mm; the engine decodes the tiny model in other variants too (where the rows of a product
differ, a packed prefill or a fixed-shape step's rows without a sample, so do its scales and
tokens); and the NumPy models say how far each form is from float32 and from the other.

torch is no dependency of the CPU build, so in CI these tests are skipped.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from tiny_llama_engine import (
    SHAPE,
    WEIGHTS,
    engine,
    fp8_product,
    numpy_held,
    numpy_tokens,
    workload,
)
from torch_needed import needs_torch

from mlperf_harness.engines.fp8_linear import quantize
from mlperf_harness.engines.torch_llama.options import (
    ATTENTIONS,
    DEFAULT_PREFILL_TOKENS,
    PREFILLS,
    EngineOptions,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.scheduler import generate

pytestmark = needs_torch
VARIANTS = [
    EngineOptions(prefill=p, attention=a, graphs=g, prefill_tokens=24)  # 24: several forwards
    for p, a, g in itertools.product(PREFILLS, ATTENTIONS, (False, True))
]


@pytest.mark.parametrize("slots", [3, 17])  # 17: buckets of 8 and 17 rows, rows without samples
@pytest.mark.parametrize("options", VARIANTS, ids=lambda o: o.name.replace(" ", "-"))
def test_every_variant_decodes_as_the_numpy_model(options: EngineOptions, slots: int) -> None:
    prompts, configs = workload()
    assert generate(engine(slots, options), prompts, configs) == numpy_tokens()


def test_fp8_cache_variants_give_the_first_engines_logits() -> None:
    prompts, _ = workload()
    slots = list(range(len(prompts)))
    held = {}
    for options in VARIANTS:
        if options.prefill == "chunked":  # whole prompts: a chunk cut off reads FP8 entries
            options = replace(options, prefill_tokens=DEFAULT_PREFILL_TOKENS)
        fp8 = engine(len(prompts), options, kv_fp8=True)
        fp8.prefill(slots, prompts)
        for step in range(6):
            tokens = np.full((len(slots), 1), step + 7, np.int64)
            fp8.advance(slots, np.zeros((len(slots), 1), np.int64), tokens)
        held[options.name] = fp8.held.numpy().copy()
    first = held[EngineOptions().name]  # the scales from the first prompt in every variant
    for name, logits in held.items():
        np.testing.assert_allclose(logits, first, rtol=1e-4, atol=1e-4, err_msg=name)


def test_fp8_weights_through_scaled_mm_match_their_dequantized_product() -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    weight = torch.randn(48, 64) * torch.linspace(0.01, 10, 48)[:, None]
    x = torch.randn(5, 64)
    fast = quantize(torch, weight, scaled_mm=True)
    try:
        got = fast(torch, x)
    except (RuntimeError, NotImplementedError) as error:
        pytest.skip(f"this torch has no CPU torch._scaled_mm with row-wise scales: {error}")
    slow = quantize(torch, weight, scaled_mm=False)(torch, x)
    # x quantized per row to e4m3 on the fast path: within e4m3's rounding of x's share
    assert torch.allclose(got, slow, rtol=0.07, atol=0.07 * float(slow.abs().max()))


def _steps() -> tuple[list[Any], list[Any]]:
    prompts, _ = workload()
    rng = np.random.default_rng(1)
    return prompts[:6], [rng.integers(0, SHAPE.vocab_size, 6) for _ in range(5)]


def _relative(a: Any, b: Any) -> float:
    """|a - b| over the spread of b's logits (their mean per row removed: softmax ignores it)."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b - b.mean(axis=-1, keepdims=True)))


@pytest.mark.parametrize("fp8", ["fallback", "scaled_mm"])
def test_tensor_scaled_fp8_engine_gives_the_numpy_models_logits(fp8: str) -> None:
    """Measured: within 2e-6 of the NumPy model's logits (spread about 1), both ways."""
    prompts, steps = _steps()
    options = EngineOptions(prefill="serial", attention="gqa", graphs=False)
    tensor = engine(len(prompts), replace(options, activation_scale="tensor"), fp8=fp8)
    slots = list(range(len(prompts)))
    try:
        tensor.prefill(slots, prompts)
    except (RuntimeError, NotImplementedError, ValueError) as error:
        pytest.skip(f"this torch has no CPU torch._scaled_mm with tensor-wise scales: {error}")
    held = [tensor.held.numpy().copy()]
    for tokens in steps:
        tensor.advance(slots, np.zeros(len(slots), np.int64), tokens[:, None].astype(np.int64))
        held.append(tensor.held.numpy().copy())
    expected = numpy_held(prompts, steps, fp8_product("tensor"))
    for got, want in zip(held, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)
    # the row form's CPU fallback models the weights alone: its logits are that model's
    row = engine(len(prompts), options, fp8="fallback")
    row.prefill(slots, prompts)
    np.testing.assert_allclose(
        row.held.numpy(), numpy_held(prompts, [], fp8_product("weights"))[0], rtol=0, atol=2e-5
    )


def test_fused_inputs_give_the_row_forms_numpy_logits() -> None:
    """fused=1 on the CPU (its torch reference, elementwise.py; the Triton kernels equal it:
    test_llama_fused_inputs.py): each product's input quantized per row as _scaled_mm's row form
    on a GPU, so the held logits after serial prefills and eager steps are a NumPy model's whose
    products do the same (unfused, the CPU's row form models the weights alone)."""
    prompts, steps = _steps()
    options = EngineOptions(prefill="serial", attention="gqa", graphs=False, fused=True)
    fused = engine(len(prompts), options, fp8="fallback")
    slots = list(range(len(prompts)))
    fused.prefill(slots, prompts)
    held = [fused.held.numpy().copy()]
    for tokens in steps:
        fused.advance(slots, np.zeros(len(slots), np.int64), tokens[:, None].astype(np.int64))
        held.append(fused.held.numpy().copy())
    for got, want in zip(held, numpy_held(prompts, steps, fp8_product("row")), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)


def test_fused_auto_fuses_where_products_quantize_each_row() -> None:
    """fused=auto (the default) resolves against the model, and the engine's options say which
    ran: float32 weights, the CPU's row form (weights alone) and tensor-wise activations unfused;
    the row form through _scaled_mm (forced on this CPU's torch) fused."""
    for fp8, options, fused in (
        ("", EngineOptions(), False),
        ("fallback", EngineOptions(), False),
        ("fallback", EngineOptions(activation_scale="tensor"), False),
        ("scaled_mm", EngineOptions(), True),
    ):
        assert engine(3, options, fp8=fp8).options == replace(options, fused=fused), (fp8, options)


def test_fused_inputs_need_fp8_weights_in_the_row_form() -> None:
    for options, fp8 in (
        (EngineOptions(fused=True), ""),
        (EngineOptions(fused=True, activation_scale="tensor"), "fallback"),
    ):
        with pytest.raises(HarnessError, match="fused=1 makes the FP8 products' row-wise") as error:
            engine(3, options, fp8=fp8)
        assert "\n" not in str(error.value)


def test_how_far_each_fp8_form_is_from_float32_on_the_tiny_model() -> None:
    """The tiny model's seeded random weights (hidden 64) put its logits close together, so FP8
    moves them a lot (measured, over a prefill and 5 steps of 6 slots, the distance from float32
    over the logits' spread: weights alone 9-14%, row-wise activations 13-20% (mean 16%),
    tensor-wise 14-22% (mean 17%); tensor-wise from row-wise 13-19%: two roundings of the same
    size, not one worse than the other). What this cannot say: how the real model's activations
    (a few very large values on a few tokens) fare; no checkpoint is here (docs/llama2-70b.md)."""
    prompts, steps = _steps()
    exact = numpy_held(prompts, steps, lambda a, name: a @ WEIGHTS[name].T)
    forms = {f: numpy_held(prompts, steps, fp8_product(f)) for f in ("weights", "row", "tensor")}
    distance = {
        f: [_relative(a, b) for a, b in zip(held, exact, strict=True)] for f, held in forms.items()
    }
    apart = [_relative(a, b) for a, b in zip(forms["tensor"], forms["row"], strict=True)]
    assert max(distance["weights"]) < 0.2
    assert max(distance["row"]) < 0.3 and max(distance["tensor"]) < 0.3
    assert np.mean(distance["tensor"]) < 1.25 * np.mean(distance["row"])
    assert max(apart) < 0.3


@pytest.mark.parametrize(
    "text, slots",
    [
        ("prefill=serial,attention=gqa,graphs=0", 3),
        ("prefill=packed,attention=fp8kernel,graphs=1", 17),  # fp8kernel: its reference here
    ],
)
def test_tensor_scaled_fp8_engine_decodes_the_tiny_model(text: str, slots: int) -> None:
    """Every sample decoded to its forced length. Its tokens against the float32 model's and the
    row form's (whose CPU fallback rounds the weights alone), measured: serial at 3 slots, 3 of 8
    samples equal to float32's (36 of 197 tokens before the first difference; the weights alone
    gave 3 and 39), 3 equal to the row form's; packed with fp8kernel at 17 slots, 3 and 3 (30
    and 22 tokens). Greedy tokens on this model's close logits part at FP8's first near-tie."""
    prompts, configs = workload()
    options = EngineOptions.parse(f"{text},activation_scale=tensor,prefill_tokens=24")
    got = generate(engine(slots, options, fp8="fallback"), prompts, configs)
    reference = numpy_tokens()
    assert [len(tokens) for tokens in got] == [len(tokens) for tokens in reference]
    assert sum(a == b for a, b in zip(got, reference, strict=True)) >= 2


@pytest.mark.parametrize("kv_fp8", [False, True])
def test_a_static_prefill_of_one_prompt_holds_what_a_packed_one_holds(kv_fp8: bool) -> None:
    """Each prompt prefilled alone into its slot, padded to its length bucket: the held logits and
    the slot's cache entries those of a packed prefill, the padding's writes in the scratch row
    alone. With the FP8 cache the first prompt goes packed (it sets the scales), the rest static."""
    prompts, _ = workload()
    slots = list(range(len(prompts)))
    static = engine(len(prompts), EngineOptions(prefill="static"), kv_fp8=kv_fp8)
    packed = engine(len(prompts), EngineOptions(prefill="packed"), kv_fp8=kv_fp8)
    assert static.static_prefill is not None and static.cache.calibrated != kv_fp8
    for slot, prompt in zip(slots, prompts, strict=True):
        static.prefill([slot], [prompt])
        packed.prefill([slot], [prompt])
    assert static.cache.calibrated
    np.testing.assert_allclose(static.held.numpy(), packed.held.numpy(), rtol=1e-5, atol=1e-5)
    scratch = static.cache.scratch
    for layer in range(SHAPE.layers):
        for ours, theirs in ((static.cache.keys, packed.cache.keys),
                             (static.cache.values, packed.cache.values)):  # fmt: skip
            mine, other = ours[layer][:scratch].numpy(), theirs[layer][:scratch].numpy()
            for slot, prompt in zip(slots, prompts, strict=True):
                n = prompt.size
                tolerance = 1 if kv_fp8 else 0  # e4m3 bytes: a neighbour where a sum rounds apart
                written = mine[slot, :n].astype(np.int64 if kv_fp8 else np.float64)
                expected = other[slot, :n].astype(np.int64 if kv_fp8 else np.float64)
                assert np.abs(written - expected).max() <= tolerance + (0 if kv_fp8 else 1e-5)
                assert not mine[
                    slot, n:
                ].any()  # nothing past the prompt: the padding went to scratch
    # the largest bucket is the engine's longest prompt (48): a 44-token prompt pads to 48 there
    assert static.static_prefill.buckets[-1] == static.max_prompt


@pytest.mark.parametrize(
    ("budget", "kv_fp8"),
    [(DEFAULT_PREFILL_TOKENS, False), (DEFAULT_PREFILL_TOKENS, True), (7, False)],
)
def test_a_chunked_prefill_joined_to_decode_steps_holds_what_a_packed_one_holds(
    budget: int, kv_fp8: bool
) -> None:
    """Two prompts queued while slot 0 decodes: each advance runs slot 0's token and the prompts'
    next chunks in one forward (at most `budget` prompt tokens). Slot 0's logits at every step, the
    prompts' last logits and every cache entry are a packed prefill's then a plain step's: whole
    prompts in one forward (float and FP8 cache), and prompts cut into chunks of 7 over several
    steps (a float cache: with FP8 a later chunk reads its earlier chunks' FP8 entries where the
    packed prefill attends the fresh ones, the difference of the FP8 cache itself)."""
    prompts, _ = workload()
    joined = engine(3, EngineOptions(prefill="chunked", prefill_tokens=budget), kv_fp8=kv_fp8)
    packed = engine(3, EngineOptions(prefill="packed"), kv_fp8=kv_fp8)
    assert joined.joins_prefill and not packed.joins_prefill
    for each in (joined, packed):
        each.prefill([0], [prompts[3]])
    joined.flush_prefills()  # with the FP8 cache the first prompt went packed (its scales)
    assert not joined.prefilling and joined.cache.calibrated
    for each in (joined, packed):
        each.prefill([1, 2], [prompts[7], prompts[1]])
    assert joined.prefilling == {1, 2}
    steps = 0
    one, token = np.zeros((1, 1), np.int64), np.full((1, 1), 9, np.int64)
    while joined.prefilling:
        joined.advance([0], one, token)
        packed.advance([0], one, token)
        steps += 1
        ours, theirs = joined.held.numpy()[0], packed.held.numpy()[0]
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)  # slot 0 at every step
    assert steps == (1 if budget > 61 else -(-(44 + 17) // budget))
    np.testing.assert_allclose(joined.held.numpy(), packed.held.numpy(), rtol=1e-5, atol=1e-5)
    for layer in range(SHAPE.layers):
        for ours, theirs in ((joined.cache.keys, packed.cache.keys),
                             (joined.cache.values, packed.cache.values)):  # fmt: skip
            # the slots' rows (a fixed-shape step also writes the scratch row)
            mine, other = (t[layer][:3].numpy().astype(np.float64) for t in (ours, theirs))
            assert np.abs(mine - other).max() <= (1 if kv_fp8 else 1e-5)  # e4m3: a neighbour


def test_a_chunked_prefill_asked_for_before_its_advance_runs_at_once() -> None:
    """Candidates (or an advance) naming a slot whose prompt is still queued run the queue first:
    the engine answers any caller, the scheduler's order only saves the forward."""
    prompts, _ = workload()
    joined = engine(2, EngineOptions(prefill="chunked", prefill_tokens=8))
    packed = engine(2, EngineOptions(prefill="packed"))
    for each in (joined, packed):
        each.prefill([0, 1], [prompts[3], prompts[1]])
    assert joined.prefilling == {0, 1}
    scores, block = np.zeros((2, 1), np.float32), np.zeros(2, bool)
    ours, theirs = (e.candidates([0, 1], scores, block, 4) for e in (joined, packed))
    assert not joined.prefilling
    np.testing.assert_array_equal(ours.tokens, theirs.tokens)
    np.testing.assert_allclose(ours.scores, theirs.scores, rtol=1e-5, atol=1e-5)
    joined.release([0, 1])  # a released slot's queued prompt is forgotten
    joined.prefill([0], [prompts[7]])
    joined.release([0])
    assert not joined.prefilling


def test_the_static_prefill_decodes_as_the_numpy_model_one_prompt_at_a_time() -> None:
    """One slot: every admission a call of one prompt, so every prefill after none is static."""
    prompts, configs = workload()
    one = engine(1, EngineOptions(prefill="static", attention="fp8kernel", graphs=True))
    assert generate(one, prompts, configs) == numpy_tokens()
