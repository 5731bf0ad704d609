"""RetinaNet's host costs (benchmarks/retinanet/host_costs.py): each host step of the Offline path
timed on real-size data, printed one row a step; the GPU copies only where torch sees a GPU. What
the figures are depends on the machine, so the tests check the steps and their arithmetic."""

from __future__ import annotations

import pytest

from mlperf_harness.benchmarks.retinanet import host_costs


def test_each_host_step_is_timed_on_real_size_images(capsys: pytest.CaptureFixture[str]) -> None:
    assert host_costs.main(["--batch", "2", "--samples", "3", "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["step", "ms", "a", "batch", "of", "2", "us", "an", "image", "GB/s"]
    steps = [line[:18].strip() for line in lines[1:]]
    assert steps[:3] == ["gather fp32", "gather fp16", "rows"]
    assert set(steps[3:]) <= {"copy in, pinned", "copy in, pageable", "copy out"}


def test_a_step_per_image_and_its_bandwidth() -> None:
    step = host_costs._step("gather fp32", 4.0, 8, 8 * 3 * 800 * 800 * 4)
    assert step["image_us"] == 500.0
    assert step["gb_per_s"] == pytest.approx(15.36)
    assert host_costs._step("rows", 0.1, 8)["gb_per_s"] is None


def test_a_batch_larger_than_the_images_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert host_costs.main(["--batch", "9", "--samples", "8"]) != 0
    assert "--batch 9 is more than --samples 8" in capsys.readouterr().err
