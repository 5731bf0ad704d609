"""What GPT-J's torch engine decides without torch: the cache's size and how many slots fill a GPU
(per precision), the precisions it runs, the host's book of slots and the step array it uploads,
the decode graphs' slot counts, the timing workload's seeded lengths, the device check's
--precisions and its table's row per precision, and the stand-in's weights read back from its
ONNX graph."""

from __future__ import annotations

import argparse

import numpy as np
import pytest
from one_line_errors import raised_line

from mlperf_harness.benchmarks.gptj.stand_in_model import (
    GPTJ_6B,
    GptjShape,
    gptj_model,
    random_weights,
    weight_shapes,
)
from mlperf_harness.datasets.cnn_dailymail.tokenizer import PROMPT_MAX_TOKENS
from mlperf_harness.engines.graph_buckets import graph_slot_counts
from mlperf_harness.engines.torch_gptj import device_check, timing_workload
from mlperf_harness.engines.torch_gptj.cache_layout import (
    CacheLayout,
    slot_bytes,
    slots_to_fill,
    token_bytes,
    weight_bytes,
)
from mlperf_harness.engines.torch_gptj.precision import check_precision
from mlperf_harness.engines.torch_gptj.slots import SlotBook
from mlperf_harness.engines.torch_gptj.timing_workload import draw_workload
from mlperf_harness.engines.torch_gptj.weights import stand_in_weights
from mlperf_harness.errors import HarnessError

SMALL = GptjShape(layers=2, hidden=48, heads=4, rotary_dim=4, vocab_size=37, inner=80)


def test_gptj_6b_sizes() -> None:
    assert token_bytes(GPTJ_6B, "fp16") == 458_752
    parameters = sum(int(np.prod(dims)) for dims in weight_shapes(GPTJ_6B).values())
    assert parameters == 6_050_882_784  # GPT-J 6B: "6B"
    assert weight_bytes(GPTJ_6B, "fp16") == 2 * parameters
    layout = CacheLayout(slots=1, beams=4, max_prompt=1919, max_new=128)
    assert layout.tokens_per_slot() == 1919 + 4 * 129
    assert slot_bytes(GPTJ_6B, layout, "fp16") == (1919 + 516) * 458_752


def test_fp8_sizes() -> None:
    # FP8: the projections one byte a weight plus a float32 scale per output channel; the cache,
    # embedding, lm_head, LayerNorms and biases stay fp16
    d, f, layers = GPTJ_6B.hidden, GPTJ_6B.inner, GPTJ_6B.layers
    projections = layers * (4 * d * d + 2 * d * f)
    scales = layers * (5 * d + f) * 4
    fp16 = weight_bytes(GPTJ_6B, "fp16")
    assert weight_bytes(GPTJ_6B, "fp8") == fp16 - projections + scales
    assert 6.4e9 < weight_bytes(GPTJ_6B, "fp8") < 6.5e9  # against 12.1 GB in fp16
    assert token_bytes(GPTJ_6B, "fp8") == token_bytes(GPTJ_6B, "fp16")


def test_a_precision_the_engine_lacks_is_one_line() -> None:
    assert check_precision("fp8") == "fp8"
    assert "runs fp32, fp16, bf16, fp8, not precision 'int8'" in raised_line(
        check_precision, "int8"
    )


def test_device_check_times_each_precision_in_a_row_of_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert device_check.precision_list("fp16, fp8") == ("fp16", "fp8")
    assert device_check.precision_list("fp16,fp8,fp8-static") == ("fp16", "fp8", "fp8-static")
    assert device_check.engine_precision("fp8-static") == "fp8"
    with pytest.raises(argparse.ArgumentTypeError, match="not precision 'int4'"):
        device_check.precision_list("fp16,int4")
    with pytest.raises(argparse.ArgumentTypeError, match="not precision 'fp16-static'"):
        device_check.precision_list("fp16-static")

    def row(precision: str, fp8: str | None) -> dict[str, object]:  # the keys print_table reads
        return {
            "precision": precision,
            "fp8_products": fp8,
            "samples_per_second": 1.0,
            "tokens_per_second_x69": 69.0,
            "slots": 2,
            "gpu_memory_gib": {"weights": 1.0},
            "decode_step_ms_by_slots": {2: 3.0},
            "gpu": "GPU",
            "workload": "w",
            "samples": 1,
            "seconds": 1.0,
            "generated_tokens_per_second": 1.0,
            "gpu_split_seconds": {"prefill": 0.4, "advance": 0.5, "idle": 0.1},
            "prompt_attention": "dense",
            "step_ms_by_prompt_kernel": {},
            "prefill_ms_per_prompt": 1.0,
            "prefill_tokens_per_second": 1.0,
        }

    static = row("fp8-static", "torch._scaled_mm, tensor-wise, static activation scales")
    static["static_scales"] = "calibrated in 9.0 s on seeded prompts"
    device_check.print_table(
        {
            "timing_fp16": row("fp16", None),
            "timing_fp8": row("fp8", "torch._scaled_mm"),
            "timing_fp8-static": static,
        }
    )
    out = capsys.readouterr().out
    assert "| fp16 | 1.0 | 69.0 | 2 | 1.0 | 3.0 |" in out
    assert "| fp8 | 1.0 | 69.0 | 2 | 1.0 | 3.0 |" in out
    assert "| fp8-static | 1.0 | 69.0 | 2 | 1.0 | 3.0 |" in out
    assert "| static activation scales | calibrated in 9.0 s on seeded prompts |" in out
    assert "| FP8 products | torch._scaled_mm |" in out
    split = "prefill 0.4, decode steps 0.5, GPU idle between calls 0.1"
    assert f"| GPU time split (s, CUDA events) | {split} |" in out


def test_slots_to_fill_and_refusals() -> None:
    one = slot_bytes(GPTJ_6B, CacheLayout(1, 4, 1919, 128), "fp16")
    gib = 2**30
    assert slots_to_fill(10 * one + 5 * gib, GPTJ_6B, 4, 1919, 128, "fp16", 5 * gib) == 10
    with pytest.raises(HarnessError, match="not enough for one GPT-J slot"):
        slots_to_fill(gib, GPTJ_6B, 4, 1919, 128, "fp16", gib)
    with pytest.raises(HarnessError, match="exceeds GPT-J's 2048 positions"):
        CacheLayout(1, 4, 1950, 128).check(GPTJ_6B)


def test_slot_book_step_input() -> None:
    book = SlotBook(slots=4, beams=2, max_prompt=10, max_new=3)
    book.fill([2, 0], [7, 10])
    assert book.highest_live() == 3
    step = book.step_input([2], np.array([[1, 1]]), np.array([[5, 6]]))
    # slot 2 advanced at step 0; the others scratch (step 3 = max_new) with identity parents
    assert step.tolist() == [
        [0, 0, 0, 1, 3],
        [0, 0, 0, 1, 3],
        [5, 6, 1, 1, 0],
        [0, 0, 0, 1, 3],
    ]
    assert book.step_input([2, 0], np.zeros((2, 2), np.int64), np.ones((2, 2), np.int64))[2, 4] == 1
    book.step_input([2], np.zeros((1, 2), np.int64), np.ones((1, 2), np.int64))
    with pytest.raises(HarnessError, match="already holds 3 generated tokens"):
        book.step_input([2], np.zeros((1, 2), np.int64), np.ones((1, 2), np.int64))
    with pytest.raises(HarnessError, match="slot 1 holds no sample"):
        book.step_input([1], np.zeros((1, 2), np.int64), np.ones((1, 2), np.int64))
    with pytest.raises(HarnessError, match="a parent outside"):
        book.step_input([0], np.full((1, 2), 2), np.ones((1, 2), np.int64))
    with pytest.raises(HarnessError, match="prompt of 11 tokens"):
        book.fill([1], [11])
    with pytest.raises(HarnessError, match="named twice"):
        book.release([0, 0])
    book.release([2])
    assert book.highest_live() == 1


def test_graph_slot_counts() -> None:
    assert graph_slot_counts(117) == [14, 29, 58, 117]
    assert graph_slot_counts(3) == [3]


def test_timing_workload_is_seeded_and_within_bounds() -> None:
    workload = draw_workload(4000, seed=5)
    again = draw_workload(4000, seed=5)
    assert np.array_equal(workload.prompt_lengths, again.prompt_lengths)
    assert np.array_equal(workload.output_lengths, again.output_lengths)
    assert (
        timing_workload.PROMPT_MAX_TOKENS == PROMPT_MAX_TOKENS
    )  # a copy: GPU hosts lack tokenizers
    assert workload.prompt_lengths.max() <= PROMPT_MAX_TOKENS
    assert workload.output_lengths.min() >= 30 and workload.output_lengths.max() <= 128
    assert 820 < workload.prompt_lengths.mean() < 920  # CNN-DailyMail's ~870
    assert 67 < workload.output_lengths.mean() < 71  # LoadGen's factor 69
    assert "forced" in workload.describe()
    prompts = workload.prompts(50400)
    assert [p.size for p in prompts[:3]] == workload.prompt_lengths[:3].tolist()


def test_stand_in_weights_round_trip_through_onnx() -> None:
    weights = random_weights(SMALL, seed=1)
    read, shape = stand_in_weights(gptj_model(weights, SMALL))
    assert shape == SMALL
    assert read.keys() == weights.keys()
    for name, array in weights.items():
        assert np.array_equal(read[name], array), name
