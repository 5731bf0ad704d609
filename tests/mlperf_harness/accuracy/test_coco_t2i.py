"""FID and CLIP score as MLCommons' accuracy_coco.py computes them: the Frechet distance against
its closed form, the CLIP score's 100 x cosine, the log read as the reference reads it, and the
result line in the reference's words, which the v6.1 checker's patterns read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from one_line_errors import raised_line

from mlperf_harness.accuracy import coco_t2i
from mlperf_harness.accuracy.coco_t2i import (
    Extractors,
    T2iAccuracy,
    frechet_distance,
    iter_log_images,
    score_images,
    statistics,
)
from mlperf_harness.accuracy.t2i_features import FEATURES
from mlperf_harness.benchmarks.sdxl.stand_in_model import POOLED
from mlperf_harness.datasets.clip_bpe import ClipTokenizer, train_merges
from mlperf_harness.submission.rounds import get_round


def test_frechet_distance_of_diagonal_gaussians_is_its_closed_form() -> None:
    rng = np.random.default_rng(0)
    mu1, mu2 = rng.standard_normal(6), rng.standard_normal(6)
    a, b = rng.uniform(0.5, 2.0, 6), rng.uniform(0.5, 2.0, 6)
    expected = np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
    assert frechet_distance(mu1, np.diag(a), mu2, np.diag(b)) == pytest.approx(expected, rel=1e-10)


def test_frechet_distance_is_the_references_formula_on_features() -> None:
    """d = |mu1 - mu2|^2 + Tr(S1 + S2 - 2 sqrtm(S1 S2)) with np.cov(rowvar=False), the statistics
    accuracy_coco.py's compute_fid takes; sqrtm checked here by squaring it back."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((40, 5)), rng.standard_normal((50, 5)) * 1.5 + 0.3
    (m1, s1), (m2, s2) = statistics(x), statistics(y)
    assert np.allclose(s1, np.cov(x.T)) and np.allclose(m2, y.mean(0))
    eigenvalues = np.linalg.eigvals(s1 @ s2)
    trace_root = np.sum(np.sqrt(eigenvalues.real))  # Tr(sqrtm(A)) = sum of sqrt(eig(A))
    expected = np.sum((m1 - m2) ** 2) + np.trace(s1) + np.trace(s2) - 2 * trace_root
    assert frechet_distance(m1, s1, m2, s2) == pytest.approx(expected, rel=1e-9)
    assert frechet_distance(m1, s1, m1, s1) == pytest.approx(0.0, abs=1e-8)


def test_fewer_images_than_features_still_give_a_finite_distance() -> None:
    rng = np.random.default_rng(2)
    (m1, s1), (m2, s2) = (
        statistics(rng.standard_normal((6, 16))),
        statistics(rng.standard_normal((6, 16))),
    )
    assert np.isfinite(frechet_distance(m1, s1, m2, s2))


class _Fixed:
    """An ONNX Runtime session's `run` returning fixed rows (the features under test)."""

    def __init__(self, rows: npt.NDArray[np.float32]) -> None:
        self.rows = rows
        self.calls = 0

    def run(self, names: Any, feeds: Any) -> list[npt.NDArray[np.float32]]:
        n = len(next(iter(feeds.values())))
        out = self.rows[self.calls : self.calls + n]
        self.calls += n
        return [out]


def _extractors(image: npt.NDArray[np.float32], text: npt.NDArray[np.float32]) -> Extractors:
    tokenizer = ClipTokenizer(train_merges(["a cat"], 2))
    inception = _Fixed(np.eye(len(image), 3, dtype=np.float32))
    return Extractors(inception, _Fixed(image), _Fixed(text), tokenizer)


def test_clip_score_is_one_hundred_times_the_cosine_averaged() -> None:
    image = np.array([[1, 0], [1, 1]], np.float32)
    text = np.array([[2, 0], [0, 3]], np.float32)
    scores = _extractors(image, text).clip_scores(
        [np.zeros((4, 4, 3), np.uint8)] * 2, ["a cat", "a cat"]
    )
    assert scores == pytest.approx([100.0, 100.0 / np.sqrt(2)], rel=1e-6)


def _log(path: Path, entries: list[tuple[int, npt.NDArray[np.uint8]]]) -> Path:
    path.write_text(
        json.dumps(
            [
                {"seq_id": i, "qsl_idx": idx, "data": im.tobytes().hex()}
                for i, (idx, im) in enumerate(entries)
            ]
        )
    )
    return path


def test_the_log_is_read_in_order_each_sample_once(tmp_path: Path) -> None:
    a, b = np.full((2, 2, 3), 7, np.uint8), np.full((2, 2, 3), 9, np.uint8)
    log = _log(tmp_path / "log.json", [(3, a), (1, b), (3, b)])
    read = list(iter_log_images(log))
    assert [idx for idx, _ in read] == [3, 1] and np.array_equal(read[0][1], a)


def test_a_response_that_is_no_square_image_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps([{"seq_id": 0, "qsl_idx": 0, "data": "00" * 10}]))
    assert "not a square RGB image" in raised_line(lambda: list(iter_log_images(log)))


def test_a_sample_beyond_the_captions_is_one_line() -> None:
    extractors = _extractors(np.ones((1, 2), np.float32), np.ones((1, 2), np.float32))
    stats = (np.zeros(3), np.eye(3))
    line = raised_line(
        score_images, [(5, np.zeros((2, 2, 3), np.uint8))], ["one", "two"], stats, extractors
    )
    assert "beyond the 2 captions" in line


def test_the_result_line_is_the_references_and_the_checker_reads_it() -> None:
    accuracy = T2iAccuracy(fid=23.5, clip=31.75, images=5000, total=5000)
    line = accuracy.line()
    assert line == "Accuracy Results: {'FID_SCORE': '23.5', 'CLIP_SCORE': '31.75'}"
    patterns = get_round("v6.1").accuracy_patterns
    assert re.match(patterns["FID_SCORE"], line)[1] == "23.5"  # type: ignore[index]
    assert re.match(patterns["CLIP_SCORE"], line)[1] == "31.75"  # type: ignore[index]
    assert coco_t2i.in_reference_ranges(accuracy)


def test_missing_statistics_are_one_line(tmp_path: Path) -> None:
    assert "val2014.npz" in raised_line(coco_t2i.read_statistics, tmp_path / "val2014.npz")


def test_features_names_match_the_graphs() -> None:
    assert FEATURES == "features" and POOLED == "pooled"
