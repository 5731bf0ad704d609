"""What every test of a setting that one benchmark's one backend owns checks (config/fields.py's
`benchmarks` and `backends`): --show_config shows it as the command line's, another benchmark and
the owner's other backend refuse it in one line (exit 2), and a value outside its choices is
refused, while a GPU config's own value gives way to --backend onnxruntime. DLRM-v2's --embedding
and RetinaNet's --nms."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.main import run_benchmark_cli


def check_owned_setting(
    capsys: pytest.CaptureFixture[str],
    scratch_path: Path,
    owner: Benchmark,
    name: str,
    values: tuple[str, str],
    bad_value: str,
    choices: str,
) -> None:
    """`--name values[0]` shown on an H200's config, `--name values[1]` refused by ResNet-50 and by
    the owner's onnxruntime backend, `--name bad_value` refused as not one of `choices`."""
    from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK as RESNET50

    scratch = ["--scratch_path", str(scratch_path)]
    argv = ["--show_config", "--system_name", "H200-SXM-141GBx1", f"--{name}", values[0]]
    assert run_benchmark_cli(owner, argv + scratch) == 0
    assert f"{name} = '{values[0]}'  # command line" in capsys.readouterr().out
    for benchmark, flags, why in (
        (RESNET50, ["--backend", "null"], f"{name} applies to {owner.name} only, not resnet50"),
        (owner, ["--backend", "onnxruntime"], "torch backend only, not --backend onnxruntime"),
    ):
        assert run_benchmark_cli(benchmark, [*flags, f"--{name}", values[1], *scratch]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and why in err[0], err
    assert run_benchmark_cli(owner, [f"--{name}", bad_value, *scratch]) == 2
    assert f"{name} must be one of {choices}" in capsys.readouterr().err
    # An H200 config's own value is its torch engine's: under --backend onnxruntime it is left out,
    # not refused (the user set nothing)
    argv = ["--show_config", "--system_name", "H200-SXM-141GBx1", "--backend", "onnxruntime"]
    assert run_benchmark_cli(owner, [*argv, *scratch]) == 0
    assert f"  {name} = " not in capsys.readouterr().out
