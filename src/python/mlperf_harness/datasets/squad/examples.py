"""Read a SQuAD v1.1 file (`dev-v1.1.json`) into one example per question.

    {"version": "1.1", "data": [{"title": ..., "paragraphs": [{"context": "...", "qas": [
        {"id": "...", "question": "...", "answers": [{"text": "...", "answer_start": 17}, ...]}
    ]}]}]}

A paragraph's context is split into words the way MLCommons' reference does (create_squad_data.py):
on space, tab, CR, LF and U+202F only, so that a word keeps any other Unicode space inside it. Answer
spans and predictions are expressed in these words, so the split must be exactly theirs.

The file is checked as it is read: anything that is not this shape is one HarnessError line naming
the file and the JSON path of what is wrong (e.g. `data[3].paragraphs[0].qas[2].id`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from mlperf_harness.errors import HarnessError

SQUAD_VERSION = "1.1"
# A word ends at the reference's separators only: not str.split()'s, which also splits on NBSP,
# U+2009 and other spaces.
_WORD = re.compile("[^ \t\r\n\u202f]+")


@dataclass(frozen=True)
class Answer:
    text: str
    answer_start: int  # character offset in the context


@dataclass(frozen=True)
class SquadExample:
    """One question, with the words of its paragraph (shared by the paragraph's questions)."""

    qas_id: str
    question_text: str
    doc_tokens: tuple[str, ...]
    answers: tuple[Answer, ...]
    paragraph_index: int  # which paragraph of the file, in file order: questions share its words


def split_context(text: str) -> tuple[str, ...]:
    """The context's words: maximal runs of characters other than the reference's separators."""
    return tuple(_WORD.findall(text))


def read_examples(path: Path) -> list[SquadExample]:
    """Every question of the file, in file order."""
    try:
        document = json.loads(path.read_bytes())
    except OSError as error:
        raise HarnessError(f"cannot read SQuAD file {path}: {error.strerror or error}") from error
    except ValueError as error:  # JSONDecodeError, or bytes that are not UTF-8
        raise HarnessError(f"SQuAD file {path} is not JSON: {error}") from error
    return _Reader(path).examples(document)


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path

    def examples(self, document: Any) -> list[SquadExample]:
        self._expect(document, dict, "the top level")
        version = document.get("version")
        if version is not None and version != SQUAD_VERSION:
            # SQuAD 2.0 has unanswerable questions, which neither MLPerf nor this scorer handles.
            raise HarnessError(
                f"{self.path} is SQuAD version {version!r}; MLPerf's BERT uses SQuAD "
                f"{SQUAD_VERSION} (dev-v1.1.json)"
            )
        examples: list[SquadExample] = []
        paragraph_index = 0
        for a, article in enumerate(self._list(document, "data", "")):
            self._expect(article, dict, f"data[{a}]")
            for p, paragraph in enumerate(self._list(article, "paragraphs", f"data[{a}]")):
                where = f"data[{a}].paragraphs[{p}]"
                self._expect(paragraph, dict, where)
                doc_tokens = split_context(self._str(paragraph, "context", where))
                for q, qa in enumerate(self._list(paragraph, "qas", where)):
                    examples.append(
                        self._example(qa, f"{where}.qas[{q}]", doc_tokens, paragraph_index)
                    )
                paragraph_index += 1
        if not examples:
            raise HarnessError(f"SQuAD file {self.path} holds no questions")
        return examples

    def _example(
        self, qa: Any, where: str, doc_tokens: tuple[str, ...], paragraph_index: int
    ) -> SquadExample:
        self._expect(qa, dict, where)
        answers = []
        for n, answer in enumerate(self._list(qa, "answers", where)):
            at = f"{where}.answers[{n}]"
            self._expect(answer, dict, at)
            answers.append(
                Answer(self._str(answer, "text", at), self._int(answer, "answer_start", at))
            )
        if not answers:
            # Every v1.1 question has answers; the metric takes the best over them, so none is an error.
            raise HarnessError(f"malformed SQuAD file {self.path}: {where}.answers is empty")
        return SquadExample(
            qas_id=self._str(qa, "id", where),
            question_text=self._str(qa, "question", where),
            doc_tokens=doc_tokens,
            answers=tuple(answers),
            paragraph_index=paragraph_index,
        )

    def _field(self, parent: dict[str, Any], key: str, where: str) -> Any:
        if key not in parent:
            where = where or "the top level"
            raise HarnessError(f"malformed SQuAD file {self.path}: {where} has no {key!r}")
        return parent[key]

    def _list(self, parent: dict[str, Any], key: str, where: str) -> list[Any]:
        value = self._field(parent, key, where)
        self._expect(value, list, self._path(where, key))
        return list(value)

    def _str(self, parent: dict[str, Any], key: str, where: str) -> str:
        value = self._field(parent, key, where)
        self._expect(value, str, self._path(where, key))
        return str(value)

    def _int(self, parent: dict[str, Any], key: str, where: str) -> int:
        value = self._field(parent, key, where)
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong_type(value, "an integer", self._path(where, key))
        return int(value)

    def _expect(self, value: Any, kind: type, where: str) -> None:
        if not isinstance(value, kind):
            names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
            self._wrong_type(value, names.get(kind, kind.__name__), where)

    def _wrong_type(self, value: Any, wanted: str, where: str) -> NoReturn:
        raise HarnessError(
            f"malformed SQuAD file {self.path}: {where} must be {wanted}, not {_json_type(value)}"
        )

    @staticmethod
    def _path(where: str, key: str) -> str:
        return f"{where}.{key}" if where else key


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, as a person reading the file sees it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
