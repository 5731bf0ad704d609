"""split_k.split_count, the one rule both decode kernels split their keys by (Llama's and GPT-J's
wrap it with their own units and bounds; their interpreted tests check the wrappers), here
without torch or Triton."""

from __future__ import annotations

from mlperf_harness.engines.split_k import split_count


def test_units_that_fill_the_gpu_are_not_split() -> None:
    assert split_count(1384, 264, 2048, 256) == 1  # Llama: 173 rows x 8 heads on an H200
    assert split_count(264, 264, 2048, 256) == 1  # exactly enough


def test_too_few_units_split_to_make_up_the_difference() -> None:
    assert split_count(128, 264, 2048, 256) == 3  # ceil(264 / 128)
    # GPT-J: 28 slots x 16 heads against 4 x 132, blocks of 64 over 1,919 + 516 keys
    assert split_count(448, 528, 39, 4, 16) == 2


def test_a_chunk_keeps_its_least_length_and_the_count_its_most() -> None:
    assert split_count(8, 264, 2048, 256) == 8  # 33 wanted, 2048 / 256 = 8 chunks at most
    assert split_count(8, 264, 256, 256) == 1  # too short to split
    assert split_count(16, 528, 39, 4, 16) == 9  # 33 wanted, 39 blocks keep 4 each: 9
    assert split_count(16, 528, 400, 4, 16) == 16  # the most
    assert split_count(16, 528, 3, 4, 16) == 1  # never below 1
