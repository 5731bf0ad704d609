"""GPT-J's summarisation samples: the reference prompt to the character, MLCommons' JSON layout
written and read back, and one line for each kind of malformed file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from one_line_errors import raised_line

from mlperf_harness.datasets.cnn_dailymail.samples import (
    INSTRUCTION,
    SummarySample,
    read_dataset,
    write_dataset,
)
from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_samples


def test_prompt_is_the_reference_template() -> None:
    sample = SummarySample(INSTRUCTION, "An {odd} article.", "A summary .")
    assert sample.prompt() == (
        "Below is an instruction that describes a task, paired with an input that provides "
        "further context. Write a response that appropriately completes the request.\n\n"
        "### Instruction:\nSummarize the following news article:\n\n"
        "### Input:\nAn {odd} article.\n\n### Response:"
    )


def test_written_set_reads_back_in_the_reference_layout(tmp_path: Path) -> None:
    samples = generate_samples(5, seed=2)
    path = write_dataset(tmp_path / "cnn_eval.json", samples)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert [list(entry) for entry in document] == [["instruction", "input", "output"]] * 5
    assert document[0]["input"] == samples[0].article
    assert path.read_text(encoding="utf-8").startswith('[\n    {\n        "instruction": ')
    dataset = read_dataset(path)
    assert dataset.samples == tuple(samples)
    assert dataset.prompts == [sample.prompt() for sample in samples]
    assert dataset.references == [sample.summary for sample in samples]
    assert len(dataset) == 5


def test_extra_fields_are_ignored(tmp_path: Path) -> None:
    entry = {"instruction": INSTRUCTION, "input": "Text.", "output": "Sum .", "id": "x"}
    (tmp_path / "set.json").write_text(json.dumps([entry]))
    assert read_dataset(tmp_path / "set.json").references == ["Sum ."]


GOOD = {"instruction": INSTRUCTION, "input": "An article.", "output": "A summary ."}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[{", "is not JSON"),
        ('{"data": []}', "not a list of"),
        ("[]", "holds no samples"),
        (json.dumps([GOOD, "text"]), "sample 1 is not an object"),
        (json.dumps([{**GOOD, "output": None}]), "sample 0: 'output' is not a string"),
        (json.dumps([{"instruction": INSTRUCTION, "output": "x"}]), "sample 0 has no 'input'"),
        (json.dumps([GOOD, {**GOOD, "input": " \n "}]), "sample 1 has an empty article ('input')"),
        (json.dumps([{**GOOD, "instruction": ""}]), "sample 0 has an empty instruction"),
    ],
)
def test_malformed_sets_are_one_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "set.json"
    path.write_text(content)
    message = raised_line(read_dataset, path)
    assert expected in message
    assert str(path) in message


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    message: Any = raised_line(read_dataset, tmp_path / "nothing.json")
    assert "cannot read summarisation data set" in message
