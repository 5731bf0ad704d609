"""The torch runner's path from LoadGen's sample indices to output rows through its round trips,
on the CPU: the GPU calls are stood in for (runner_python_cost's NoGpuGraph and NoGpuStream, whose
graphs bring back ten times each sample's row). Whole batches, partial ones on the smallest engine
that holds them, and more samples than the largest engine in chunks; a sample never loaded is
refused. Skipped where torch is not installed (CI)."""

from __future__ import annotations

import importlib.util

import pytest

from mlperf_harness.benchmarks.resnet50 import runner_python_cost as cost
from mlperf_harness.errors import HarnessError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (CPU build)"
)


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
