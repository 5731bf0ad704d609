"""The torch Llama engine's arithmetic that needs no torch: its options' parsing and refusals, how
packed prefills cut prompts into forwards, the static prefill's length buckets, when a graph is
captured and replayed (against a stand-in for torch.cuda), how tensor parallelism splits each
weight (every row and column held by exactly one rank) and what rank 0 tells its workers (the
model and the options as arguments), a slot's cache size, the real-size
stand-in's workload (seeded, output lengths of mean about 294 within 2..1,024), and the engine
factory's refusals, one line each."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mlperf_harness.benchmarks.llama2_70b.engines import llama2_engine_factory
from mlperf_harness.benchmarks.llama2_70b.model import LLAMA2_70B, LlamaShape, weight_shapes
from mlperf_harness.benchmarks.llama2_70b.real_size import draw_workload
from mlperf_harness.engines.fp8_linear import ACTIVATION_SCALES
from mlperf_harness.engines.torch_llama.factory import ModelSource, kv_bytes_per_slot
from mlperf_harness.engines.torch_llama.module import Parallel, shard_rows
from mlperf_harness.engines.torch_llama.options import ATTENTIONS, PREFILLS, EngineOptions
from mlperf_harness.engines.torch_llama.static_prefill import PREFILL_BUCKETS, prefill_buckets
from mlperf_harness.engines.varlen_attention import token_groups
from mlperf_harness.errors import HarnessError


@pytest.mark.parametrize("world", [1, 2, 4, 8])
def test_tensor_parallel_shards_cover_every_weight_once(world: int) -> None:
    dims = weight_shapes(LLAMA2_70B)
    for projection, axis in (
        ("q_proj", 0), ("k_proj", 0), ("v_proj", 0), ("o_proj", 1),
        ("gate_proj", 0), ("up_proj", 0), ("down_proj", 1),
    ):  # fmt: skip
        size = dims[f"model.layers.0.self_attn.{projection}.weight"
                    if projection.endswith(("q_proj", "k_proj", "v_proj", "o_proj"))
                    else f"model.layers.0.mlp.{projection}.weight"][axis]  # fmt: skip
        held = np.zeros(size, np.int64)
        for rank in range(world):
            part = shard_rows(LLAMA2_70B, Parallel(rank, world))[projection][axis]
            held[part] += 1
        assert (held == 1).all(), projection
    with pytest.raises(HarnessError, match="kv_heads 8 divisible"):
        Parallel(0, 3).check(LLAMA2_70B)


def test_a_slots_cache_and_the_real_size_workload() -> None:
    # 80 layers x keys and values x 2,048 positions x 8 KV heads x 128 dims, one byte each
    assert kv_bytes_per_slot(LLAMA2_70B, 2048, 1, kv_fp8=True) == 335_544_320
    assert kv_bytes_per_slot(LLAMA2_70B, 2048, 2, kv_fp8=False) == 335_544_320
    workload = draw_workload(24_576)
    again = draw_workload(24_576)
    assert np.array_equal(workload.output_lengths, again.output_lengths)
    assert workload.output_lengths.min() >= 2 and workload.output_lengths.max() <= 1024
    assert 265 < workload.output_lengths.mean() < 324  # 294.45 +- 10%
    assert workload.prompt_lengths.max() <= 1024
    assert "forced" in workload.describe()


def test_the_factory_refuses_in_one_line(tmp_path: Path) -> None:
    def make(backend: str, real_size: bool) -> None:
        llama2_engine_factory(
            backend, tmp_path, None, slots=None, max_length=2048, eos_id=2, threads=None,
            real_size=real_size,
        )  # fmt: skip

    for backend, real_size, message in (
        ("onnxruntime", True, "real-size stand-in .* runs on --backend torch"),
        ("onnxruntime", False, "Llama 2's checkpoint: it runs on the torch backend"),
        ("torch", False, "loading Llama 2's checkpoint into it is not written yet"),
        ("null", False, "llama2-70b runs on --backend onnxruntime"),
    ):
        with pytest.raises(HarnessError, match=message) as error:
            make(backend, real_size)
        assert "\n" not in str(error.value)


def test_engine_options_parse_and_refuse_in_one_line() -> None:
    assert EngineOptions.parse("") == EngineOptions()
    options = EngineOptions.parse("prefill=packed, attention=folded,graphs=1,prefill_tokens=512")
    assert options == EngineOptions("packed", 512, "folded", True)
    assert options.name == "prefill=packed attention=folded graphs"
    tensor = EngineOptions.parse("attention=fp8kernel,activation_scale=tensor")
    assert tensor == EngineOptions(attention="fp8kernel", activation_scale="tensor")
    assert tensor.name == "prefill=packed attention=fp8kernel graphs tensor-scaled"
    fused = EngineOptions.parse("fused=1")
    assert fused == EngineOptions(fused=True) and fused.name.endswith(" graphs fused")
    assert EngineOptions.parse("fused=0").name.endswith(" graphs unfused")
    assert EngineOptions.parse("fused=auto") == EngineOptions() and EngineOptions().fused is None
    for text, message in (
        ("attention=flash", "attention 'flash' is not one of"),
        ("prefill=paged", "prefill 'paged' is not one of"),
        ("graphs=yes", "graphs=yes: say 0 or 1"),
        ("fused=2", "fused=2: say 0, 1 or auto"),
        ("activation_scale=block", "activation_scale 'block' is not one of"),
        ("prefill_tokens=0", "prefill_tokens 0 must be >= 1"),
        ("prefill_tokens=lots", "prefill_tokens=lots: a count"),
        ("prefill=static,activation_scale=tensor", "prefill static pads its prompt"),
        ("speed=11", "'speed=11' is not one of"),
        ("attention", "'attention' is not one of"),
    ):
        with pytest.raises(HarnessError, match=message) as error:
            EngineOptions.parse(text)
        assert "\n" not in str(error.value)


def test_a_static_prefill_has_a_bucket_for_every_prompt_the_engine_takes() -> None:
    assert prefill_buckets(1024) == PREFILL_BUCKETS
    assert prefill_buckets(48) == (48,)
    assert prefill_buckets(300) == (64, 96, 128, 192, 256, 300)
    # past the first bucket, at most a third of a bucket is padding
    for smaller, larger in itertools.pairwise(PREFILL_BUCKETS):
        assert (larger - (smaller + 1)) / larger < 1 / 3 + 1e-9


def test_prompts_cut_into_packed_forwards() -> None:
    assert token_groups([5, 3, 8, 1, 20, 2], 10) == [[0, 1], [2, 3], [4], [5]]
    assert token_groups([4], 1) == [[0]]
    assert token_groups([], 8) == []


def test_what_rank_0_tells_its_workers_reads_back() -> None:
    """Tensor parallelism's workers get the model and the options as arguments."""
    for prefill, attention, graphs, activations, fused in itertools.product(
        PREFILLS, ATTENTIONS, (False, True), ACTIVATION_SCALES, (False, True, None)
    ):
        if prefill == "static" and activations == "tensor":
            continue  # refused (the test above)
        options = EngineOptions(prefill, 24, attention, graphs, activations, fused)
        assert EngineOptions.parse(options.text) == options
    small = LlamaShape(layers=2, hidden=64, heads=8, kv_heads=2, inner=96, vocab_size=97)
    for source in (ModelSource(), ModelSource("bf16", seed=4), ModelSource(small=small, seed=3)):
        argv = dict(zip(source.argv()[::2], source.argv()[1::2], strict=True))
        again = ModelSource.from_argv(argv["--precision"], int(argv["--seed"]), argv.get("--small"))
        assert again == source
        assert again.kv_fp8 == (source.small is None)


def test_the_profile_times_each_tensor_scaled_variant_beside_its_row_form() -> None:
    """device_profile's default variants: each with tensor-wise FP8 activations has its row-wise
    twin there, so one GPU call shows the step time with and without it."""
    from mlperf_harness.engines.torch_llama.device_profile import VARIANTS

    parsed = [EngineOptions.parse(text) for text in VARIANTS]
    tensor = [o for o in parsed if o.activation_scale == "tensor"]
    assert {o.attention for o in tensor} == {"packed", "fp8kernel"}
    assert all(replace(o, activation_scale="row") in parsed for o in tensor)
    # the default (fused where its products allow) beside itself without the fused inputs
    assert EngineOptions(fused=False) in parsed and EngineOptions() in parsed


class _FakeCuda:
    """A stand-in for torch.cuda (no GPU here): records what replay_or_capture asks of it."""

    def __init__(self) -> None:
        self.events: list[str] = []
        fake = self

        class Graph:
            def replay(self) -> None:
                fake.events.append("replay")

        class Stream:
            def wait_stream(self, other: object) -> None:
                fake.events.append("wait")

        self.CUDAGraph, self.main = Graph, Stream()

    def current_stream(self) -> object:
        return self.main

    def stream(self, stream: object) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def graph(
        self, graph: object, pool: object, stream: object, capture_error_mode: str
    ) -> Iterator[None]:
        self.events.append(f"capture pool={pool} mode={capture_error_mode}")
        yield


def test_a_graph_is_captured_on_first_use_after_an_eager_warm_up_then_replayed() -> None:
    from types import SimpleNamespace

    from mlperf_harness.engines.torch_llama.captured import replay_or_capture

    cuda = _FakeCuda()
    torch = SimpleNamespace(cuda=cuda)
    graphs: dict[object, object] = {}
    stream = cuda.main

    def work() -> None:
        cuda.events.append("work")

    replay_or_capture(torch, graphs, 64, stream, lambda: "p", work)
    assert cuda.events == ["wait", "work", "wait", "capture pool=p mode=thread_local", "work"]
    assert list(graphs) == [64]
    cuda.events.clear()
    replay_or_capture(torch, graphs, 64, stream, lambda: "p", work)
    assert cuda.events == ["replay"]
    replay_or_capture(torch, graphs, 128, stream, lambda: "p", work)
    assert list(graphs) == [64, 128] and cuda.events.count("work") == 2


def test_the_faster_prefill_is_read_from_the_profiles_admissions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The device script's PREFILL=auto: the way whose admissions took least wall time in the
    profile records (a variant that failed, or timed none, does not count)."""
    from mlperf_harness.engines.torch_llama.device_profile import faster_prefill, main

    def rows(*walls: float) -> list[dict[str, float]]:
        return [{"prompt_tokens": 64 * (i + 1), "wall_ms": w} for i, w in enumerate(walls)]

    static: dict[str, Any] = {
        "options": "prefill=static attention=fp8kernel graphs",
        "admission": rows(40, 95),
    }
    record = {
        "variants": [
            {"options": "prefill=packed attention=fp8kernel graphs", "admission": rows(60, 90)},
            static,
            {
                "options": "prefill=serial attention=gqa eager",
                "admission": rows(1, 1),
                "error": "decode: RuntimeError: out of memory",
            },
            {"options": "prefill=packed attention=gqa eager"},
        ]
    }
    assert faster_prefill([record]) == "static"  # 135 ms against 150
    static["admission"] = rows(70, 95)
    assert faster_prefill([record]) == "packed"
    assert (
        faster_prefill([{"variants": [{"options": "prefill=packed attention=gqa eager"}]}]) is None
    )
    path = tmp_path / "profile_s32.json"
    path.write_text(json.dumps(record))
    assert main(["--faster_prefill", str(path)]) == 0
    assert capsys.readouterr().out == "packed\n"
    assert main(["--faster_prefill", str(tmp_path / "absent.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read a profile record" in err[0]
