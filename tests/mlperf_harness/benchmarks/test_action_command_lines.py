"""Every benchmark's actions (download_model, download_data, preprocess_data) share the run's
command-line conventions: a bad flag is one line and exit 2; --help lists the run's flag names."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from one_line_errors import one_error_line

from mlperf_harness.benchmarks.bert import actions as bert
from mlperf_harness.benchmarks.resnet50 import actions as resnet50
from mlperf_harness.benchmarks.unet3d import actions as unet3d

# (benchmark, action) -> (its entry point, flags its --help must list)
ACTIONS: dict[tuple[str, str], tuple[Callable[[list[str]], int], list[str]]] = {
    ("resnet50", "download_model"): (
        resnet50.main_download_model,
        ["--scratch_path", "--model_path", "--url", "--no_progress"],
    ),
    ("resnet50", "download_data"): (resnet50.main_download_data, ["--scratch_path", "--data_dir"]),
    ("resnet50", "preprocess_data"): (
        resnet50.main_preprocess_data,
        ["--scratch_path", "--data_dir", "--preprocessed_dir", "--formats"],
    ),
    ("bert", "download_model"): (
        bert.main_download_model,
        ["--scratch_path", "--model_path", "--int8", "--url", "--vocab_url", "--int8_url"],
    ),
    ("bert", "download_data"): (
        bert.main_download_data,
        ["--scratch_path", "--data_dir", "--url", "--no_progress"],
    ),
    ("bert", "preprocess_data"): (
        bert.main_preprocess_data,
        ["--scratch_path", "--model_path", "--data_dir", "--preprocessed_dir", "--no_progress"],
    ),
    ("3d-unet", "download_model"): (
        unet3d.main_download_model,
        ["--scratch_path", "--model_path", "--url", "--no_progress"],
    ),
    ("3d-unet", "download_data"): (unet3d.main_download_data, ["--scratch_path", "--data_dir"]),
    ("3d-unet", "preprocess_data"): (
        unet3d.main_preprocess_data,
        ["--scratch_path", "--data_dir", "--preprocessed_dir", "--no_progress"],
    ),
}


@pytest.mark.parametrize("action", list(ACTIONS), ids=lambda key: "-".join(key))
@pytest.mark.parametrize(
    "argv", [["--bogus"], ["--scratch_path"], ["positional"]], ids=["unknown", "no_value", "extra"]
)
def test_bad_flags_are_one_line_and_exit_2(
    action: tuple[str, str], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    main, _flags = ACTIONS[action]
    assert main(argv) == 2

    captured = capsys.readouterr()
    assert one_error_line(captured.err, action[1]).endswith("(see --help)")
    assert captured.out == ""


@pytest.mark.parametrize("action", list(ACTIONS), ids=lambda key: "-".join(key))
def test_help_lists_the_run_flag_names_and_exits_0(
    action: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    main, flags = ACTIONS[action]
    assert main(["--help"]) == 0

    out = capsys.readouterr().out
    assert out.startswith(f"usage: {action[1]} ")
    for flag in flags:
        assert flag in out
