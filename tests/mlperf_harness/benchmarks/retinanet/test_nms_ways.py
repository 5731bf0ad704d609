"""The NMS way of RetinaNet's GPU engine (engines/torch_retinanet/nms_ways.py) as the engine build
resolves it, without torch: a way is checked once, it is part of the engine's key (each way its own
engine), and the A/B's record (benchmarks/retinanet/postprocess_ab.py) prints as a table and one
summary line: each pair's verdict against what it needs (the eager ways bit for bit, compiled ones up
to rounding), untimed where the eager ways disagree."""

from __future__ import annotations

from pathlib import Path

import pytest
from owned_settings import check_owned_setting

from mlperf_harness.benchmarks.retinanet import postprocess_ab
from mlperf_harness.benchmarks.retinanet.detections_compare import DIFFER, EQUAL, ROUNDING
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.engines.torch_aot.engine import torch_engine_spec
from mlperf_harness.engines.torch_retinanet.build import NAME, RETINANET_BUILDER_MODULES, with_nms
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS, NMS_WAYS, check_nms
from mlperf_harness.errors import HarnessError


def spec() -> EngineSpec:
    """The key RetinaNet's fp16 engine of batch 8 has before its NMS way is added."""
    return torch_engine_spec(
        NAME,
        "0" * 64,
        "fp16",
        8,
        device="NVIDIA H200 sm_90",
        torch_version="2.11",
        builder_modules=RETINANET_BUILDER_MODULES,
    )


def test_an_unknown_way_is_refused_in_one_line() -> None:
    assert DEFAULT_NMS in NMS_WAYS
    with pytest.raises(HarnessError, match="scan or rounds, not 'greedy'"):
        check_nms("greedy")
    with pytest.raises(HarnessError):
        with_nms(spec(), "greedy")


def test_each_way_is_an_engine_of_its_own() -> None:
    keyed = {way: with_nms(spec(), way) for way in NMS_WAYS}
    assert len({s.key for s in keyed.values()}) == len(NMS_WAYS)
    for way, s in keyed.items():
        assert dict(s.options)["nms"] == way
        assert list(s.options) == sorted(s.options)  # options stay sorted by name
        assert EngineSpec.from_json(s.to_json()) == s


def record(eager_equal: bool, compiled_verdict: str = ROUNDING) -> dict[str, object]:
    checks = []
    for first, second, needed in postprocess_ab.comparisons():
        verdict = compiled_verdict if "compiled" in first else EQUAL if eager_equal else DIFFER
        checks.append(
            {
                "head": "dense 0",
                "pair": f"{first} / {second}",
                "needed": needed,
                "verdict": verdict,
                "passes": postprocess_ab.passes(verdict, needed),
                "line": f"{verdict} (2400 detections: ...)",
            }
        )
    ways = {
        "rounds": {"eager_ms": 9.0, "compiled_ms": 4.0},
        "scan": {"eager_ms": 3.0, "compiled_ms": 1.0},
    }
    return {
        "batch": 8,
        "classes": 264,
        "candidates": 5024,
        "device": "a GPU",
        "torch": "2.11",
        "checks": checks,
        "ways": ways if eager_equal else {},
        "before_nms": {"eager_ms": 2.0, "compiled_ms": 0.5},
    }


def test_what_each_pair_needs() -> None:
    assert postprocess_ab.comparisons() == [
        ("scan", "rounds", EQUAL),
        ("scan compiled", "scan", ROUNDING),
        ("rounds compiled", "rounds", ROUNDING),
        ("scan compiled", "rounds compiled", ROUNDING),
    ]
    assert postprocess_ab.passes(EQUAL, ROUNDING) and postprocess_ab.passes(ROUNDING, ROUNDING)
    assert not postprocess_ab.passes(ROUNDING, EQUAL)  # the eager ways: bit for bit
    assert not postprocess_ab.passes(DIFFER, ROUNDING)


def test_the_ab_prints_a_table_and_one_line() -> None:
    table = postprocess_ab.format_record(record(True))
    assert "  scan / rounds, dense 0 heads: equal (2400 detections: ...)" in table
    assert "scan compiled / scan, dense 0 heads: equal up to rounding" in table
    assert "FAILS" not in table
    assert "scan" in table and "rounds" in table and "top-k" in table
    line = postprocess_ab.summary(record(True))
    assert line == (
        "postprocess A/B, batch 8 compiled: rounds 4.00 ms, scan 1.00 ms; 4 of 4 comparisons pass "
        "(1 bit for bit, 3 equal up to rounding)"
    )


def test_a_compiled_way_that_differs_fails_and_eager_ways_that_differ_are_not_timed() -> None:
    table = postprocess_ab.format_record(record(True, DIFFER))
    assert (
        "scan compiled / scan, dense 0 heads: DIFFER (2400 detections: ...)  <- FAILS: needs "
        "equal up to rounding" in table
    )
    assert postprocess_ab.summary(record(True, DIFFER)).endswith(
        "1 of 4 comparisons pass (1 bit for bit, 0 equal up to rounding)"
    )
    table = postprocess_ab.format_record(record(False))
    assert "<- FAILS: needs equal" in table and "not timed" in table
    assert "not timed; 3 of 4 comparisons pass" in postprocess_ab.summary(record(False))


def test_the_way_is_retinanet_torchs_setting_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlperf_harness.benchmarks.retinanet.benchmark import BENCHMARK

    check_owned_setting(capsys, tmp_path, BENCHMARK, "nms", ("rounds", "scan"), "greedy",
                        "scan, rounds")  # fmt: skip


def _raw_record(**more: object) -> dict[str, object]:
    """A torch_raw record of a batch of 8 in 14 ms, 4.2 of them the postprocessing, and `more`."""
    return {
        "samples": 64,
        "runners": 2,
        "cuda_graphs": True,
        "engines": [{"samples_per_second": 571.0}],
        "graph": {"batch": 8, "ms": 14.0, "samples_per_second": 571.4},
        "postprocess": {"ms": 4.2, "share": 0.3, "nms": "scan"},
        **more,
    }


def test_the_raw_record_names_the_postprocessing_it_timed() -> None:
    from mlperf_harness.benchmarks.retinanet import torch_raw

    text = torch_raw.format_record(_raw_record())
    assert (
        "postprocessing alone (compiled, scan NMS): 4.20 ms per batch (30.0% of the engine)" in text
    )
    assert "cudnn.benchmark" not in text  # cuDNN's heuristics, as the harness runs


def test_the_raw_record_says_when_cudnn_timed_its_algorithms() -> None:
    from mlperf_harness.benchmarks.retinanet import torch_raw

    text = torch_raw.format_record(_raw_record(cudnn_benchmark=True))
    assert text.splitlines()[0] == (
        "64 images; 2 runners, CUDA graphs on, cuDNN's algorithms timed (cudnn.benchmark)"
    )


def test_the_raw_record_with_a_profile_prints_its_kernels_by_kind() -> None:
    from mlperf_harness.benchmarks.retinanet import torch_raw
    from mlperf_harness.engines.kernel_profile import kernel_kinds

    top = [
        {"gpu_ms_per_step": 6.5, "calls_per_step": 70, "name": "sm90_xmma_fprop_implicit_gemm"},
        {"gpu_ms_per_step": 2.0, "calls_per_step": 40, "name": "triton_poi_fused_add_relu_4"},
        {"gpu_ms_per_step": 1.0, "calls_per_step": 2, "name": "greedy_scan_kernel"},
    ]
    profile = {
        "replays": 10,
        "kernel_ms_per_step": 9.5,
        "event_ms_per_step": 14.0,
        "kinds_ms_per_batch": kernel_kinds(top),
        "top": top,
    }
    text = torch_raw.format_record(_raw_record(profile=profile))
    assert "graph replayed 10 times: kernels 9.50 ms a batch of 8 (the replay on CUDA events " \
        "14.00 ms)" in text  # fmt: skip
    assert (
        "by kind, ms a batch: Inductor fusion 2.00, convolution or GEMM 6.50, copy or fill 0.00, "
        "other 1.00" in text
    )
    assert "     6.500     70  sm90_xmma_fprop_implicit_gemm" in text


def test_the_engine_asks_the_network_for_each_levels_head_outputs_where_it_can() -> None:
    """build.head_output_names: the stand-in's layout gives each level's box deltas and class
    logits, (boxes, logits) level by level; a model whose output is made otherwise, its output."""
    from mlperf_harness.benchmarks.retinanet.stand_in import WIDTH
    from mlperf_harness.benchmarks.retinanet.stand_in_model import (
        OUTPUT_NAME,
        random_weights,
        retinanet_model,
    )
    from mlperf_harness.engines.torch_retinanet.build import head_output_names

    model = retinanet_model(random_weights(WIDTH, 0), WIDTH, "test", {})
    names = head_output_names(model)
    assert [name.split("_rows_")[0] for name in names] == ["bbox_pred", "cls_logits"] * 5
    assert [name.rsplit("_p", 1)[1] for name in names[::2]] == ["3", "4", "5", "6", "7"]
    final = next(node for node in model.graph.node if OUTPUT_NAME in node.output)
    final.attribute[0].i = 2  # not a concatenation over the levels
    assert head_output_names(model) == (OUTPUT_NAME,)
