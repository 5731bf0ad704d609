"""The ROUGE stand-ins' (GPT-J's, Llama's) stand_in entry point on the shared one
(stand_in_cli.run_stand_in): the record as JSON, then where the model, tokenizer and data are; no
"not valid" line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.rouge_stand_in import StandInFiles, stand_in_main


@dataclass(frozen=True)
class _Record:
    sha256: str


def _ensure(scratch: Path) -> StandInFiles[_Record]:
    return StandInFiles(
        scratch / "m.onnx", scratch / "tok", scratch / "d.json", scratch / "nltk", _Record("ab"),
        scratch / "stand_in.json",
    )  # fmt: skip


def test_prints_the_record_then_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert stand_in_main(["--scratch_path", str(tmp_path)], "GPT-J", _ensure) == 0
    record, rest = capsys.readouterr().out.split("}\n")
    assert json.loads(record + "}") == {"sha256": "ab"}
    assert (
        rest
        == f"model {tmp_path / 'm.onnx'}\ntokenizer {tmp_path / 'tok'}\ndata {tmp_path / 'd.json'}\n"
    )


def test_help_names_the_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    assert stand_in_main(["--help"], "Llama2-70B", _ensure) == 0
    assert "Build the Llama2-70B stand-in and print what it measured." in capsys.readouterr().out
