"""Our DLRM-v2 scorer against MLCommons' accuracy-dlrm.py: the same figures on the same log.

`mlcommons_steps` follows the script's steps in its own order (the log parsed as JSON, a sample
seen twice skipped, each response read as float32 (prediction, label) pairs, each rounded
prediction compared with its label, sklearn's roc_auc_score over every pair, the same printed
line); our scorer must print that line character for character. The AUC itself is checked against
a count over every (click, no-click) pair of pairs, the definition."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from sklearn.metrics import roc_auc_score  # type: ignore[import-untyped]  # no stubs

from mlperf_harness.accuracy.dlrm_auc import main, score_accuracy_log
from mlperf_harness.errors import HarnessError


def _write_log(path: Path, responses: list[tuple[int, npt.NDArray[np.float32]]]) -> Path:
    entries = [{"qsl_idx": index, "data": data.astype(np.float32).tobytes().hex().upper()}
               for index, data in responses]  # fmt: skip
    path.write_text(json.dumps(entries))
    return path


def _responses(seed: int, samples: int) -> list[tuple[int, npt.NDArray[np.float32]]]:
    rng = np.random.default_rng(seed)
    out = []
    for index in range(samples):
        pairs = int(rng.integers(1, 40))
        labels = (rng.random(pairs) < 0.3).astype(np.float32)
        predictions = np.clip(0.3 + 0.3 * (labels - 0.3) + rng.normal(0, 0.2, pairs), 0, 1)
        out.append((index, np.stack([predictions, labels], axis=1).astype(np.float32).ravel()))
    return out


def mlcommons_steps(path: Path) -> str:
    results = json.loads(path.read_text())
    seen: set[int] = set()
    good = total = 0
    all_results, all_targets = [], []
    for entry in results:
        idx = entry["qsl_idx"]
        if idx in seen:
            continue
        seen.add(idx)
        data = np.frombuffer(bytes.fromhex(entry["data"]), np.float32)
        data = data.reshape((data.size // 2, 2))
        for k in range(data.shape[0]):
            total += 1
            all_results.append(data[k][0])
            all_targets.append(data[k][1])
            if data[k][0].round() == data[k][1]:
                good += 1
    auc = roc_auc_score(np.array(all_targets), np.array(all_results))
    return (
        f"AUC={100.0 * auc:.3f}%, accuracy={100.0 * good / total:.3f}%, good={good}, "
        f"total={total}, queries={len(seen)}"
    )


def _counted_auc(labels: npt.NDArray[np.float32], scores: npt.NDArray[np.float32]) -> float:
    positive, negative = scores[labels == 1], scores[labels == 0]
    wins = (positive[:, None] > negative[None, :]).sum() + 0.5 * (
        positive[:, None] == negative[None, :]
    ).sum()
    return float(wins / (len(positive) * len(negative)))


def test_same_line_as_the_script(tmp_path: Path) -> None:
    responses = _responses(0, 60)
    responses.append(responses[3])  # LoadGen may log a sample twice: the first counts
    log = _write_log(tmp_path / "mlperf_log_accuracy.json", responses)
    ours = score_accuracy_log(log)
    assert ours.line() == mlcommons_steps(log)
    pairs = np.concatenate([data.reshape(-1, 2) for _, data in responses[:-1]])
    assert ours.auc == pytest.approx(_counted_auc(pairs[:, 1], pairs[:, 0]), abs=1e-12)
    assert ours.queries == 60 and ours.total == len(pairs)


def test_command_line_writes_accuracy_txt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write_log(tmp_path / "log.json", _responses(1, 20))
    assert main(["--mlperf_accuracy_file", str(log), "--log_dir", str(tmp_path)]) == 0
    line = capsys.readouterr().out.strip()
    assert line == mlcommons_steps(log)
    assert (tmp_path / "accuracy.txt").read_text() == line + "\n"


def test_bad_logs_are_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"qsl_idx": 0, "data": "00112233445566"}]))
    with pytest.raises(HarnessError, match=r"not float32 \(prediction, label\) pairs"):
        score_accuracy_log(odd)
    one_label = _write_log(tmp_path / "one.json", [(0, np.array([0.2, 0.0, 0.7, 0.0], np.float32))])
    with pytest.raises(HarnessError, match="only one"):
        score_accuracy_log(one_label)
