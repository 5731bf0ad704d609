"""The download_model, download_data and preprocess_data actions, on real files and a local server.

The model is served by an HTTP server on 127.0.0.1 (the official one is on Zenodo, out of reach
here); each check that an action put a file where the run looks asks the run's own code
(resources.choose_model, resources.choose_data, the run's default preprocessed directory).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from local_file_server import FileServer, closed_port_url, serve_file
from one_line_errors import one_error_line
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.benchmarks.resnet50 import resources
from mlperf_harness.benchmarks.resnet50.actions import (
    main_download_data,
    main_download_model,
    main_preprocess_data,
)
from mlperf_harness.benchmarks.resnet50.resources import default_preprocessed_dir
from mlperf_harness.datasets.imagenet.layout import FULL_VAL_COUNT
from mlperf_harness.datasets.imagenet.preprocess import (
    FP32,
    INT8_LINEAR,
    MANIFEST_NAME,
    PreprocessedSamples,
)
from mlperf_harness.datasets.model_sources import RESNET50_V1_5_ONNX, ModelSource

MODEL_NAME = RESNET50_V1_5_ONNX.filename
_BLOCK = 1 << 20  # download()'s read size: a resumable prefix is a whole number of these


def _tiny_onnx_model() -> bytes:
    """A real ONNX model (Y = X + W) over 1 MiB, so an interrupted download leaves a prefix."""
    weights = np.arange(300_000, dtype=np.float32).reshape(1, -1)
    graph = helper.make_graph(
        [helper.make_node("Add", ["X", "W"], ["Y"])],
        "tiny",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, weights.shape[1]])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, weights.shape[1]])],
        [numpy_helper.from_array(weights, "W")],
    )
    serialized: bytes = helper.make_model(graph).SerializeToString()
    return serialized


PAYLOAD = _tiny_onnx_model()
PAYLOAD_MD5 = hashlib.md5(PAYLOAD).hexdigest()
assert len(PAYLOAD) > _BLOCK + 1000


# --- a local HTTP server --------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FileServer]:
    with serve_file(MODEL_NAME, PAYLOAD) as running:
        yield running


def _source(server: FileServer) -> ModelSource:
    """The official source, moved to this server and checked against what it serves."""
    return replace(RESNET50_V1_5_ONNX, url=server.url, md5=PAYLOAD_MD5, sha256=None)


def _closed_port_url() -> str:
    return closed_port_url(MODEL_NAME)


def _model_dest(scratch: Path) -> Path:
    return scratch / "models" / "resnet50" / MODEL_NAME


# --- download_model -------------------------------------------------------------------------


def test_download_model_into_scratch_from_env_is_where_the_run_looks(
    server: FileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = tmp_path / "scratch"
    env = {"MLPERF_SCRATCH_PATH": str(scratch)}

    assert main_download_model(["--no_progress"], environ=env, source=_source(server)) == 0

    dest = _model_dest(scratch)
    assert dest.read_bytes() == PAYLOAD
    assert not dest.with_name(MODEL_NAME + ".part").exists()
    out = capsys.readouterr().out
    assert f"downloaded {RESNET50_V1_5_ONNX.description} to {dest} (md5 verified)" in out
    # The run finds the downloaded model instead of building the stand-in.
    choice = resources.choose_model(None, scratch)
    assert choice.path == dest
    assert not choice.stand_in


def test_scratch_path_flag_wins_over_env_and_url_flag_over_source(
    server: FileServer, tmp_path: Path
) -> None:
    env = {"MLPERF_SCRATCH_PATH": str(tmp_path / "from_env")}
    unreachable = replace(_source(server), url=_closed_port_url())
    argv = ["--scratch_path", str(tmp_path / "flag"), "--url", server.url, "--no_progress"]

    assert main_download_model(argv, environ=env, source=unreachable) == 0

    assert _model_dest(tmp_path / "flag").read_bytes() == PAYLOAD
    assert not (tmp_path / "from_env").exists()


def test_model_path_is_the_destination_file(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "elsewhere" / "my_resnet.onnx"
    argv = ["--model_path", str(dest), "--scratch_path", str(tmp_path / "s"), "--no_progress"]

    assert main_download_model(argv, source=_source(server)) == 0

    assert dest.read_bytes() == PAYLOAD
    assert not (tmp_path / "s").exists()


def test_already_present_and_verified_is_not_fetched_again(
    server: FileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scratch_path", str(tmp_path), "--no_progress"]
    assert main_download_model(argv, source=_source(server)) == 0
    capsys.readouterr()

    assert main_download_model(argv, source=_source(server)) == 0

    assert server.state.range_headers == [None]  # one request: the first run's
    out = capsys.readouterr().out
    assert f"{_model_dest(tmp_path)} is already there (md5 verified); nothing to download" in out


def test_checksum_mismatch_leaves_nothing_at_the_destination(
    server: FileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The official checksum against the file this server has: a mirror serving the wrong file.
    argv = ["--scratch_path", str(tmp_path), "--url", server.url, "--no_progress"]

    assert main_download_model(argv) == 2

    line = one_error_line(capsys.readouterr().err, "download_model")
    assert f"expected {RESNET50_V1_5_ONNX.md5}" in line
    # No file, no .part; only the download's lock file (mlperf_harness.scratch_lock) stays.
    left = _model_dest(tmp_path).parent.iterdir()
    assert [path.name for path in left] == [f".{MODEL_NAME}.lock"]


def test_wrong_file_already_there_is_kept_and_reported(
    server: FileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = _model_dest(tmp_path)
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"not the model")

    assert main_download_model(["--scratch_path", str(tmp_path)], source=_source(server)) == 2

    assert "exists but its md5 is" in one_error_line(capsys.readouterr().err, "download_model")
    assert dest.read_bytes() == b"not the model"  # the user's file is never deleted
    assert server.state.range_headers == []


def test_no_network_is_one_line_saying_where_to_put_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scratch_path", str(tmp_path), "--url", _closed_port_url()]

    assert main_download_model(argv) == 2

    captured = capsys.readouterr()
    line = one_error_line(captured.err, "download_model")
    assert "cannot download" in line
    assert f"put it at {_model_dest(tmp_path)} with md5 {RESNET50_V1_5_ONNX.md5}" in line
    assert captured.out == ""
    assert not _model_dest(tmp_path).exists()


def test_model_path_that_is_a_directory_is_refused_before_downloading(
    server: FileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_download_model(["--model_path", str(tmp_path)], source=_source(server)) == 2

    assert "is a directory" in one_error_line(capsys.readouterr().err, "download_model")
    assert server.state.range_headers == []


def test_interrupted_download_exits_130_and_the_next_run_resumes(
    server: FileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A real Ctrl-C needs a process of its own: SIGINT to a child blocked in the transfer.
    server.state.stall_after = _BLOCK + 1000
    script = tmp_path / "download.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from mlperf_harness.benchmarks.resnet50.actions import main_download_model
            from mlperf_harness.datasets.model_sources import RESNET50_V1_5_ONNX, ModelSource
            source = ModelSource(**{{**RESNET50_V1_5_ONNX.__dict__, "url": {server.url!r},
                                     "md5": {PAYLOAD_MD5!r}}})
            sys.exit(main_download_model(
                ["--scratch_path", {str(tmp_path)!r}, "--no_progress"], source=source))
            """
        )
    )
    part = _model_dest(tmp_path).with_name(MODEL_NAME + ".part")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        _wait_until(lambda: part.is_file() and part.stat().st_size >= _BLOCK, process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 130, err
    assert err.decode().splitlines() == ["download_model: interrupted"]
    assert out == b""
    assert part.stat().st_size == _BLOCK
    assert not _model_dest(tmp_path).exists()

    server.state.stall_after = None
    argv = ["--scratch_path", str(tmp_path), "--no_progress"]
    assert main_download_model(argv, source=_source(server)) == 0

    assert server.state.range_headers[-1] == f"bytes={_BLOCK}-"
    assert _model_dest(tmp_path).read_bytes() == PAYLOAD
    assert f"resuming from {_BLOCK} bytes" in capsys.readouterr().out


def _wait_until(condition: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the download did not start"
        time.sleep(0.01)


# --- download_data --------------------------------------------------------------------------


def _write_val_set(image_dir: Path, count: int, *, listed: int | None = None) -> None:
    """count small real JPEGs and a val_map.txt listing `listed` of them (default: all)."""
    image_dir.mkdir(parents=True)
    rng = np.random.default_rng(0)
    lines = []
    for i in range(listed or count):
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        if i < count:
            pixels = rng.integers(0, 256, size=(40 + 8 * i, 56, 3), dtype=np.uint8)
            assert cv2.imwrite(str(image_dir / name), pixels)
        lines.append(f"{name} {i % 1000}")
    (image_dir / "val_map.txt").write_text("\n".join(lines) + "\n")


def test_download_data_without_data_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_download_data([], environ={"MLPERF_SCRATCH_PATH": str(tmp_path)}) == 2

    line = one_error_line(capsys.readouterr().err, "download_data")
    assert f"{tmp_path / 'data'} does not exist" in line
    assert "https://image-net.org" in line


def test_download_data_with_images_missing_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_val_set(tmp_path / "data" / "imagenet", 3, listed=4)

    assert main_download_data(["--scratch_path", str(tmp_path)]) == 2

    line = one_error_line(capsys.readouterr().err, "download_data")
    assert "1 of 4 images" in line
    assert "ILSVRC2012_val_00000004.JPEG" in line


def test_download_data_with_a_subset_reports_it_as_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_val_set(tmp_path / "data" / "imagenet", 4)

    assert main_download_data(["--scratch_path", str(tmp_path)]) == 0

    out = capsys.readouterr().out
    assert f"partial image set: 4 images in {tmp_path / 'data' / 'imagenet'}" in out
    assert "https://image-net.org" in out
    # The run uses the same directory.
    assert resources.choose_data(None, tmp_path).val_set.image_dir == tmp_path / "data" / "imagenet"


def test_download_data_with_the_full_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 50,000 names, one inode: the layout check lists names and never reads the images.
    image_dir = tmp_path / "val"
    image_dir.mkdir()
    one = tmp_path / "one.JPEG"
    one.write_bytes(b"\xff\xd8\xff")
    names = [f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, FULL_VAL_COUNT + 1)]
    for name in names:
        os.link(one, image_dir / name)
    (image_dir / "val_map.txt").write_text("".join(f"{name} 0\n" for name in names))

    assert main_download_data(["--data_dir", str(image_dir)]) == 0

    out = capsys.readouterr().out
    assert f"ImageNet 2012 validation set: {FULL_VAL_COUNT} images in {image_dir}" in out
    assert "nothing to download" in out


# --- preprocess_data ------------------------------------------------------------------------


def test_preprocess_data_defaults_to_the_runs_directory_and_skips_on_a_second_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_val_set(tmp_path / "data" / "imagenet", 4)
    argv = ["--scratch_path", str(tmp_path), "--workers", "1", "--no_progress"]

    assert main_preprocess_data(argv) == 0

    first = capsys.readouterr().out
    # The directory the run computes for its default data, so the run finds the work done.
    data = resources.choose_data(None, tmp_path)
    output_dir = default_preprocessed_dir(tmp_path, data.val_set.image_dir)
    samples = PreprocessedSamples(output_dir)
    assert len(samples) == 4
    assert sorted(samples.formats) == [FP32, INT8_LINEAR]
    assert samples.load([3], INT8_LINEAR).shape == (1, 3, 224, 224)
    assert "4 processed, 0 skipped (up to date) of 4" in first
    assert f"manifest: {output_dir / MANIFEST_NAME}" in first

    assert main_preprocess_data(argv) == 0

    assert "0 processed, 4 skipped (up to date) of 4" in capsys.readouterr().out


def test_preprocess_data_with_explicit_dirs_and_one_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_val_set(tmp_path / "raw", 2)
    out_dir = tmp_path / "pre"
    argv = ["--data_dir", str(tmp_path / "raw"), "--preprocessed_dir", str(out_dir)]
    argv += ["--formats", "fp32", "--workers", "1", "--no_progress"]

    assert main_preprocess_data(argv, environ={"MLPERF_SCRATCH_PATH": str(tmp_path / "s")}) == 0

    assert list(PreprocessedSamples(out_dir).formats) == [FP32]
    assert not (out_dir / INT8_LINEAR).exists()
    assert not (tmp_path / "s").exists()
    assert "images/s, 1 worker)" in capsys.readouterr().out


def test_preprocess_data_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scratch_path", str(tmp_path), "--workers", "1", "--no_progress"]
    assert main_preprocess_data(argv) == 2
    assert "does not exist" in one_error_line(capsys.readouterr().err, "preprocess_data")

    _write_val_set(tmp_path / "data" / "imagenet", 1)
    assert main_preprocess_data([*argv, "--formats", "fp32,fp16"]) == 2
    line = one_error_line(capsys.readouterr().err, "preprocess_data")
    assert "unknown preprocessing format ['fp16']" in line


# --- the command line (the flags every action shares: benchmarks/test_action_command_lines.py) --


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--workers", "0"], "argument --workers: must be a positive integer, got '0'"),
        (["--workers", "two"], "argument --workers: must be a positive integer, got 'two'"),
        (["--formats", "fp32,"], "argument --formats: expected names separated by commas"),
    ],
)
def test_bad_preprocess_values_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_preprocess_data(argv) == 2

    assert message in one_error_line(capsys.readouterr().err, "preprocess_data")
