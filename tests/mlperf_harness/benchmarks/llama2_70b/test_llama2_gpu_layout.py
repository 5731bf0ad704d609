"""Where Llama2-70B's GPU engines go, without a GPU: the known systems' tensor parallelism (one
H200 holds the FP8 model, two H100s hold it together), the groups a host's GPUs form, and the
flag that overrides the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.benchmarks.llama2_70b import configs
from mlperf_harness.benchmarks.llama2_70b.engines import tensor_parallel_groups
from mlperf_harness.config.registry import DEFAULT_REGISTRY
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario


@pytest.mark.parametrize(
    ("system", "tensor_parallel"),
    [
        ("H200-SXM-141GBx1", 1),
        ("H200-SXM-141GBx8", 1),
        ("H100-SXM-80GBx2", 2),
        ("H100-SXM-80GBx8", 2),
    ],
)
@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SERVER, Scenario.INTERACTIVE])
def test_each_known_gpu_system_names_its_tensor_parallelism(
    system: str, tensor_parallel: int, scenario: Scenario
) -> None:
    settings = DEFAULT_REGISTRY.resolve(configs.NAME, scenario, system).settings
    assert (settings.backend, settings.precision) == ("torch", "fp8")
    assert settings.tensor_parallel == tensor_parallel


def test_the_cpu_config_runs_one_onnxruntime_engine() -> None:
    settings = DEFAULT_REGISTRY.resolve(configs.NAME, Scenario.OFFLINE, "a CPU").settings
    assert settings.backend == "onnxruntime" and settings.tensor_parallel is None


def test_a_hosts_gpus_form_groups_of_the_tensor_parallel_size() -> None:
    assert tensor_parallel_groups(1, 1) == [0]
    assert tensor_parallel_groups(8, 1) == list(range(8))
    assert tensor_parallel_groups(4, 2) == [0, 2]
    assert tensor_parallel_groups(8, 4) == [0, 4]
    with pytest.raises(HarnessError, match="does not divide this host's 3 GPUs"):
        tensor_parallel_groups(3, 2)
    with pytest.raises(HarnessError, match="torch sees none"):
        tensor_parallel_groups(0, 1)


def test_the_measured_rates_and_no_others() -> None:
    """One H200's three VALID rates are recorded; every other system and scenario, two H200s
    among them, times its engine at start."""
    resolve = DEFAULT_REGISTRY.resolve
    h200, two = "H200-SXM-141GBx1", "H200-SXM-141GBx2"
    assert resolve(configs.NAME, Scenario.OFFLINE, h200).settings.offline_expected_qps == 7.16
    assert resolve(configs.NAME, Scenario.SERVER, h200).settings.server_target_qps == 6.3
    assert resolve(configs.NAME, Scenario.INTERACTIVE, h200).settings.server_target_qps == 1.9
    assert resolve(configs.NAME, Scenario.OFFLINE, two).settings.offline_expected_qps is None
    assert resolve(configs.NAME, Scenario.OFFLINE, two).settings.tensor_parallel == 1
    assert resolve(configs.NAME, Scenario.SERVER, two).settings.server_target_qps is None
    for system in ("H200-SXM-141GBx4", "H100-SXM-80GBx2"):
        assert resolve(configs.NAME, Scenario.OFFLINE, system).settings.offline_expected_qps is None
        assert resolve(configs.NAME, Scenario.SERVER, system).settings.server_target_qps is None


def test_gpus_admit_in_batches_but_interactive_at_once_on_fewer_slots() -> None:
    """Offline and Server on GPUs prefill up to 8 prompts together (2,031 against 1,727 tokens/s
    on one H200) by the engine's default prefill; Interactive admits each prompt at once by the
    static prefill (a CUDA graph a length bucket), on 32 slots, for its 40 ms TPOT; a CPU run keeps
    the scheduler's default and its 8 slots."""
    resolve = DEFAULT_REGISTRY.resolve
    for system in ("H200-SXM-141GBx1", "H100-SXM-80GBx2"):
        for scenario in (Scenario.OFFLINE, Scenario.SERVER):
            settings = resolve(configs.NAME, scenario, system).settings
            assert (settings.admit_batch, settings.batch_size) == (8, None), (system, scenario)
            assert settings.prefill is None, (system, scenario)
        interactive = resolve(configs.NAME, Scenario.INTERACTIVE, system).settings
        assert (interactive.admit_batch, interactive.batch_size) == (None, 32), system
        assert interactive.prefill == "static", system
    cpu = resolve(configs.NAME, Scenario.OFFLINE, "AMD-EPYC_2c").settings
    assert (cpu.admit_batch, cpu.batch_size, cpu.prefill) == (None, 8, None)


def test_admit_batch_is_the_llms_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--admit_batch reaches a generative run's settings (the serving loop's scheduler:
    tests/mlperf_harness/generation/test_serving.py) and is refused in one line elsewhere."""
    from mlperf_harness.benchmarks.llama2_70b.benchmark import BENCHMARK
    from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK as RESNET50
    from mlperf_harness.cli.main import run_benchmark_cli

    scratch = ["--scratch_path", str(tmp_path)]
    argv = ["--show_config", "--admit_batch", "8", *scratch]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    assert "admit_batch = 8  # command line" in capsys.readouterr().out
    assert run_benchmark_cli(RESNET50, ["--backend", "null", "--admit_batch", "8", *scratch]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "admit_batch applies to" in err[0], err


def test_prefill_is_the_torch_llama_engines_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--prefill reaches a torch run's settings (the engine's options: static_prefill.py) and is
    refused in one line on ONNX Runtime (the CPU stand-in) and for a way the engine lacks."""
    from mlperf_harness.benchmarks.llama2_70b.benchmark import BENCHMARK
    from mlperf_harness.cli.main import run_benchmark_cli

    scratch = ["--scratch_path", str(tmp_path)]
    argv = ["--show_config", "--backend", "torch", "--prefill", "static", *scratch]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    assert "prefill = 'static'  # command line" in capsys.readouterr().out
    for wrong, message in (
        (["--backend", "onnxruntime", "--prefill", "static"], "prefill applies to"),
        (["--backend", "torch", "--prefill", "lazy"], "lazy"),
    ):
        assert run_benchmark_cli(BENCHMARK, ["--show_config", *wrong, *scratch]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    # An H200's Interactive config prefills statically on its torch engine; the CPU engine it
    # does not build leaves that out
    h200 = ["--show_config", "--scenario", "Interactive", "--system_name", "H200-SXM-141GBx1"]
    assert run_benchmark_cli(BENCHMARK, [*h200, *scratch]) == 0
    assert "prefill = 'static'  # mlperf_harness.benchmarks.llama2_70b.configs" in (
        capsys.readouterr().out
    )
    assert run_benchmark_cli(BENCHMARK, [*h200, "--backend", "onnxruntime", *scratch]) == 0
    assert "prefill =" not in capsys.readouterr().out
