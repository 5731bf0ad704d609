"""The sim backend: its latency table, its simulated GPUs' clocks, and the settings it runs with."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from one_line_errors import raised_line

from mlperf_harness.backends.registry import BackendOptions, create_runners, settings_layer
from mlperf_harness.backends.sim.runner import SimRunner, SimulatedGpu, sim_runners
from mlperf_harness.backends.sim.settings import sim_settings_layer
from mlperf_harness.backends.sim.table import RESNET50_H200_FP16, LatencyTable, load_table
from mlperf_harness.benchmarks.resnet50 import configs as resnet50_configs
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.loadgen.settings import Scenario


def test_the_preset_holds_the_cited_rates_and_interpolates_between_them() -> None:
    table = RESNET50_H200_FP16
    # docs/performance.md's raw engine rows come back exactly at their batch sizes.
    for batch, rate in {1: 2_937, 8: 14_210, 128: 29_652, 256: 30_423}.items():
        assert table.samples_per_second(batch) == pytest.approx(rate)
    # Between rows: linear in the batch; below the smallest: the smallest's time; above the
    # largest: chunks of the largest, as the torch runner runs them.
    middle = (table.batch_seconds(128) + table.batch_seconds(256)) / 2
    assert table.batch_seconds(192) == pytest.approx(middle)
    assert table.batch_seconds(0) == 0.0
    assert table.batch_seconds(300) == pytest.approx(
        table.batch_seconds(256) + table.batch_seconds(44)
    )


def test_a_table_file_and_its_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "table.json"
    path.write_text(
        json.dumps(
            {
                "source": "made up for a test",
                "reference_system": "H200-SXM-141GBx1",
                "latency_ms": {"4": 2.0, "1": 1.0},
                "output": {"shape": [2, 3], "dtype": "float16"},
            }
        )
    )
    table = load_table(str(path))
    assert table.batch_sizes == (1, 4) and table.seconds == (0.001, 0.002)
    assert table.output_shape == (2, 3) and table.output_dtype == "float16"
    assert "neither a preset" in raised_line(load_table, str(tmp_path / "missing.json"))
    path.write_text('{"latency_ms": {"1": 1.0}}')
    assert "not a sim latency table" in raised_line(load_table, str(path))
    path.write_text('{"reference_system": "x", "latency_ms": {"1": -1}}')
    assert "times must be positive" in raised_line(load_table, str(path))


def test_a_table_s_own_settings_win_over_its_reference_config(tmp_path: Path) -> None:
    path = tmp_path / "table.json"
    record = {
        "reference_system": "H200-SXM-141GBx1",
        "latency_ms": {"256": 8.0},
        "settings": {"server_target_qps": 1000, "server_batch_timeout_us": 2500},
    }
    path.write_text(json.dumps(record))
    flags = HarnessSettings(sim_gpus=2, sim_latency_table=str(path))
    server, _ = sim_settings_layer(resnet50_configs.NAME, Scenario.SERVER, flags)
    assert server.server_target_qps == pytest.approx(2000.0)  # scaled to the simulated GPUs
    assert server.server_batch_timeout_us == 2500 and isinstance(
        server.server_batch_timeout_us, int
    )
    assert server.batch_size == 128  # what the table does not name comes from the config
    record["settings"] = {"min_duration_ms": 1000}
    path.write_text(json.dumps(record))
    message = raised_line(sim_settings_layer, resnet50_configs.NAME, Scenario.SERVER, flags)
    assert "settings it cannot give: min_duration_ms" in message


def test_one_gpus_runners_share_its_clock_and_other_gpus_run_alongside() -> None:
    # 0.2 s a batch: margins that a loaded or slower machine's thread starts cannot eat.
    table = LatencyTable("test", "H200-SXM-141GBx1", (1,), (0.2,))
    # Two runners of one GPU: their batches run one after the other.
    runners = sim_runners(table, gpus=2, streams_per_gpu=2)
    gpu0, gpu1, gpu0_again = runners[0], runners[1], runners[2]
    assert isinstance(gpu0, SimRunner) and isinstance(gpu1, SimRunner)
    assert isinstance(gpu0_again, SimRunner)
    assert gpu0.device is gpu0_again.device  # GPU 0's two streams (spread order)
    assert gpu0.device is not gpu1.device
    # Each runner knows its device's index (a Triton server groups its runners by it).
    assert [runner.device_index for runner in runners] == [0, 1, 0, 1]
    for runner in runners:
        runner.activate()

    def elapsed(chosen: list[int]) -> tuple[float, float]:
        threads = [
            threading.Thread(target=runners[i].infer, args=(np.zeros((1, 0)),)) for i in chosen
        ]
        started, cpu = time.monotonic(), time.process_time()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - started, time.process_time() - cpu

    same_gpu, cpu = elapsed([0, 2])
    assert same_gpu >= 0.4  # serialised on GPU 0
    assert cpu < 0.1  # asleep, not spinning
    two_gpus, _ = elapsed([0, 1])
    assert two_gpus < 0.35  # GPU 0 and GPU 1 in parallel
    out = runners[1].infer_samples(EmptySampleStore(4, 4), [0, 1, 2])
    assert out.shape == (3, 1) and out.dtype == np.int64 and not out.any()


def test_the_device_clock_never_moves_back() -> None:
    gpu = SimulatedGpu(0)
    first = gpu.reserve(0.01)
    second = gpu.reserve(0.01)
    assert second == pytest.approx(first + 0.01)
    assert gpu.batches == 2 and gpu.busy_seconds == pytest.approx(0.02)


def test_a_sim_run_takes_the_reference_systems_batching_scaled_to_its_gpus() -> None:
    # The fp16 table's engine ran at the rates and timeout it carries; the H200's config has moved
    # on to the FP8 engine's, which the table's latencies do not simulate.
    fp16 = load_table("resnet50-h200-fp16").settings
    assert resnet50_configs.GPU_RATES["H200-SXM-141GBx1"][0] != fp16["offline_expected_qps"]
    layer, source = sim_settings_layer(
        resnet50_configs.NAME, Scenario.OFFLINE, HarnessSettings(sim_gpus=8)
    )
    assert layer.batch_size == 256 and layer.gpu_inference_streams == 2  # the config's batching
    assert layer.offline_expected_qps == pytest.approx(8 * fp16["offline_expected_qps"])
    assert layer.sim_latency_table == "resnet50-h200-fp16" and "H200-SXM-141GBx1" in source
    server, _ = sim_settings_layer(
        resnet50_configs.NAME, Scenario.SERVER, HarnessSettings(sim_gpus=4)
    )
    assert server.server_target_qps == pytest.approx(4 * fp16["server_target_qps"])
    assert server.server_batch_timeout_us == 6_000 and server.batch_size == 128
    assert settings_layer("onnxruntime", "resnet50", Scenario.OFFLINE, HarnessSettings()) is None
    message = raised_line(sim_settings_layer, "bert", Scenario.OFFLINE, HarnessSettings())
    assert "no latency table for bert" in message


def test_the_registry_makes_streams_times_gpus_runners() -> None:
    runners = create_runners(
        "sim",
        BackendOptions(sim_gpus=3, gpu_inference_streams=2, sim_latency_table="resnet50-h200-fp16"),
    )
    assert len(runners) == 6 and len({id(r) for r in runners}) == 6
    assert "needs a latency table" in raised_line(create_runners, "sim", BackendOptions())
