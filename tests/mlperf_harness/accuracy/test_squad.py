"""Our SQuAD scorer on logs whose logits point at known spans: which spans may be chosen, fp16 and
fp32 logs, responses shorter than a row, samples logged twice or not at all, and one line for each
kind of bad input, from the library and from the command line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from squad_samples import long_context, squad_document, write_squad, write_vocab

from mlperf_harness.accuracy.squad import (
    REFERENCE_F1,
    SquadAccuracy,
    main,
    predict_answers,
    read_logits,
    score_accuracy_log,
    write_accuracy_txt,
)
from mlperf_harness.datasets.squad.store import SquadDataset, build_dataset, preprocess_squad
from mlperf_harness.errors import HarnessError

# Question "a" is about a paragraph of 410 tokens: two features (0 and 1), and its answer (words
# 302-303) has its most context in feature 1 (min(174, 107) + 2.82 against min(302, 74) + 3.77).
# Questions "b" and "c" have one feature each (2 and 3).
LONG = long_context(300) + " The quick brown fox jumps over the lazy dog. " + long_context(100)
SHORT = "Steve Smith's café was born in 1895."
BROWN, FOX = 302, 303


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("squad")
    document = squad_document(
        [
            (LONG, [("a", "where is the fox", ["brown fox"])]),
            (SHORT, [("b", "who", ["Steve Smith"]), ("c", "what year", ["1895"])]),
        ]
    )
    return write_squad(directory / "dev.json", document), write_vocab(directory / "vocab.txt")


@pytest.fixture(scope="module")
def dataset(files: tuple[Path, Path]) -> SquadDataset:
    data = build_dataset(*files)
    assert data.features.example_index.tolist() == [0, 0, 1, 2]
    return data


def _positions(dataset: SquadDataset, feature: int, word: int) -> list[int]:
    return [int(i) for i in np.flatnonzero(dataset.features.token_to_orig[feature] == word)]


def _logits(
    dataset: SquadDataset,
    feature: int,
    spans: Sequence[tuple[int, int, float]],
    rows: int = 384,
) -> npt.NDArray[np.float32]:
    """Logits [rows, 2], 0 but for each (first word, last word, value) span: value at the first
    token of its first word (start) and at the last token of its last word (end)."""
    logits = np.zeros((rows, 2), np.float32)
    for first, last, value in spans:
        logits[_positions(dataset, feature, first)[0], 0] = value
        logits[_positions(dataset, feature, last)[-1], 1] = value
    return logits


def _log(
    path: Path,
    responses: Sequence[tuple[int, npt.NDArray[np.floating[Any]]]],
    dtype: str = "float32",
) -> Path:
    entries = [
        {"seq_id": n, "qsl_idx": index, "data": logits.astype(dtype).tobytes().hex().upper()}
        for n, (index, logits) in enumerate(responses)
    ]
    path.write_text(json.dumps(entries))
    return path


def _right(dataset: SquadDataset) -> dict[int, npt.NDArray[np.float32]]:
    """Logits of each feature pointing at its question's answer."""
    year = _logits(dataset, 3, [])
    year[_positions(dataset, 3, 6)[0], 0] = 5.0  # "1895." is "1 ##8 ##9 ##5 .": from "1" ...
    year[_positions(dataset, 3, 6)[-2], 1] = 5.0  # ... to "##5"
    who = _logits(dataset, 2, [])
    who[_positions(dataset, 2, 0)[0], 0] = 5.0  # "Steve Smith's" is "steve smith ' s": from
    who[_positions(dataset, 2, 1)[0], 1] = 5.0  # "steve" to "smith"
    return {1: _logits(dataset, 1, [(BROWN, FOX, 5.0)]), 2: who, 3: year}


def _score(
    tmp_path: Path,
    dataset: SquadDataset,
    responses: Sequence[tuple[int, npt.NDArray[np.floating[Any]]]],
    dtype: str = "float32",
) -> tuple[SquadAccuracy, dict[str, str]]:
    log = _log(tmp_path / "mlperf_log_accuracy.json", responses, dtype)
    predictions_file = tmp_path / "predictions.json"
    accuracy = score_accuracy_log(log, dataset, dtype, predictions_file)
    return accuracy, json.loads(predictions_file.read_text())


def test_logits_on_the_answers_score_100(tmp_path: Path, dataset: SquadDataset) -> None:
    # Feature 0 (all logits equal) loses to feature 1, which points at the answer.
    responses = [(0, np.zeros((384, 2), np.float32)), *_right(dataset).items()]
    accuracy, predictions = _score(tmp_path, dataset, responses)
    assert predictions == {"a": "brown fox", "b": "Steve Smith", "c": "1895"}
    assert (accuracy.exact_match, accuracy.f1) == (100.0, 100.0)
    assert (accuracy.questions, accuracy.answered) == (3, 3)
    assert accuracy.line() == '{"exact_match": 100.0, "f1": 100.0}'
    assert accuracy.meets(0.99)
    # The predictions file is laid out as the reference's (indent 4).
    assert (tmp_path / "predictions.json").read_text() == json.dumps(predictions, indent=4) + "\n"


def test_wrong_spans_score_what_evaluate_v11_gives(tmp_path: Path, dataset: SquadDataset) -> None:
    responses = {
        1: _logits(dataset, 1, [(BROWN - 1, BROWN, 5.0)]),  # "quick brown": F1 1/2
        2: _logits(dataset, 2, [(0, 0, 5.0)]),  # "Steve": F1 2/3
        3: _logits(dataset, 3, [(0, 6, 5.0)]),  # the whole sentence, with "Steve" ... "1895."
    }
    accuracy, predictions = _score(tmp_path, dataset, list(responses.items()))
    assert predictions == {
        "a": "quick brown",
        "b": "Steve",
        "c": "Steve Smith's café was born in 1895.",
    }
    assert accuracy.exact_match == 0.0
    # c: "steve smiths café was born in 1895" against "1895": precision 1/7, recall 1.
    assert accuracy.f1 == pytest.approx(100 * (0.5 + 2 / 3 + 2 / 8) / 3)
    assert not accuracy.meets(0.99)
    assert accuracy.f1 < REFERENCE_F1


def test_only_a_max_context_token_may_start_the_answer(
    tmp_path: Path, dataset: SquadDataset
) -> None:
    # Feature 0 holds the answer too, with higher logits, but gives it less context than feature 1.
    responses = [
        (0, _logits(dataset, 0, [(BROWN, FOX, 9.0)])),
        (1, _logits(dataset, 1, [(280, 281, 3.0)])),
    ]
    _, predictions = _score(tmp_path, dataset, responses)
    assert predictions["a"] == "alpha beta"


def test_spans_longer_than_30_tokens_or_reversed_are_not_answers(
    tmp_path: Path, dataset: SquadDataset
) -> None:
    brown = _positions(dataset, 1, BROWN)[0]
    fox = _positions(dataset, 1, FOX)[0]
    words = LONG.split()

    def answer(starts: dict[int, float], ends: dict[int, float]) -> str:
        logits = np.zeros((384, 2), np.float32)
        for position, value in starts.items():
            logits[position, 0] = value
        for position, value in ends.items():
            logits[position, 1] = value
        return _score(tmp_path, dataset, [(1, logits)])[1]["a"]

    # 31 tokens from "brown": too long, whatever its logits; "brown fox" instead.
    assert answer({brown: 9.0}, {brown + 30: 9.0, fox: 1.0}) == "brown fox"
    # 30 tokens is the longest answer: "brown ... dog." and 22 more words ("dog." is 2 tokens).
    assert answer({brown: 9.0}, {brown + 29: 9.0, fox: 1.0}) == " ".join(words[BROWN : BROWN + 29])
    # The best start after the best end ("jumps" ... "fox"): not a span.
    assert answer({fox + 1: 9.0, brown: 1.0}, {fox: 1.0}) == "brown fox"


def test_fp16_logs_read_as_fp16_and_ties_go_to_the_earlier_token(
    tmp_path: Path, dataset: SquadDataset
) -> None:
    right = list(_right(dataset).items())
    fp32, _ = _score(tmp_path, dataset, right, "float32")
    fp16, _ = _score(tmp_path, dataset, right, "float16")
    assert fp16 == fp32
    # Starts at "steve" (100.01) and at "1895" (100.02), one end: fp32 tells them apart; in fp16
    # both are 100.0 (its step there is 1/16), and the tie goes to the earlier start, "steve".
    logits = np.zeros((384, 2), np.float32)
    logits[_positions(dataset, 3, 0)[0], 0] = 100.01
    logits[_positions(dataset, 3, 6)[0], 0] = 100.02
    logits[_positions(dataset, 3, 6)[-2], 1] = 100.0
    _, as_fp32 = _score(tmp_path, dataset, [(3, logits)], "float32")
    _, as_fp16 = _score(tmp_path, dataset, [(3, logits)], "float16")
    assert as_fp32["c"] == "1895"
    assert as_fp16["c"] == "Steve Smith's café was born in 1895"


def test_a_response_may_cover_only_the_first_tokens(tmp_path: Path, dataset: SquadDataset) -> None:
    full = _logits(dataset, 1, [(BROWN, FOX, 9.0), (280, 281, 3.0)])
    real = dataset.features.token_count(1)
    _, whole = _score(tmp_path, dataset, [(1, full)])
    _, real_only = _score(tmp_path, dataset, [(1, full[:real])])
    assert whole["a"] == real_only["a"] == "brown fox"
    # Cut before "brown": the tokens not in the response cannot be chosen, however high the
    # logits the model would have given them.
    cut = _positions(dataset, 1, BROWN)[0]
    _, shorter = _score(tmp_path, dataset, [(1, full[:cut])])
    assert shorter["a"] == "alpha beta"
    # A response of [CLS] question [SEP] only has no span at all.
    _, none = _score(tmp_path, dataset, [(1, full[:6])])
    assert none["a"] == "empty"


def test_a_sample_logged_twice_counts_once_with_its_last_response(
    tmp_path: Path, dataset: SquadDataset
) -> None:
    right = _right(dataset)
    wrong = _logits(dataset, 2, [(0, 0, 5.0)])
    twice, _ = _score(tmp_path, dataset, [*right.items(), (2, right[2]), (1, right[1])])
    once, _ = _score(tmp_path, dataset, list(right.items()))
    assert twice == once and twice.answered == 3
    _, last_right = _score(tmp_path, dataset, [(2, wrong), (2, right[2])])
    _, last_wrong = _score(tmp_path, dataset, [(2, right[2]), (2, wrong)])
    assert (last_right["b"], last_wrong["b"]) == ("Steve Smith", "Steve")


def test_questions_without_a_response_score_zero_as_empty(
    tmp_path: Path, dataset: SquadDataset
) -> None:
    accuracy, predictions = _score(tmp_path, dataset, [(2, _right(dataset)[2])])
    assert predictions == {"a": "empty", "b": "Steve Smith", "c": "empty"}
    assert (accuracy.answered, accuracy.questions) == (1, 3)
    assert accuracy.exact_match == accuracy.f1 == 100.0 / 3


def test_predictions_are_in_question_order(dataset: SquadDataset) -> None:
    logits = {index: values.astype(np.float64) for index, values in _right(dataset).items()}
    assert list(predict_answers(dataset, logits)) == ["a", "b", "c"]


def _log_error(path: Path, dtype: str = "float32") -> str:
    with pytest.raises(HarnessError) as caught:
        read_logits(path, 4, 384, dtype)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[{", "is not JSON"),
        ('{"qsl_idx": 0}', "not a list of responses"),
        ("[3]", 'response 0 is not {"qsl_idx": <int>, "data": "<hex>"}'),
        ('[{"qsl_idx": 0}]', 'response 0 is not {"qsl_idx"'),
        ('[{"qsl_idx": "0", "data": "00"}]', "response 0 has no integer qsl_idx"),
        ('[{"qsl_idx": 0, "data": "0000803f0000803f"}, {"qsl_idx": 4, "data": "00"}]',
         "response 1 has qsl_idx 4, outside the 4 features"),
        ('[{"qsl_idx": 1, "data": "zz"}]', "response 0 (qsl_idx 1): data is not hexadecimal"),
        ('[{"qsl_idx": 1, "data": "000000000000"}]', "holds 6 bytes, not the float32 start and end"),
        ('[{"qsl_idx": 1, "data": ""}]', "holds 0 bytes"),
        (json.dumps([{"qsl_idx": 1, "data": "00" * 8 * 385}]), "holds 3080 bytes"),
    ],
)  # fmt: skip
def test_bad_logs_are_one_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "mlperf_log_accuracy.json"
    path.write_text(content)
    assert expected in _log_error(path)


def test_bad_dtype_and_missing_log(tmp_path: Path) -> None:
    path = tmp_path / "mlperf_log_accuracy.json"
    path.write_text("[]")
    with pytest.raises(HarnessError, match="'int8' is not one of float32, float16"):
        read_logits(path, 4, 384, "int8")
    assert "cannot read LoadGen accuracy log" in _log_error(tmp_path / "absent.json")


def test_accuracy_txt_holds_the_line(tmp_path: Path) -> None:
    accuracy = SquadAccuracy(exact_match=83.5, f1=90.5, questions=10, answered=10)
    path = write_accuracy_txt(tmp_path, accuracy)
    assert path.read_text() == '{"exact_match": 83.5, "f1": 90.5}\n'
    assert accuracy.meets(0.99) and not accuracy.meets(0.999)


def test_command_line(
    tmp_path: Path,
    files: tuple[Path, Path],
    dataset: SquadDataset,
    capsys: pytest.CaptureFixture[str],
) -> None:
    squad, vocab = files
    log = _log(tmp_path / "log.json", list(_right(dataset).items()), "float16")
    common = ["--mlperf_accuracy_file", str(log), "--output_dtype", "float16"]
    out_file = tmp_path / "predictions.json"
    assert (
        main(
            [
                *common,
                "--squad_json",
                str(squad),
                "--vocab",
                str(vocab),
                "--out_file",
                str(out_file),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    expected = score_accuracy_log(log, dataset, "float16").line()
    assert captured.out == expected + "\n"
    assert json.loads(out_file.read_text())["b"] == "Steve Smith"

    preprocessed = tmp_path / "pre"
    preprocess_squad(squad, vocab, preprocessed, progress=False)
    assert main([*common, "--preprocessed_dir", str(preprocessed), "--vocab", str(vocab)]) == 0
    assert capsys.readouterr().out == expected + "\n"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--vocab", "{vocab}"], "give --preprocessed_dir, or --squad_json with --vocab"),
        (["--squad_json", "{squad}"], "give --preprocessed_dir, or --squad_json with --vocab"),
        (["--squad_json", "{squad}", "--vocab", "{squad}"], "is not a BERT WordPiece vocabulary"),
        (["--preprocessed_dir", "{squad}"], "no preprocessed SQuAD data"),
        (["--squad_json", "{squad}", "--vocab", "{vocab}", "--output_dtype", "int8"], "invalid choice"),
        (["--squad_json", "{vocab}", "--vocab", "{vocab}"], "is not JSON"),
    ],
)  # fmt: skip
def test_command_line_errors_are_one_line_and_exit_2(
    tmp_path: Path,
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    expected: str,
) -> None:
    squad, vocab = files
    log = tmp_path / "log.json"
    log.write_text("[]")
    filled = [a.format(squad=squad, vocab=vocab) for a in arguments]
    assert main(["--mlperf_accuracy_file", str(log), *filled]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("accuracy_squad: error: ")
    assert expected in captured.err


def test_command_line_bad_log_is_one_line(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    squad, vocab = files
    log = tmp_path / "log.json"
    log.write_text('[{"qsl_idx": 9, "data": "00"}]')
    assert (
        main(
            ["--mlperf_accuracy_file", str(log), "--squad_json", str(squad), "--vocab", str(vocab)]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "qsl_idx 9, outside the 4 features" in err
