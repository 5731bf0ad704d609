"""Llama2-70B's OpenOrca samples: MLCommons' processed data set, read, and the stand-in's written in
the same columns.

MLCommons' `processorca.py` turns the OpenOrca GPT-4 partition into a pandas DataFrame pickle
(`open_orca_gpt4_tokenized_llama.sampled_24576.pkl`; calibration: `...calibration_1000.pkl`) whose
rows are the samples in qsl_idx order, with the columns used here: `input` (the prompt: Llama 2's
chat template filled with `system_prompt` and `question`), `tok_input` (its token ids, BOS first,
then the id of "▁" appended: the reference's "first token" workaround) and `output` (the GPT-4
answer ROUGE is scored against). The reference SUT feeds `tok_input` as it is; so does the harness.
Reading the pickle needs pandas (imported only then). The stand-in's data set is a JSON list of
objects with the same columns (and `system_prompt`, `question`), which needs nothing.

Checked as read, one HarnessError line each: a file that is not this shape, a sample with no
prompt tokens, and a prompt over 1,024 tokens (processorca keeps prompts under 1,024 tokens, and
the benchmark's engines are sized for it: such a sample is not this benchmark's).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.errors import HarnessError

PROMPT_MAX_TOKENS = 1024  # processorca.py's --seqlen_limit: every prompt is shorter
TEMPLATE_WITH_SYSTEM = "<s>[INST] <<SYS>>\n{}\n<</SYS>>\n\n{} [/INST]"  # processorca.py's
TEMPLATE_NO_SYSTEM = "<s>[INST] {} [/INST]"
COLUMNS = ("input", "tok_input", "output")


def chat_prompt(system_prompt: str, question: str) -> str:
    """The prompt text processorca.py makes of a row."""
    if system_prompt:
        return TEMPLATE_WITH_SYSTEM.format(system_prompt, question)
    return TEMPLATE_NO_SYSTEM.format(question)


@dataclass(frozen=True)
class OrcaSample:
    system_prompt: str
    question: str
    output: str  # the reference answer
    tok_input: tuple[int, ...]

    @property
    def input(self) -> str:
        return chat_prompt(self.system_prompt, self.question)

    def as_json(self) -> dict[str, Any]:
        return {
            "system_prompt": self.system_prompt,
            "question": self.question,
            "input": self.input,
            "tok_input": list(self.tok_input),
            "output": self.output,
        }


@dataclass(frozen=True)
class OrcaDataset:
    source: str  # the file it was read from, for messages
    prompts: tuple[npt.NDArray[np.int64], ...]  # tok_input by qsl_idx
    references: tuple[str, ...]  # output by qsl_idx

    def __len__(self) -> int:
        return len(self.prompts)


def write_dataset(path: Path, samples: Sequence[OrcaSample]) -> Path:
    entries = [sample.as_json() for sample in samples]
    write_text_atomic(path, json.dumps(entries, indent=1, ensure_ascii=False) + "\n")
    return path


def read_dataset(path: Path) -> OrcaDataset:
    """Every sample of a processed OpenOrca file (MLCommons' pickle, or the stand-in's JSON)."""
    rows = _read_pickle(path) if path.suffix == ".pkl" else _read_json(path)
    if not rows:
        raise HarnessError(f"OpenOrca data set {path} holds no samples")
    prompts, references = [], []
    for number, row in enumerate(rows):
        prompts.append(_prompt(path, number, row.get("tok_input")))
        output = row.get("output")
        if not isinstance(output, str):
            raise HarnessError(
                f"malformed OpenOrca data set {path}: sample {number}'s output is not text"
            )
        references.append(output)
    return OrcaDataset(str(path), tuple(prompts), tuple(references))


def check_prompt(where: str, ids: npt.NDArray[np.int64]) -> None:
    if ids.size == 0:
        raise HarnessError(f"{where}: an empty prompt (no token ids to generate from)")
    if ids.size > PROMPT_MAX_TOKENS:
        raise HarnessError(
            f"{where}: a prompt of {ids.size:,} tokens; Llama2-70B's are at most "
            f"{PROMPT_MAX_TOKENS:,} (processorca.py's limit), so it is not this benchmark's sample"
        )


def _prompt(path: Path, number: int, value: Any) -> npt.NDArray[np.int64]:
    where = f"OpenOrca data set {path}: sample {number}"
    try:
        ids = np.asarray(list(value), np.int64)
    except (TypeError, ValueError):
        raise HarnessError(f"{where}: tok_input is not a list of token ids") from None
    if ids.ndim != 1:
        raise HarnessError(f"{where}: tok_input is not a flat list of token ids")
    check_prompt(where, ids)
    return ids


def _read_json(path: Path) -> list[dict[str, Any]]:
    try:
        document = json.loads(path.read_bytes())
    except OSError as error:
        raise HarnessError(
            f"cannot read OpenOrca data set {path}: {error.strerror or error}"
        ) from error
    except ValueError as error:
        raise HarnessError(f"OpenOrca data set {path} is not JSON: {error}") from error
    if not isinstance(document, list) or not all(isinstance(row, dict) for row in document):
        raise HarnessError(
            f"malformed OpenOrca data set {path}: not a list of objects with {', '.join(COLUMNS)}"
        )
    return document


def _read_pickle(path: Path) -> list[dict[str, Any]]:
    try:
        import pandas as pd  # type: ignore[import-untyped]  # pants: no-infer-dep
    except ImportError:
        raise HarnessError(
            f"{path} is MLCommons' pandas pickle: reading it needs pandas (pip install pandas), "
            "which the harness does not carry"
        ) from None
    try:
        frame = pd.read_pickle(path)
    except Exception as error:  # pickle raises anything a broken file gives it
        raise HarnessError(f"cannot read OpenOrca pickle {path}: {error}") from error
    missing = [column for column in COLUMNS if column not in getattr(frame, "columns", ())]
    if missing:
        raise HarnessError(f"OpenOrca pickle {path} lacks the column(s) {', '.join(missing)}")
    rows: list[dict[str, Any]] = frame[list(COLUMNS)].to_dict("records")
    return rows
