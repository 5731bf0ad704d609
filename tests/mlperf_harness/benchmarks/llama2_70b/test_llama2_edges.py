"""Llama2-70B's edge cases under the real LoadGen, with token latencies on (Server and Interactive):
a sample that ends on its first token (EOS right after it: two tokens, the least LoadGen accepts for
a time per output token) is answered with its first token reported, n_tokens 2 and no LoadGen
error, and passes TEST06's checks. Tiny random Llama graphs on ONNX Runtime."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape, llama_model, random_weights
from mlperf_harness.benchmarks.llama2_70b.session import ort_llama
from mlperf_harness.generation.engine import Float32Array, Int64Array
from mlperf_harness.generation.prompts import PromptStore
from mlperf_harness.generation.serving import GenerationSUT
from mlperf_harness.generation.step_engine import Cache, StepModelEngine
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.results import read_detail_log
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode
from mlperf_harness.submission.verify_test06 import check_log

TINY = LlamaShape(
    layers=1, hidden=32, heads=4, kv_heads=2, inner=48, vocab_size=40, max_positions=64
)
EOS = 2
PROMPTS = [np.random.default_rng(3).integers(3, 40, int(n)).astype(np.int64) for n in (1, 4, 9, 2)]


class EndsAfterFirst:
    """The tiny model with EOS as every next token: held back for the first (min_new_tokens 1),
    so each sample ends on its first token."""

    def __init__(self) -> None:
        self.model = ort_llama(llama_model(random_weights(TINY, 5), TINY).SerializeToString(), TINY)

    def empty_cache(self, batch: int) -> Cache:
        return self.model.empty_cache(batch)

    def __call__(
        self,
        input_ids: Int64Array,
        position_ids: Int64Array,
        attention_mask: Int64Array,
        past: Cache,
    ) -> tuple[Float32Array, Cache]:
        logits, cache = self.model(input_ids, position_ids, attention_mask, past)
        logits[..., EOS] += 1e4
        return logits, cache


@pytest.mark.parametrize("scenario", [Scenario.SERVER, Scenario.INTERACTIVE])
def test_a_sample_that_ends_on_its_first_token(scenario: Scenario, tmp_path: Path) -> None:
    config = llama2_config(EOS)
    store = PromptStore(PROMPTS, config, len(PROMPTS))
    engine = StepModelEngine(EndsAfterFirst(), EOS, slots=2, beams=1, max_length=1100)
    sut = GenerationSUT([lambda: engine], store, token_dtype="int32", report_first_tokens=True)
    settings = LoadgenSettings(
        model="llama2-70b",
        scenario=scenario,
        mode=TestMode.ACCURACY_ONLY,
        performance_sample_count=len(PROMPTS),
        server_target_qps=20.0,
    )
    library = SampleLibrary(len(PROMPTS), len(PROMPTS), store.load, store.unload)
    with sut:
        result = run_under_loadgen(sut, library, settings, tmp_path)
    assert result.scenario == scenario.value and not result.errors
    entries = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    assert sorted(entry["qsl_idx"] for entry in entries) == list(range(len(PROMPTS)))
    for entry in entries:
        tokens = np.frombuffer(bytes.fromhex(entry["data"]), np.int32).tolist()
        assert len(tokens) == 2 and tokens[1] == EOS != tokens[0]
        assert entry["token_count"] == 2
    checks = check_log(entries, "int32", EOS, first_tokens=True)
    assert checks.passed, checks.reasons
    assert not read_detail_log(tmp_path / "mlperf_log_detail.txt").errors
