"""Reading SQuAD v1.1 files: the questions in order, contexts split as the reference splits them,
and one line naming the file and the place for each way a file can be malformed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from squad_samples import squad_document, write_squad

from mlperf_harness.datasets.squad.examples import Answer, read_examples, split_context
from mlperf_harness.errors import HarnessError


def test_questions_in_file_order_with_their_paragraph(tmp_path: Path) -> None:
    document = squad_document(
        [
            (
                "The quick brown fox.",
                [("q1", "What fox?", ["brown fox"]), ("q2", "How?", ["quick"])],
            ),
            ("Steve Smith was born.", [("q3", "Who?", ["Steve Smith", "Smith"])]),
        ]
    )
    examples = read_examples(write_squad(tmp_path / "dev.json", document))
    assert [e.qas_id for e in examples] == ["q1", "q2", "q3"]
    assert [e.question_text for e in examples] == ["What fox?", "How?", "Who?"]
    assert [e.paragraph_index for e in examples] == [0, 0, 1]
    assert examples[0].doc_tokens == ("The", "quick", "brown", "fox.")
    assert examples[0].doc_tokens is examples[1].doc_tokens  # shared, not copied per question
    assert examples[0].answers == (Answer("brown fox", 10),)
    assert examples[2].answers == (Answer("Steve Smith", 0), Answer("Smith", 6))


def test_context_splits_only_on_the_reference_separators() -> None:
    # Space, tab, CR, LF and U+202F separate words; NBSP, thin space and ideographic space do not.
    text = " a\u00a0b  c\td\r\ne\u202ff g\u2009h i\u3000j\n"
    assert split_context(text) == ("a\u00a0b", "c", "d", "e", "f", "g\u2009h", "i\u3000j")
    assert split_context("") == ()
    assert split_context(" \t\n") == ()


def test_a_file_without_version_is_read(tmp_path: Path) -> None:
    document = squad_document([("x y", [("q", "?", ["y"])])])
    del document["version"]
    assert len(read_examples(write_squad(tmp_path / "dev.json", document))) == 1


def _error(path: Path) -> str:
    with pytest.raises(HarnessError) as caught:
        read_examples(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def _broken(tmp_path: Path, change: Any) -> Path:
    document = squad_document([("The fox.", [("q1", "What?", ["fox"])])])
    change(document)
    return write_squad(tmp_path / "dev.json", document)


def _qa(document: Any) -> Any:
    return document["data"][0]["paragraphs"][0]["qas"][0]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.pop("data"), "the top level has no 'data'"),
        (lambda d: d.update(data={}), "data must be a list, not an object"),
        (lambda d: d["data"].append(3), "data[1] must be an object, not a number"),
        (lambda d: d["data"][0].pop("paragraphs"), "data[0] has no 'paragraphs'"),
        (
            lambda d: d["data"][0]["paragraphs"][0].update(context=None),
            "data[0].paragraphs[0].context must be a string, not null",
        ),
        (
            lambda d: _qa(d).update(id=17),
            "data[0].paragraphs[0].qas[0].id must be a string, not a number",
        ),
        (lambda d: _qa(d).pop("question"), "data[0].paragraphs[0].qas[0] has no 'question'"),
        (lambda d: _qa(d).update(answers=[]), "data[0].paragraphs[0].qas[0].answers is empty"),
        (
            lambda d: _qa(d)["answers"][0].update(answer_start="4"),
            "qas[0].answers[0].answer_start must be an integer, not a string",
        ),
        (
            lambda d: _qa(d)["answers"][0].update(answer_start=True),
            "answer_start must be an integer, not a boolean",
        ),
        (lambda d: _qa(d)["answers"][0].pop("text"), "qas[0].answers[0] has no 'text'"),
        (lambda d: d.update(version="2.0"), "is SQuAD version '2.0'"),
        (lambda d: d["data"][0]["paragraphs"][0].update(qas=[]), "holds no questions"),
    ],
)
def test_malformed_files_are_one_line_naming_the_place(
    tmp_path: Path, change: Any, expected: str
) -> None:
    assert expected in _error(_broken(tmp_path, change))


def test_a_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text('{"data": [')
    assert "is not JSON" in _error(path)
    path.write_bytes(b"\xff\xfe not utf-8")
    assert "is not JSON" in _error(path)
    path.write_text(json.dumps([1, 2]))
    assert "the top level must be an object, not a list" in _error(path)


def test_a_missing_file(tmp_path: Path) -> None:
    assert "cannot read SQuAD file" in _error(tmp_path / "absent.json")
