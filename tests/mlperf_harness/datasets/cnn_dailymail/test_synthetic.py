"""The generated CNN-DailyMail stand-in: deterministic, varied, and each summary findable in its
article."""

from __future__ import annotations

from collections import Counter

from mlperf_harness.datasets.cnn_dailymail.samples import INSTRUCTION
from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_sample, generate_samples


def test_same_seed_same_samples_and_a_larger_count_extends_a_smaller() -> None:
    assert generate_samples(20, seed=1) == generate_samples(20, seed=1)
    assert generate_samples(30, seed=1)[:20] == generate_samples(20, seed=1)
    assert generate_samples(20, seed=1) != generate_samples(20, seed=2)


def test_each_summary_line_restates_a_sentence_of_its_article() -> None:
    for sample in generate_samples(200, seed=7):
        assert sample.instruction == INSTRUCTION
        lines = sample.summary.split("\n")
        assert len(lines) == 3
        lead, *rest = (line.removesuffix(" .") for line in lines)
        assert all(line.endswith(" .") for line in lines)
        assert f"(CNN) -- {lead}, officials said. " in sample.article
        positions = [sample.article.index(f" {sentence}.") for sentence in rest]
        assert positions == sorted(positions)  # the figure before the outcome


def test_the_set_varies() -> None:
    samples = generate_samples(300, seed=0)
    assert len({sample.article for sample in samples}) == 300
    leads = Counter(sample.summary.split(" ")[0] for sample in samples)
    assert len(leads) > 20
    words = [len(sample.article.split()) for sample in samples]
    assert min(words) > 80 and max(words) < 300
    text = "".join(sample.article for sample in samples)
    assert "£" in text and any(ord(char) > 127 and char != "£" for char in text)


def test_a_sample_depends_only_on_seed_and_index() -> None:
    assert generate_sample(5, 17) == generate_samples(18, seed=5)[17]
