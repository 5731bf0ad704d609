"""GPT-J's download_model, download_data and preprocess_data actions, on real files and local
servers.

The published files (MLCommons' R2 bucket, nltk_data's GitHub branch) are out of reach here: a
small checkpoint directory (a tokenizer trained here, config.json, a shard index naming three shard
files) and a punkt_tab.zip in nltk's layout are served by HTTP servers on 127.0.0.1, with the md5s
of what they serve. Each check that an action put a file where the run looks uses the run's own
readers (load_tokenizer, check_checkpoint, SentenceSplitter, load_prompts, benchmark._prompts).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import cast

import pytest
from gptj_checkpoints import SMALL, config_json, write_pytorch_index
from local_file_server import closed_port_url, serve_file, serve_files
from one_line_errors import one_error_line, raised_line

from mlperf_harness.accuracy.punkt_tab import write_punkt_tab
from mlperf_harness.accuracy.rouge import SentenceSplitter
from mlperf_harness.benchmarks.gptj import benchmark
from mlperf_harness.benchmarks.gptj.actions import (
    main_download_data,
    main_download_model,
    main_preprocess_data,
)
from mlperf_harness.benchmarks.gptj.stand_in_model import weight_shapes
from mlperf_harness.benchmarks.rouge_runs import NLTK_DATA_DIR
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.datasets.cnn_dailymail import store
from mlperf_harness.datasets.cnn_dailymail.samples import SummarySample, write_dataset
from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_samples
from mlperf_harness.datasets.cnn_dailymail.tokenizer import (
    PROMPT_MAX_TOKENS,
    BpeTokenizer,
    load_tokenizer,
    train_tokenizer,
)
from mlperf_harness.datasets.model_sources import PUNKT_TAB_ZIP
from mlperf_harness.engines.torch_gptj.checkpoint_files import check_checkpoint

SAMPLES = generate_samples(12, seed=3)
# One article past the reference's 1,919-token cut.
LONG = SummarySample(SAMPLES[0].instruction, " ".join(["the storm moved north"] * 800), "a storm")


@pytest.fixture(scope="module")
def checkpoint_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A checkpoint directory's files by name: tokenizer, config, index and (empty) shards."""
    directory = tmp_path_factory.mktemp("checkpoint")
    train_tokenizer([s.prompt() for s in SAMPLES], directory, vocab_size=600)
    write_pytorch_index(directory, list(weight_shapes(SMALL)))
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture
def scratch(tmp_path: Path) -> dict[str, str]:
    return {"MLPERF_SCRATCH_PATH": str(tmp_path / "scratch")}


def _md5s(files: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.md5(data).hexdigest() for name, data in files.items()}


def _visible(directory: Path) -> set[str]:
    """The files a user sees (the download's lock files are hidden)."""
    return {p.name for p in directory.iterdir() if not p.name.startswith(".")}


def _checkpoint(tmp_path: Path, files: dict[str, bytes]) -> Path:
    directory = tmp_path / "model"
    directory.mkdir()
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return directory


@pytest.fixture(scope="module")
def punkt_zip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A punkt_tab.zip in the layout of nltk's package: punkt_tab/<language>/<files>."""
    nltk_data = tmp_path_factory.mktemp("nltk_data")
    write_punkt_tab(nltk_data)
    root = nltk_data / "tokenizers"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for path in sorted(root.rglob("*")):
            bundle.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


# --- download_model -------------------------------------------------------------------------


def test_download_model_fetches_every_file_where_the_run_looks(
    checkpoint_files: dict[str, bytes],
    scratch: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve_files(checkpoint_files) as server:
        argv = ["--url", server.url, "--no_progress"]
        assert main_download_model(argv, environ=scratch, md5s=_md5s(checkpoint_files)) == 0
    directory = Path(scratch["MLPERF_SCRATCH_PATH"]) / "models" / "gptj"
    assert _visible(directory) == set(checkpoint_files)
    assert check_checkpoint(directory).shape == SMALL
    out = capsys.readouterr().out
    assert "md5 verified" in out and "GPT-J checkpoint (2 blocks" in out
    # Again: nothing fetched (the server is gone), everything verified in place.
    argv = ["--url", closed_port_url("ckpt"), "--no_progress"]
    assert main_download_model(argv, environ=scratch, md5s=_md5s(checkpoint_files)) == 0
    assert "is already there" in capsys.readouterr().out


def test_download_model_resumes_a_cut_download(
    checkpoint_files: dict[str, bytes], tmp_path: Path, scratch: dict[str, str]
) -> None:
    directory = tmp_path / "ckpt"
    directory.mkdir()
    name = "vocab.json"
    (directory / f"{name}.part").write_bytes(checkpoint_files[name][:1000])
    with serve_files(checkpoint_files) as server:
        argv = ["--model_path", str(directory), "--url", server.url, "--no_progress"]
        assert main_download_model(argv, environ=scratch, md5s=_md5s(checkpoint_files)) == 0
        assert "bytes=1000-" in server.state.range_headers
    assert (directory / name).read_bytes() == checkpoint_files[name]


def test_download_model_offline_names_every_file_in_one_line(
    checkpoint_files: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "ckpt"
    argv = ["--model_path", str(directory), "--url", closed_port_url("ckpt"), "--no_progress"]
    assert main_download_model(argv, environ={}, md5s=_md5s(checkpoint_files)) == 2
    line = one_error_line(capsys.readouterr().err, "download_model")
    for name in checkpoint_files:
        assert name in line
    assert "r2-infra" in line  # where the md5s are published
    assert not directory.exists() or not _visible(directory)  # nothing half-written


def test_download_model_refuses_a_file_of_another_checksum(
    checkpoint_files: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md5s = {**_md5s(checkpoint_files), "config.json": "0" * 32}
    with serve_files(checkpoint_files) as server:
        argv = ["--model_path", str(tmp_path), "--url", server.url, "--no_progress"]
        assert main_download_model(argv, environ={}, md5s=md5s) == 2
    line = one_error_line(capsys.readouterr().err, "download_model")
    assert "config.json" in line and "expected 00000000" in line
    assert not (tmp_path / "config.json").exists()


def test_download_model_refuses_a_checkpoint_of_another_model(
    checkpoint_files: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {**checkpoint_files, "config.json": json.dumps(config_json(SMALL, "gpt2")).encode()}
    with serve_files(files) as server:
        argv = ["--model_path", str(tmp_path), "--url", server.url, "--no_progress"]
        assert main_download_model(argv, environ={}, md5s=_md5s(files)) == 2
    line = one_error_line(capsys.readouterr().err, "download_model")
    assert "is not a GPT-J checkpoint" in line and "'gpt2'" in line


# --- download_data --------------------------------------------------------------------------


def _data_argv(directory: Path, url: str) -> list[str]:
    return ["--data_dir", str(directory), "--punkt_url", url, "--no_progress"]


def test_download_data_unpacks_punkt_tab_and_checks_cnn_eval(
    punkt_zip: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_dataset(tmp_path / benchmark.DATA_FILE_NAME, SAMPLES)
    with serve_file("punkt_tab.zip", punkt_zip) as server:
        assert main_download_data(_data_argv(tmp_path, server.url), environ={}) == 0
    nltk_data = tmp_path / NLTK_DATA_DIR
    assert SentenceSplitter(nltk_data).split("Dr. Smith left. He came back.") == [
        "Dr. Smith left.",
        "He came back.",
    ]
    assert not (tmp_path / PUNKT_TAB_ZIP.filename).exists()  # unpacked, then removed
    out = capsys.readouterr().out
    assert "not verified: no published checksum" in out
    assert "12 samples (not the full validation set of 13,368)" in out
    # Again: nothing to fetch.
    assert main_download_data(_data_argv(tmp_path, closed_port_url("p.zip")), environ={}) == 0
    assert "is already there" in capsys.readouterr().out


def test_download_data_without_cnn_eval_says_how_to_make_it(
    punkt_zip: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_file("punkt_tab.zip", punkt_zip) as server:
        assert main_download_data(_data_argv(tmp_path, server.url), environ={}) == 2
    line = one_error_line(capsys.readouterr().err, "download_data")
    assert "download_cnndm.py" in line and str(tmp_path / "cnn_eval.json") in line
    assert (tmp_path / NLTK_DATA_DIR / "tokenizers" / "punkt_tab" / "english").is_dir()


def test_download_data_offline_is_one_line_for_both_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_download_data(_data_argv(tmp_path, closed_port_url("p.zip")), environ={}) == 2
    line = one_error_line(capsys.readouterr().err, "download_data")
    assert "nltk.download('punkt_tab', download_dir=" in line and "download_cnndm.py" in line
    assert not (tmp_path / NLTK_DATA_DIR).exists()


def test_download_data_refuses_a_zip_that_is_not_punkt_tab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_dataset(tmp_path / benchmark.DATA_FILE_NAME, SAMPLES)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("../escape.txt", "x")
    with serve_file("punkt_tab.zip", buffer.getvalue()) as server:
        assert main_download_data(_data_argv(tmp_path, server.url), environ={}) == 2
    line = one_error_line(capsys.readouterr().err, "download_data")
    assert "is not nltk's punkt_tab package" in line
    assert not (tmp_path / PUNKT_TAB_ZIP.filename).exists()
    assert not (tmp_path.parent / "escape.txt").exists()
    assert not (tmp_path / NLTK_DATA_DIR / "tokenizers" / "punkt_tab").exists()


def test_download_data_names_a_malformed_dataset(
    punkt_zip: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / benchmark.DATA_FILE_NAME).write_text('{"instruction": "not a list"}')
    with serve_file("punkt_tab.zip", punkt_zip) as server:
        assert main_download_data(_data_argv(tmp_path, server.url), environ={}) == 2
    line = one_error_line(capsys.readouterr().err, "download_data")
    assert "malformed summarisation data set" in line


# --- preprocess_data ------------------------------------------------------------------------


def _prepared(tmp_path: Path, files: dict[str, bytes], samples: list[SummarySample]) -> list[str]:
    model = _checkpoint(tmp_path, files)
    data_dir = tmp_path / "data"
    write_dataset(data_dir / benchmark.DATA_FILE_NAME, samples)
    return ["--model_path", str(model), "--data_dir", str(data_dir), "--no_progress"]


def _options(scratch: Path, preprocessed_dir: Path | None = None) -> RunOptions:
    # benchmark._prompts reads these two fields of the run's options.
    fields = {"scratch_path": scratch, "preprocessed_dir": preprocessed_dir}
    return cast(RunOptions, type("Options", (), fields)())


def test_preprocess_data_tokenizes_as_the_reference_and_the_run_reuses_it(
    checkpoint_files: dict[str, bytes],
    tmp_path: Path,
    scratch: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = _prepared(tmp_path, checkpoint_files, [*SAMPLES, LONG])
    assert main_preprocess_data(argv, environ=scratch) == 0
    out = capsys.readouterr().out
    assert "13 prompts" in out and "1 cut at 1,919" in out and "(made)" in out
    model, data_file = tmp_path / "model", tmp_path / "data" / benchmark.DATA_FILE_NAME
    scratch_path = Path(scratch["MLPERF_SCRATCH_PATH"])
    directory = benchmark.default_preprocessed_dir(scratch_path, data_file, model)
    tokenizer = load_tokenizer(model)
    got = store.load_prompts(directory).prompts()
    expected = [tokenizer.encode(s.prompt(), PROMPT_MAX_TOKENS) for s in [*SAMPLES, LONG]]
    assert [p.tolist() for p in got] == expected
    assert len(got[-1]) == PROMPT_MAX_TOKENS
    # The run reads the set (not the tokenizer) when it is there and made from the same files.
    choice = _choice(model, tokenizer, data_file)
    from_set = benchmark._prompts(choice, _options(scratch_path), 5)
    assert [p.tolist() for p in from_set] == expected[:5]
    # Again: kept.
    assert main_preprocess_data(argv, environ=scratch) == 0
    assert "(already up to date)" in capsys.readouterr().out


def _choice(model: Path, tokenizer: BpeTokenizer, data_file: Path) -> benchmark.GptjChoice:
    from mlperf_harness.accuracy.rouge import GPTJ_TARGET
    from mlperf_harness.datasets.cnn_dailymail.samples import read_dataset

    return benchmark.GptjChoice(
        model,
        tokenizer,
        read_dataset(data_file),
        None,
        stand_in=False,
        reference=GPTJ_TARGET,
        model_sha256=None,
        origin=str(model),
    )


def test_the_run_does_not_use_a_set_made_from_other_data(
    checkpoint_files: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _prepared(tmp_path, checkpoint_files, SAMPLES)
    preprocessed = tmp_path / "set"
    assert main_preprocess_data([*argv, "--preprocessed_dir", str(preprocessed)], environ={}) == 0
    data_file = tmp_path / "data" / benchmark.DATA_FILE_NAME
    write_dataset(data_file, SAMPLES[:6])  # the data changed since
    model = tmp_path / "model"
    choice = _choice(model, load_tokenizer(model), data_file)
    line = raised_line(benchmark._prompts, choice, _options(tmp_path, preprocessed), 6)
    assert "made from other inputs (source_sha256 differ)" in line


def test_preprocess_data_resumes_an_interrupted_run(
    checkpoint_files: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "CHUNK_SAMPLES", 4)
    model = _checkpoint(tmp_path, checkpoint_files)
    data_file = tmp_path / "cnn_eval.json"
    write_dataset(data_file, SAMPLES)
    tokenizer = load_tokenizer(model)
    inputs = store.made_from(data_file, model, PROMPT_MAX_TOKENS)
    from mlperf_harness.datasets.cnn_dailymail.samples import read_dataset

    dataset = read_dataset(data_file)
    calls: list[str] = []

    def interrupted(text: str) -> list[int]:
        calls.append(text)
        if len(calls) > 9:
            raise KeyboardInterrupt
        return tokenizer.encode(text, PROMPT_MAX_TOKENS)

    output = tmp_path / "set"
    with pytest.raises(KeyboardInterrupt):
        store.preprocess_prompts(dataset, interrupted, output, inputs, progress=False)
    assert not output.exists()  # no half-made set
    report = store.preprocess_prompts(
        dataset, lambda t: tokenizer.encode(t, PROMPT_MAX_TOKENS), output, inputs, progress=False
    )
    assert report.made and report.resumed_samples == 8  # two chunks of 4 kept
    expected = [tokenizer.encode(s.prompt(), PROMPT_MAX_TOKENS) for s in SAMPLES]
    assert [p.tolist() for p in store.load_prompts(output, inputs).prompts()] == expected
    assert not (tmp_path / ".set-partial").exists()


def test_preprocess_data_without_a_tokenizer_file_is_one_line(
    checkpoint_files: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {n: d for n, d in checkpoint_files.items() if n not in ("merges.txt", "tokenizer.json")}
    argv = _prepared(tmp_path, files, SAMPLES)
    assert (
        main_preprocess_data([*argv, "--preprocessed_dir", str(tmp_path / "set")], environ={}) == 2
    )
    line = one_error_line(capsys.readouterr().err, "preprocess_data")
    assert "has no merges.txt" in line
    assert not (tmp_path / "set").exists()


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[{", "is not JSON"),
        ('[{"instruction": "Summarize", "input": "text"}]', "has no 'output'"),
        ('[{"instruction": "Summarize", "input": "  ", "output": "x"}]', "has an empty article"),
    ],
)
def test_preprocess_data_names_a_bad_dataset(
    checkpoint_files: dict[str, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    words: str,
) -> None:
    argv = _prepared(tmp_path, checkpoint_files, SAMPLES)
    (tmp_path / "data" / benchmark.DATA_FILE_NAME).write_text(content)
    assert (
        main_preprocess_data([*argv, "--preprocessed_dir", str(tmp_path / "set")], environ={}) == 2
    )
    assert words in one_error_line(capsys.readouterr().err, "preprocess_data")
    assert not (tmp_path / "set").exists()


def test_a_prompt_of_no_tokens_is_one_line(tmp_path: Path) -> None:
    data_file = tmp_path / "cnn_eval.json"
    write_dataset(data_file, SAMPLES)
    from mlperf_harness.datasets.cnn_dailymail.samples import read_dataset

    inputs = {"preprocessing": "test"}
    line = raised_line(
        store.preprocess_prompts,
        read_dataset(data_file),
        lambda text: [],
        tmp_path / "set",
        inputs,
        progress=False,
    )
    assert "sample 0's prompt tokenizes to no tokens" in line
    assert not (tmp_path / "set").exists()


def test_preprocess_data_without_a_checkpoint_says_what_to_do(
    scratch: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_preprocess_data(["--no_progress"], environ=scratch) == 2
    assert "run download_model first" in one_error_line(capsys.readouterr().err, "preprocess_data")
