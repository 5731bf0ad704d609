"""GPT-J's summarisation samples: MLCommons' JSON layout, read and written, and the reference prompt.

MLCommons' GPT-J set (`cnn_eval.json`, made by `download_cnndm.py` from CNN-DailyMail 3.0.0's
validation split; `prepare-calibration.py` writes the calibration set the same way) is one JSON list:

    [{"instruction": "Summarize the following news article:", "input": "<article>",
      "output": "<highlights>"}, ...]

The reference (`dataset.py`) makes each sample's prompt by filling the Alpaca-style template
`PROMPT_TEMPLATE` with `instruction` and `input`, and scores against `output` as it is. A sample's
index in the list is its LoadGen `qsl_idx`.

The file is checked as it is read: anything that is not this shape, and a sample with no article or
no instruction to prompt with, is one HarnessError line naming the file and the sample.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.errors import HarnessError

INSTRUCTION = "Summarize the following news article:"
# The reference's "prompt_input" template, character for character: the prompt is part of the
# benchmark (the model was fine-tuned on it), so a space more changes the generated summaries.
PROMPT_TEMPLATE = (
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:"
)
FIELDS = ("instruction", "input", "output")


@dataclass(frozen=True)
class SummarySample:
    instruction: str
    article: str  # the JSON's "input"
    summary: str  # the JSON's "output": the reference summary (CNN-DailyMail's highlights)

    def prompt(self) -> str:
        # str.format substitutes the template's two fields only: braces inside an article stay.
        return PROMPT_TEMPLATE.format(instruction=self.instruction, input=self.article)

    def as_json(self) -> dict[str, str]:
        return {"instruction": self.instruction, "input": self.article, "output": self.summary}


@dataclass(frozen=True)
class SummaryDataset:
    source: str  # the file it was read from, for messages
    samples: tuple[SummarySample, ...]  # by qsl_idx

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def prompts(self) -> list[str]:
        return [sample.prompt() for sample in self.samples]

    @property
    def references(self) -> list[str]:
        return [sample.summary for sample in self.samples]


def read_dataset(path: Path) -> SummaryDataset:
    """Every sample of a GPT-J dataset JSON (MLCommons' or a generated one), in file order."""
    try:
        document = json.loads(path.read_bytes())
    except OSError as error:
        raise HarnessError(
            f"cannot read summarisation data set {path}: {error.strerror or error}"
        ) from error
    except ValueError as error:  # JSONDecodeError, or bytes that are not UTF-8
        raise HarnessError(f"summarisation data set {path} is not JSON: {error}") from error
    shape = 'a list of {"instruction", "input", "output"} objects (cnn_eval.json\'s layout)'
    if not isinstance(document, list):
        raise HarnessError(f"malformed summarisation data set {path}: not {shape}")
    if not document:
        raise HarnessError(f"summarisation data set {path} holds no samples")
    return SummaryDataset(
        source=str(path),
        samples=tuple(_sample(path, number, entry, shape) for number, entry in enumerate(document)),
    )


def write_dataset(path: Path, samples: Sequence[SummarySample]) -> Path:
    """Write samples as MLCommons' scripts write theirs (indent 4, non-ASCII kept as is)."""
    entries = [sample.as_json() for sample in samples]
    write_text_atomic(path, json.dumps(entries, indent=4, ensure_ascii=False) + "\n")
    return path


def _sample(path: Path, number: int, entry: Any, shape: str) -> SummarySample:
    where = f"malformed summarisation data set {path}: sample {number}"
    if not isinstance(entry, dict):
        raise HarnessError(f"{where} is not an object (the file must be {shape})")
    values = {}
    for field in FIELDS:
        if field not in entry:
            raise HarnessError(f"{where} has no {field!r}")
        if not isinstance(entry[field], str):
            raise HarnessError(f"{where}: {field!r} is not a string")
        values[field] = entry[field]
    # An empty article would still make a prompt (the template's words), and the model would
    # summarise nothing: a broken conversion, not a sample.
    for field, what in (("input", "article"), ("instruction", "instruction")):
        if not values[field].strip():
            raise HarnessError(
                f"summarisation data set {path}: sample {number} has an empty {what} "
                f"({field!r}), so no prompt to summarise"
            )
    return SummarySample(values["instruction"], values["input"], values["output"])
