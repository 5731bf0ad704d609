"""OpenOrca data sets as read: the stand-in's JSON in processorca's columns, MLCommons' pickle
(refused in one line without pandas), and the samples no run can take: an empty prompt and a
prompt over 1,024 tokens, one line each naming the file and the sample."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.datasets.open_orca.samples import (
    PROMPT_MAX_TOKENS,
    OrcaSample,
    read_dataset,
    write_dataset,
)
from mlperf_harness.errors import HarnessError


def _sample(tokens: int) -> OrcaSample:
    return OrcaSample("You are helpful.", "What is 2 + 2?", "4 .", tuple(range(1, tokens + 1)))


def test_a_written_set_reads_back(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "set.json", [_sample(5), _sample(PROMPT_MAX_TOKENS)])
    entry = json.loads(path.read_text())[0]
    assert (
        entry["input"] == "<s>[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nWhat is 2 + 2? [/INST]"
    )
    data = read_dataset(path)
    assert len(data) == 2 and data.references == ("4 .", "4 .")
    np.testing.assert_array_equal(data.prompts[0], [1, 2, 3, 4, 5])


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"tok_input": [], "output": "x"}], "sample 0: an empty prompt"),
        (
            [{"tok_input": [1], "output": "x"}, {"tok_input": list(range(1025)), "output": "x"}],
            "sample 1: a prompt of 1,025 tokens; Llama2-70B's are at most 1,024",
        ),
        ([{"tok_input": "abc", "output": "x"}], "tok_input is not a list of token ids"),
        ([{"tok_input": [1], "output": 3}], "sample 0's output is not text"),
        ({"tok_input": [1]}, "not a list of objects"),
        ([], "holds no samples"),
    ],
)
def test_bad_sets_are_one_line(tmp_path: Path, entries: object, message: str) -> None:
    path = tmp_path / "set.json"
    path.write_text(json.dumps(entries))
    with pytest.raises(HarnessError, match=message) as error:
        read_dataset(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_mlcommons_pickle_without_pandas_is_one_line(tmp_path: Path) -> None:
    try:
        import pandas  # type: ignore[import-untyped]  # noqa: F401  # pants: no-infer-dep
    except ImportError:
        pass
    else:
        pytest.skip("pandas is installed here")
    path = tmp_path / "open_orca_gpt4_tokenized_llama.sampled_24576.pkl"
    path.write_bytes(b"\x80\x04N.")
    with pytest.raises(HarnessError, match="reading it needs pandas"):
        read_dataset(path)
