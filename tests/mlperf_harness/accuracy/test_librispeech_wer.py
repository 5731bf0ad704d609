"""RNN-T's WER against MLCommons' accuracy_eval.py, reimplemented from reading it
(tests/rnnt_reference_wer.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rnnt_reference_wer import reference_accuracy_line

from mlperf_harness.accuracy.librispeech_wer import main, score_accuracy_log
from mlperf_harness.datasets.librispeech.alphabet import encode
from mlperf_harness.errors import HarnessError


def _log(path: Path, responses: list[tuple[int, str]]) -> Path:
    entries = [
        {"seq_id": n, "qsl_idx": index, "data": encode(text).astype("<i8").tobytes().hex().upper()}
        for n, (index, text) in enumerate(responses)
    ]
    path.write_text(json.dumps(entries))
    return path


TRANSCRIPTS = ["the cat sat", "on the mat today", "it's fine", "a b c d e"]


@pytest.mark.parametrize(
    "responses",
    [
        [(0, "the cat sat"), (1, "on the mat today"), (2, "it's fine"), (3, "a b c d e")],
        [(0, "the bat sat on"), (1, "the mat"), (2, ""), (3, "a  b c  d e f g")],
        [(3, "x"), (1, "on the mat today"), (1, "on mat today"), (0, "  the cat   sat ")],
    ],
)
def test_wer_line_is_the_reference_scripts(
    tmp_path: Path, responses: list[tuple[int, str]]
) -> None:
    log = _log(tmp_path / "mlperf_log_accuracy.json", responses)
    ours = score_accuracy_log(log, TRANSCRIPTS)
    assert ours.line() == reference_accuracy_line(log, TRANSCRIPTS)
    assert ours.responses == len(responses)


def test_random_logs_agree(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    words = ["a", "bb", "it's", "zed", "qq", "the"]
    transcripts = [" ".join(rng.choice(words, rng.integers(1, 9))) for _ in range(40)]
    responses = [
        (int(i), " ".join(rng.choice(words, rng.integers(0, 10)))) for i in rng.permutation(40)
    ]
    log = _log(tmp_path / "log.json", responses)
    assert score_accuracy_log(log, transcripts).line() == reference_accuracy_line(log, transcripts)


def test_bad_logs_are_one_line(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps([{"qsl_idx": 0, "data": "0102"}]))
    with pytest.raises(HarnessError, match="not int64 symbol ids"):
        score_accuracy_log(log, TRANSCRIPTS)
    log.write_text(json.dumps([{"qsl_idx": 9, "data": ""}]))
    with pytest.raises(HarnessError, match="qsl_idx 9 is not one of the 4"):
        score_accuracy_log(log, TRANSCRIPTS)
    log.write_text(json.dumps([{"qsl_idx": 0, "data": (40).to_bytes(8, "little").hex()}]))
    with pytest.raises(HarnessError, match="symbol id 40"):
        score_accuracy_log(log, TRANSCRIPTS)


def test_cli_prints_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mlperf_harness.datasets.librispeech.manifest import MANIFEST_FILE, manifest_entry
    from mlperf_harness.datasets.librispeech.wav import write_wav

    entries = []
    for i, text in enumerate(TRANSCRIPTS):
        write_wav(tmp_path / f"{i}.wav", np.zeros(4000, np.float32))
        entries.append(manifest_entry(f"{i}.wav", text.upper(), 4000, 16000))
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(entries))
    log = _log(tmp_path / "log.json", [(0, "the cat"), (2, "it's fine")])
    assert main(["--mlperf_accuracy_file", str(log), "--dataset_dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == reference_accuracy_line(log, TRANSCRIPTS)
