"""The preprocessed set on disk: made whole or not at all, made once, refused with one line when it
is damaged, truncated, or made from other inputs than the caller's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from one_line_errors import raised_line
from squad_samples import long_context, squad_document, vocab_tokens, write_squad, write_vocab

from mlperf_harness.datasets.squad.features import FeatureSettings
from mlperf_harness.datasets.squad.store import (
    MANIFEST_NAME,
    build_dataset,
    load_preprocessed,
    preprocess_squad,
)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    document = squad_document(
        [
            (long_context(500), [("a", "where is the fox", ["gamma delta"])]),
            ("Steve Smith's café.", [("b", "Who?", ["Steve Smith"]), ("c", "What?", ["café"])]),
        ]
    )
    return write_squad(tmp_path / "dev.json", document), write_vocab(tmp_path / "vocab.txt")


def test_preprocessed_set_loads_back_whole(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    squad, vocab = inputs
    out = tmp_path / "pre"
    report = preprocess_squad(squad, vocab, out, progress=False)
    assert (report.examples, report.features, report.made) == (3, 4, True)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "input_ids.npy", "input_mask.npy", "segment_ids.npy", "example_index.npy",
            "doc_span_index.npy", "token_to_orig.npy", "max_context.npy", "examples.json",
            "vocab.txt", MANIFEST_NAME,
        ]
    )  # fmt: skip
    assert np.load(out / "input_ids.npy").dtype == np.int32
    assert np.load(out / "input_ids.npy").shape == (4, 384)
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert (manifest["examples"], manifest["paragraphs"], manifest["features"]) == (3, 2, 4)
    assert manifest["made_from"]["settings"] == {
        "max_seq_length": 384,
        "doc_stride": 128,
        "max_query_length": 64,
    }
    assert manifest["full_squad_dev_set"] is False

    memory = build_dataset(squad, vocab)
    loaded = load_preprocessed(out, vocab_path=vocab, squad_json=squad, settings=FeatureSettings())
    for name in ("input_ids", "input_mask", "segment_ids", "example_index", "doc_span_index",
                 "token_to_orig", "max_context"):  # fmt: skip
        assert np.array_equal(getattr(loaded.features, name), getattr(memory.features, name)), name
    assert loaded.examples == memory.examples
    assert loaded.examples[1].doc_tokens is loaded.examples[2].doc_tokens
    assert loaded.vocab.tokens == tuple(vocab_tokens())
    assert loaded.vocab.sha256 == memory.vocab.sha256 == manifest["made_from"]["vocab_sha256"]
    assert loaded.source_sha256 == memory.source_sha256 == manifest["made_from"]["source_sha256"]
    assert loaded.settings == FeatureSettings()
    # Nothing left beside it but the lock file: no staging directory.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".pre.lock",
        "dev.json",
        "pre",
        "vocab.txt",
    ]


def test_an_up_to_date_set_is_not_made_again(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    squad, vocab = inputs
    out = tmp_path / "pre"
    preprocess_squad(squad, vocab, out, progress=False)
    stamp = (out / "input_ids.npy").stat().st_mtime_ns
    assert preprocess_squad(squad, vocab, out, progress=False).made is False
    assert (out / "input_ids.npy").stat().st_mtime_ns == stamp


def test_other_inputs_remake_it(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    squad, vocab = inputs
    out = tmp_path / "pre"
    preprocess_squad(squad, vocab, out, progress=False)
    write_vocab(vocab, [*vocab_tokens(), "extra"])
    assert preprocess_squad(squad, vocab, out, progress=False).made is True
    settings = FeatureSettings(max_seq_length=128)
    report = preprocess_squad(squad, vocab, out, settings=settings, progress=False)
    # 500 words in windows of 128 - 4 - 3 = 121 tokens, at 0, 121, 242, 363 and 484; and the
    # other paragraph's two questions.
    assert report.made and report.features == 7
    assert load_preprocessed(out).features.input_ids.shape == (7, 128)


def test_a_set_of_other_inputs_is_refused_naming_them(
    tmp_path: Path, inputs: tuple[Path, Path]
) -> None:
    squad, vocab = inputs
    out = tmp_path / "pre"
    preprocess_squad(squad, vocab, out, progress=False)
    other_vocab = write_vocab(tmp_path / "other.txt", [*vocab_tokens(), "extra"])
    message = raised_line(load_preprocessed, out, vocab_path=other_vocab)
    assert f"preprocessed SQuAD data {out} was made from a vocabulary of sha256" in message
    assert "preprocess it again" in message
    other_squad = write_squad(tmp_path / "other.json", squad_document([("x", [("q", "?", ["x"])])]))
    assert "from a SQuAD file of sha256" in raised_line(
        load_preprocessed, out, squad_json=other_squad
    )
    settings = FeatureSettings(doc_stride=64)
    assert "with settings" in raised_line(load_preprocessed, out, settings=settings)


def test_damage_is_one_line(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    squad, vocab = inputs
    out = tmp_path / "pre"
    preprocess_squad(squad, vocab, out, progress=False)
    ids = out / "input_ids.npy"
    whole = ids.read_bytes()

    ids.write_bytes(whole[:-100])  # truncated
    message = raised_line(load_preprocessed, out)
    assert f"preprocessed SQuAD data {out} is incomplete or damaged" in message
    assert f"input_ids.npy has {len(whole) - 100} bytes, not {len(whole)}" in message

    ids.write_bytes(whole[:-4] + b"\x01\x00\x00\x00")  # same size, other content
    assert "input_ids.npy differs from what was written" in raised_line(load_preprocessed, out)

    ids.unlink()
    assert "input_ids.npy is missing" in raised_line(load_preprocessed, out)
    # preprocess_squad sees the damage and makes the set again.
    assert preprocess_squad(squad, vocab, out, progress=False).made is True
    assert len(load_preprocessed(out).features) == 4

    (out / MANIFEST_NAME).write_text("{")
    assert "cannot read manifest.json" in raised_line(load_preprocessed, out)
    (out / MANIFEST_NAME).unlink()
    assert "it has no manifest.json" in raised_line(load_preprocessed, out)
    assert "is not a directory" in raised_line(load_preprocessed, tmp_path / "absent")


def test_a_killed_run_leaves_no_half_made_set(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    squad, vocab = inputs
    out = tmp_path / "pre"
    stale = tmp_path / ".pre.abc123"  # a staging directory of a killed run
    stale.mkdir()
    (stale / "input_ids.npy").write_bytes(b"half")
    preprocess_squad(squad, vocab, out, progress=False)
    assert not stale.exists()
    assert len(load_preprocessed(out).features) == 4


def test_a_file_where_the_directory_belongs(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    squad, vocab = inputs
    (tmp_path / "pre").write_text("")
    message = raised_line(preprocess_squad, squad, vocab, tmp_path / "pre", progress=False)
    assert "is a file, not a directory" in message
    assert "cannot read SQuAD file" in raised_line(
        preprocess_squad, tmp_path / "absent.json", vocab, tmp_path / "x", progress=False
    )
    assert not os.path.exists(tmp_path / "x")
