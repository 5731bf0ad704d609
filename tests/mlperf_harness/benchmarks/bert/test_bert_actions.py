"""BERT's download_model, download_data and preprocess_data actions, on real files and local servers.

Each published file is served by an HTTP server on 127.0.0.1 (the official ones are on Zenodo and
GitHub, out of reach here), and the sources are moved there with the md5 of what is served. Each
check that an action put a file where the run looks asks the run's own code (resources.choose_model,
resources.choose_data, resources.default_preprocessed_dir, the store's loader).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest
from local_file_server import FileServer, closed_port_url, serve_file
from one_line_errors import one_error_line
from onnx import TensorProto, helper, numpy_helper
from squad_samples import long_context, squad_document, vocab_tokens

from mlperf_harness.benchmarks.bert import resources
from mlperf_harness.benchmarks.bert.actions import (
    main_download_data,
    main_download_model,
    main_preprocess_data,
)
from mlperf_harness.benchmarks.bert.stand_in_model import INPUT_NAMES, OUTPUT_NAMES
from mlperf_harness.datasets.model_sources import (
    BERT_LARGE_FP32_ONNX,
    BERT_LARGE_INT8_ONNX,
    BERT_VOCAB,
    SQUAD_V1_1_DEV,
    ModelSource,
)
from mlperf_harness.datasets.squad.store import MANIFEST_NAME, load_preprocessed

_BLOCK = 1 << 20  # download()'s read size


def _bert_interface_onnx(input_names: tuple[str, str, str]) -> bytes:
    """A real ONNX model with BERT's inputs and outputs, over 1 MiB so that a download can resume."""
    ids, mask, _segments = input_names
    padding = np.zeros(300_000, dtype=np.float32)  # weight, so that the file is over 1 MiB
    sequence: list[str | int | None] = ["batch", 384]
    graph = helper.make_graph(
        [
            helper.make_node("Cast", [ids], [OUTPUT_NAMES[0]], to=TensorProto.FLOAT),
            helper.make_node("Cast", [mask], [OUTPUT_NAMES[1]], to=TensorProto.FLOAT),
        ],
        "bert_interface",
        [helper.make_tensor_value_info(name, TensorProto.INT64, sequence) for name in input_names],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, sequence) for name in OUTPUT_NAMES],
        [numpy_helper.from_array(padding, "padding")],
    )
    serialized: bytes = helper.make_model(graph).SerializeToString()
    return serialized


MODEL = _bert_interface_onnx(INPUT_NAMES)
INT8_MODEL = _bert_interface_onnx(resources.INT8_INPUT_NAMES)
VOCAB = "".join(f"{token}\n" for token in vocab_tokens()).encode()
SQUAD = json.dumps(
    squad_document(
        [
            (long_context(500), [("a", "where is the fox", ["gamma delta"])]),
            ("the quick brown fox", [("b", "what is quick", ["brown fox"])]),
        ]
    )
).encode()
assert len(MODEL) > _BLOCK + 1000


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


# --- local servers --------------------------------------------------------------------------


@dataclass
class Servers:
    model: FileServer
    vocab: FileServer
    int8: FileServer
    squad: FileServer

    def requests(self) -> list[int]:
        every = (self.model, self.vocab, self.int8, self.squad)
        return [len(server.state.range_headers) for server in every]


@pytest.fixture
def servers() -> Iterator[Servers]:
    with ExitStack() as stack:
        yield Servers(
            *(
                stack.enter_context(serve_file(source.filename, payload))
                for source, payload in (
                    (BERT_LARGE_FP32_ONNX, MODEL),
                    (BERT_VOCAB, VOCAB),
                    (BERT_LARGE_INT8_ONNX, INT8_MODEL),
                    (SQUAD_V1_1_DEV, SQUAD),
                )
            )
        )


def _served(source: ModelSource, server: FileServer, payload: bytes) -> ModelSource:
    """The official source, moved to this server and checked against what it serves."""
    return replace(source, url=server.url, md5=_md5(payload), sha256=None)


class ModelSources(TypedDict):
    """main_download_model's sources, by keyword."""

    model_source: ModelSource
    vocab_source: ModelSource
    int8_source: ModelSource


def _model_sources(servers: Servers) -> ModelSources:
    return ModelSources(
        model_source=_served(BERT_LARGE_FP32_ONNX, servers.model, MODEL),
        vocab_source=_served(BERT_VOCAB, servers.vocab, VOCAB),
        int8_source=_served(BERT_LARGE_INT8_ONNX, servers.int8, INT8_MODEL),
    )


def _squad_source(servers: Servers) -> ModelSource:
    return _served(SQUAD_V1_1_DEV, servers.squad, SQUAD)


def _model_dir(scratch: Path) -> Path:
    return scratch / "models" / "bert"


def _download_all(servers: Servers, scratch: Path) -> None:
    argv = ["--scratch_path", str(scratch), "--no_progress"]
    assert main_download_model(argv, **_model_sources(servers)) == 0
    assert main_download_data(argv, source=_squad_source(servers)) == 0


# --- download_model -------------------------------------------------------------------------


def test_download_model_into_scratch_from_env_is_where_the_run_looks(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = tmp_path / "scratch"
    env = {"MLPERF_SCRATCH_PATH": str(scratch)}

    assert main_download_model(["--no_progress"], environ=env, **_model_sources(servers)) == 0

    model = _model_dir(scratch) / "model.onnx"
    vocab = _model_dir(scratch) / "vocab.txt"
    assert model.read_bytes() == MODEL
    assert vocab.read_bytes() == VOCAB
    assert sorted(path.name for path in _model_dir(scratch).iterdir() if path.name[0] != ".") == [
        "model.onnx",
        "vocab.txt",
    ]  # no .part left, and no int8 model without --int8
    out = capsys.readouterr().out
    assert f"downloaded {BERT_LARGE_FP32_ONNX.description} to {model} (md5 verified)" in out
    assert f"downloaded {BERT_VOCAB.description} to {vocab} (md5 verified)" in out
    assert f"{vocab}: {len(vocab_tokens())} WordPiece tokens" in out
    # The run finds the model and its vocabulary instead of building the stand-in.
    choice = resources.choose_model(None, scratch)
    assert (choice.path, choice.vocab, choice.stand_in) == (model, vocab, False)
    assert choice.input_names == INPUT_NAMES


def test_int8_flag_adds_the_int8_model_beside_and_a_second_run_fetches_nothing(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scratch_path", str(tmp_path), "--int8", "--no_progress"]

    assert main_download_model(argv, **_model_sources(servers)) == 0

    int8 = _model_dir(tmp_path) / BERT_LARGE_INT8_ONNX.filename
    assert int8.read_bytes() == INT8_MODEL
    assert f"run the int8 model with --model_path {int8}" in capsys.readouterr().out
    # The run takes it by --model_path, with the same vocabulary beside it.
    choice = resources.choose_model(int8, tmp_path)
    assert choice.input_names == resources.INT8_INPUT_NAMES
    assert choice.vocab == _model_dir(tmp_path) / "vocab.txt"

    assert main_download_model(argv, **_model_sources(servers)) == 0

    assert servers.requests() == [1, 1, 1, 0]  # the first run's requests only
    out = capsys.readouterr().out
    assert out.count("is already there (md5 verified); nothing to download") == 3


def test_model_path_is_the_destination_and_url_flags_win_over_sources(
    servers: Servers, tmp_path: Path
) -> None:
    model = tmp_path / "elsewhere" / "my_bert.onnx"
    served = _model_sources(servers)
    unreachable = ModelSources(
        model_source=replace(served["model_source"], url=closed_port_url("model.onnx")),
        vocab_source=replace(served["vocab_source"], url=closed_port_url("vocab.txt")),
        int8_source=replace(served["int8_source"], url=closed_port_url("int8.onnx")),
    )
    argv = ["--model_path", str(model), "--scratch_path", str(tmp_path / "s"), "--int8"]
    argv += ["--url", servers.model.url, "--vocab_url", servers.vocab.url]
    argv += ["--int8_url", servers.int8.url, "--no_progress"]

    assert main_download_model(argv, **unreachable) == 0

    assert model.read_bytes() == MODEL
    assert (model.parent / "vocab.txt").read_bytes() == VOCAB
    assert (model.parent / BERT_LARGE_INT8_ONNX.filename).read_bytes() == INT8_MODEL
    assert not (tmp_path / "s").exists()
    assert resources.choose_model(model, tmp_path / "s").vocab == model.parent / "vocab.txt"


def test_an_interrupted_download_resumes(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a Ctrl-C leaves (benchmarks/resnet50/test_actions.py interrupts a real transfer).
    part = _model_dir(tmp_path) / "model.onnx.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(MODEL[:_BLOCK])

    argv = ["--scratch_path", str(tmp_path), "--no_progress"]
    assert main_download_model(argv, **_model_sources(servers)) == 0

    assert servers.model.state.range_headers == [f"bytes={_BLOCK}-"]
    assert (_model_dir(tmp_path) / "model.onnx").read_bytes() == MODEL
    assert not part.exists()
    assert f"resuming from {_BLOCK} bytes in {part}" in capsys.readouterr().out


def test_checksum_mismatch_leaves_nothing_and_names_what_is_left_to_fetch(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The official checksums against this server's files: a mirror serving the wrong files.
    argv = ["--scratch_path", str(tmp_path), "--no_progress"]
    argv += ["--vocab_url", servers.vocab.url, "--url", servers.model.url]

    assert main_download_model(argv) == 2

    line = one_error_line(capsys.readouterr().err, "download_model")
    assert f"has md5 {_md5(VOCAB)}, expected {BERT_VOCAB.md5}" in line
    model = _model_dir(tmp_path) / "model.onnx"
    assert (
        f"also not fetched: {servers.model.url} for {model} (md5 {BERT_LARGE_FP32_ONNX.md5})"
        in line
    )
    # No file, no .part; only the download's lock file (mlperf_harness.scratch_lock) stays.
    assert [path.name for path in _model_dir(tmp_path).iterdir()] == [".vocab.txt.lock"]


def test_no_network_is_one_line_saying_where_to_put_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scratch_path", str(tmp_path), "--int8"]
    for flag, source in (
        ("--url", BERT_LARGE_FP32_ONNX),
        ("--vocab_url", BERT_VOCAB),
        ("--int8_url", BERT_LARGE_INT8_ONNX),
    ):
        argv += [flag, closed_port_url(source.filename)]

    assert main_download_model(argv) == 2

    captured = capsys.readouterr()
    line = one_error_line(captured.err, "download_model")
    directory = _model_dir(tmp_path)
    assert "cannot download" in line
    assert f"put it at {directory / 'vocab.txt'} with md5 {BERT_VOCAB.md5}" in line
    for source in (BERT_LARGE_FP32_ONNX, BERT_LARGE_INT8_ONNX):
        assert f"for {directory / source.filename} (md5 {source.md5})" in line
    assert captured.out == ""
    assert not any(path.name[0] != "." for path in directory.iterdir())


def test_files_already_there_are_named_and_not_listed_as_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Fetched by hand on another machine: only what is still missing is named.
    directory = _model_dir(tmp_path)
    directory.mkdir(parents=True)
    (directory / "vocab.txt").write_bytes(VOCAB)
    vocab = replace(BERT_VOCAB, md5=_md5(VOCAB), url=closed_port_url("vocab.txt"))
    argv = ["--scratch_path", str(tmp_path), "--url", closed_port_url("model.onnx"), "--int8"]
    argv += ["--int8_url", closed_port_url("int8.onnx")]

    assert main_download_model(argv, vocab_source=vocab) == 2

    captured = capsys.readouterr()
    assert f"{directory / 'vocab.txt'} is already there (md5 verified)" in captured.out
    line = one_error_line(captured.err, "download_model")
    assert f"put it at {directory / 'model.onnx'} with md5 {BERT_LARGE_FP32_ONNX.md5}" in line
    assert "vocab.txt" not in line
    assert f"for {directory / BERT_LARGE_INT8_ONNX.filename} (md5" in line


def test_wrong_file_already_there_is_kept_and_reported(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model_dir(tmp_path) / "model.onnx"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"not the model")

    assert main_download_model(["--scratch_path", str(tmp_path)], **_model_sources(servers)) == 2

    assert "exists but its md5 is" in one_error_line(capsys.readouterr().err, "download_model")
    assert model.read_bytes() == b"not the model"  # the user's file is never deleted
    assert servers.model.state.range_headers == []


@pytest.mark.parametrize(
    "name, flags, message",
    [
        ("", [], "is a directory"),
        ("vocab.txt", [], "has the name of a file that goes beside the model"),
        (BERT_LARGE_INT8_ONNX.filename, ["--int8"], "has the name of a file that goes beside"),
    ],
    ids=["directory", "vocab_name", "int8_name"],
)
def test_bad_model_paths_are_refused_before_downloading(
    name: str,
    flags: list[str],
    message: str,
    servers: Servers,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--model_path", str(tmp_path / name) if name else str(tmp_path), *flags]

    assert main_download_model(argv, **_model_sources(servers)) == 2

    assert message in one_error_line(capsys.readouterr().err, "download_model")
    assert servers.requests() == [0, 0, 0, 0]


# --- download_data --------------------------------------------------------------------------


def test_download_data_into_scratch_is_where_the_run_looks(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _download_all(servers, tmp_path)

    squad_json = tmp_path / "data" / "squad" / "dev-v1.1.json"
    assert squad_json.read_bytes() == SQUAD
    out = capsys.readouterr().out
    assert f"downloaded {SQUAD_V1_1_DEV.description} to {squad_json} (md5 verified)" in out
    assert f"{squad_json}: 2 questions (not the full dev set of 10,570)" in out
    model = resources.choose_model(None, tmp_path)
    data = resources.choose_data(None, tmp_path, model)
    assert (data.squad_json, data.generated) == (squad_json, False)


def test_download_data_with_data_dir(servers: Servers, tmp_path: Path) -> None:
    argv = ["--data_dir", str(tmp_path / "squad_here"), "--scratch_path", str(tmp_path / "s")]

    assert main_download_data([*argv, "--no_progress"], source=_squad_source(servers)) == 0

    assert (tmp_path / "squad_here" / "dev-v1.1.json").read_bytes() == SQUAD
    assert not (tmp_path / "s").exists()


def test_download_data_errors_are_one_line(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert main_download_data(["--data_dir", str(a_file)], source=_squad_source(servers)) == 2
    line = one_error_line(capsys.readouterr().err, "download_data")
    assert f"--data_dir {a_file} is a file, not a directory" in line

    argv = ["--scratch_path", str(tmp_path), "--url", closed_port_url("dev-v1.1.json")]
    assert main_download_data(argv) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err, "download_data")
    where = tmp_path / "data" / "squad" / "dev-v1.1.json"
    assert f"put it at {where} with md5 {SQUAD_V1_1_DEV.md5}" in line
    assert captured.out == ""


# --- preprocess_data ------------------------------------------------------------------------


def test_preprocess_data_defaults_to_the_runs_directory_and_skips_on_a_second_run(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _download_all(servers, tmp_path)
    capsys.readouterr()
    argv = ["--scratch_path", str(tmp_path), "--no_progress"]

    assert main_preprocess_data(argv) == 0

    first = capsys.readouterr().out
    # The directory the run computes from its own choice of model and data.
    model = resources.choose_model(None, tmp_path)
    data = resources.choose_data(None, tmp_path, model)
    output_dir = resources.default_preprocessed_dir(tmp_path, data.squad_json, model.vocab)
    dataset = load_preprocessed(output_dir, vocab_path=model.vocab, squad_json=data.squad_json)
    assert len(dataset.examples) == 2
    features = len(dataset.features)
    assert features > 2  # the long context takes more than one window
    assert f"output in {output_dir}" in first
    assert f"2 questions, {features} features (made)" in first
    assert f"manifest: {output_dir / MANIFEST_NAME}" in first

    assert main_preprocess_data(argv) == 0

    assert f"2 questions, {features} features (already up to date)" in capsys.readouterr().out


def test_preprocess_data_with_explicit_paths(servers: Servers, tmp_path: Path) -> None:
    _download_all(servers, tmp_path / "downloaded")
    out_dir = tmp_path / "pre"
    argv = ["--model_path", str(_model_dir(tmp_path / "downloaded") / "model.onnx")]
    argv += ["--data_dir", str(tmp_path / "downloaded" / "data" / "squad")]
    argv += ["--preprocessed_dir", str(out_dir), "--no_progress"]

    assert main_preprocess_data(argv, environ={"MLPERF_SCRATCH_PATH": str(tmp_path / "s")}) == 0

    assert len(load_preprocessed(out_dir).examples) == 2
    assert not (tmp_path / "s").exists()


_MODEL_FILE = "models/bert/model.onnx"
_VOCAB_FILE = "models/bert/vocab.txt"
_SQUAD_FILE = "data/squad/dev-v1.1.json"


@pytest.mark.parametrize(
    "files, flags, message",
    [
        (
            {},
            [],
            "no model at {s}/models/bert/model.onnx: without one the run uses the stand-in, "
            "which preprocesses its own generated questions; run download_model first, or give "
            "--model_path",
        ),
        ({}, ["--model_path", "{s}/absent.onnx"], "model not found: {s}/absent.onnx"),
        ({_MODEL_FILE: MODEL}, [], "no vocab.txt beside {s}/models/bert/model.onnx"),
        (
            {_MODEL_FILE: MODEL, _VOCAB_FILE: VOCAB},
            [],
            "no dev-v1.1.json in {s}/data/squad; run download_data first, or give --data_dir",
        ),
        (
            {_MODEL_FILE: MODEL, _VOCAB_FILE: VOCAB},
            ["--data_dir", "{s}/elsewhere"],
            "no dev-v1.1.json in {s}/elsewhere; run download_data first",
        ),
        (
            {_MODEL_FILE: MODEL, _VOCAB_FILE: b"not a vocabulary\n", _SQUAD_FILE: SQUAD},
            [],
            "{s}/models/bert/vocab.txt is not a BERT WordPiece vocabulary",
        ),
        (
            {_MODEL_FILE: MODEL, _VOCAB_FILE: VOCAB, _SQUAD_FILE: b"{not json"},
            [],
            "SQuAD file {s}/data/squad/dev-v1.1.json is not JSON",
        ),
    ],
    ids=["no_model", "absent", "no_vocab", "no_squad", "no_squad_there", "bad_vocab", "bad_squad"],
)
def test_preprocess_data_errors_are_one_line(
    files: dict[str, bytes],
    flags: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, payload in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(payload)
    argv = ["--scratch_path", str(tmp_path), "--no_progress"]
    argv += [flag.format(s=tmp_path) for flag in flags]

    assert main_preprocess_data(argv) == 2

    line = one_error_line(capsys.readouterr().err, "preprocess_data")
    assert message.format(s=tmp_path) in line
    # Nothing half-made: at most the directory's lock file (mlperf_harness.scratch_lock).
    made = tmp_path / "preprocessed" / "squad"
    assert not made.exists() or all(path.name[0] == "." for path in made.iterdir())
