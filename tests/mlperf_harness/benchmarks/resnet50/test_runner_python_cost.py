"""The torch runner's path from LoadGen's sample indices to output rows through its round trips,
on the CPU: the GPU calls are stood in for (runner_python_cost's NoGpuGraph and NoGpuStream, whose
graphs bring back ten times each sample's row). Whole batches, partial ones on the smallest engine
that holds them, and more samples than the largest engine in chunks; a sample never loaded is
refused; and the same round trips answering latency queries from C++ under the native LoadGen.
Skipped where torch is not installed (CI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.resnet50 import runner_python_cost as cost
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import FixedBatches
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.paths import NATIVE
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode

pytestmark = needs_torch


@pytest.mark.parametrize("count", [1, 3, 4, 8, 11, 19])
def test_each_sample_s_output_comes_back_in_order(count: int) -> None:
    runner = cost.runner_without_gpu([4, 8], computing=True)
    store = cost.LoadedSamples()
    indices = [(7 * i + 2) % cost.SAMPLES for i in range(count)]

    outputs = runner.infer_samples(store, indices)

    rows = store.slots[indices]  # sample i lies in row SAMPLES - 1 - i
    assert outputs.shape == (count, 1)
    assert outputs[:, 0].tolist() == (rows * 10).tolist()


def test_a_sample_never_loaded_is_refused() -> None:
    runner = cost.runner_without_gpu([1], computing=True)
    with pytest.raises(HarnessError, match="never loaded"):
        runner.infer_samples(cost.LoadedSamples(unloaded=1), [0])


def test_the_measurement_prints_a_row_per_batch_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert cost.main(["--queries", "1200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["batch", "p50", "us", "p90"]
    for line, batch in zip(lines[1:], (1, 8), strict=True):
        fields = line.split()
        assert int(fields[0]) == batch
        p50, p90, p99 = (float(field) for field in fields[1:])
        assert 0 < p50 <= p90 <= p99


@pytest.mark.parametrize(
    ("scenario", "engines", "batch"),
    [(Scenario.SINGLE_STREAM, [1], 1), (Scenario.MULTI_STREAM, [1, 8], 8)],
    ids=["SingleStream", "MultiStream"],
)
def test_the_runners_round_trips_answer_latency_queries_from_cpp(
    scenario: Scenario, engines: list[int], batch: int, tmp_path: Path
) -> None:
    runner = cost.runner_without_gpu(engines, computing=True)
    store = cost.LoadedSamples()
    trips = cost.bind_inline_without_gpu(runner, store, label_offset=3)
    sut = HarnessSUT([runner], store, FixedBatches(batch), inline=True, loadgen_path=NATIVE,
                     round_trips=trips)  # fmt: skip
    library = SampleLibrary(cost.SAMPLES, cost.SAMPLES, store.load, store.unload)
    with sut:
        run_under_loadgen(sut, library, LoadgenSettings("resnet50", scenario, TestMode.ACCURACY_ONLY),
                          tmp_path)  # fmt: skip
    logged = {
        response.qsl_idx: int(np.frombuffer(response.data, dtype="<i4")[0])
        for response in read_accuracy_log(tmp_path / "mlperf_log_accuracy.json")
    }
    assert logged == {index: int(store.slots[index]) * 10 - 3 for index in range(cost.SAMPLES)}

    runner.deactivate()  # the buffers the C++ points into go: it is unbound first
    assert not trips.bound
