"""SDXL's data: CLIP's BPE tokenizer, the captions list, the fixed latents (also from a torch file,
read without torch), and one line for each bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from one_line_errors import raised_line

from mlperf_harness.datasets import coco_t2i
from mlperf_harness.datasets.clip_bpe import ClipTokenizer, merges_bytes, read_merges, train_merges
from mlperf_harness.torch_file import load_torch_file

MIRROR = Path("/work/.mirror/mlcommons+inference/repo")


def test_bpe_rows_are_start_tokens_end_then_padding(tmp_path: Path) -> None:
    merges = train_merges(["a red circle", "a blue circle", "circle circle"], 20)
    path = tmp_path / "merges.txt"
    path.write_bytes(merges_bytes(merges))
    tokenizer = ClipTokenizer(read_merges(path))
    assert tokenizer.vocab_size == 512 + len(merges) + 2
    ids = tokenizer.encode("A  Red CIRCLE")  # cleaned: whitespace collapsed, lower case
    assert ids == tokenizer.encode("a red circle") and ids[-1] == tokenizer.encoder["circle</w>"]
    row = tokenizer.row("a red circle", pad_id=0)
    assert row[0] == tokenizer.start_id and row[len(ids) + 1] == tokenizer.end_id
    assert row.shape == (77,) and (row[len(ids) + 2 :] == 0).all()
    long = tokenizer.row("circle " * 100, pad_id=tokenizer.end_id)
    assert len(long) == 77 and long[-1] == tokenizer.end_id  # cut, with the end kept last


def test_a_merges_file_of_another_form_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "merges.txt"
    path.write_text("#version: 0.2\na b c\n")
    assert "is not a BPE merge" in raised_line(read_merges, path)


def test_captions_keep_the_tsv_order_and_the_count_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "captions.tsv"
    path.write_text("id\timage_id\tcaption\n70\t1\tA city at night.\n277\t2\tA clock.\n")
    captions = coco_t2i.read_captions(path)
    assert [(c.id, c.caption) for c in captions] == [(70, "A city at night."), (277, "A clock.")]
    line = raised_line(coco_t2i.read_captions, path, 5000)
    assert "holds 2 captions where 5000 are expected" in line


def test_missing_latents_are_one_line(tmp_path: Path) -> None:
    line = raised_line(coco_t2i.read_latents, tmp_path / "latents.npy")
    assert "the fixed latents are missing" in line and "latents.npy" in line
    line = raised_line(coco_t2i.latents_file, tmp_path)
    assert "latents/latents.npy or" in line
    np.save(tmp_path / "bad.npy", np.zeros((2, 4, 8, 8), np.float32))
    assert "not one [1, 4, h, w]" in raised_line(coco_t2i.read_latents, tmp_path / "bad.npy")


def test_a_file_that_is_no_torch_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.pt").write_bytes(b"\x80\x02K\x05.")
    assert "is not a file torch.save wrote" in raised_line(load_torch_file, tmp_path / "x.pt")


@pytest.mark.skipif(
    not MIRROR.is_dir() or shutil.which("git") is None, reason="no mirror of mlcommons/inference"
)
def test_the_references_latents_pt_reads_as_its_latents_npy(tmp_path: Path) -> None:
    for name in ("latents.pt", "latents.npy"):
        blob = subprocess.run(
            ["git", "--git-dir", str(MIRROR), "show", f"HEAD:text_to_image/tools/{name}"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        (tmp_path / name).write_bytes(blob)
    from_torch = coco_t2i.read_latents(tmp_path / "latents.pt")
    assert from_torch.shape == (1, 4, 128, 128)
    assert np.array_equal(from_torch, coco_t2i.read_latents(tmp_path / "latents.npy"))


def test_preprocessing_is_kept_until_its_inputs_change(tmp_path: Path) -> None:
    captions = tmp_path / "captions.tsv"
    captions.write_text("id\tcaption\n0\tA red circle.\n1\tA blue square.\n")
    merges = tmp_path / "merges.txt"
    merges.write_bytes(merges_bytes(train_merges(["a red circle", "a blue square"], 10)))
    out = tmp_path / "pre"
    first = coco_t2i.preprocess(captions, (merges, merges), out)
    assert first.input_ids.shape == (2, 2, 77)
    tokenizer = ClipTokenizer(read_merges(merges))
    end = len(tokenizer.encode("A red circle.")) + 1
    # SDXL's first tokenizer pads with its end token, the second with "!" (id 0).
    assert (first.input_ids[0, 0, end:] == tokenizer.end_id).all()
    assert (
        first.input_ids[0, 1, end] == tokenizer.end_id
        and (first.input_ids[0, 1, end + 1 :] == 0).all()
    )
    stamp = (out / coco_t2i.TOKENS_FILE).stat().st_mtime_ns
    coco_t2i.preprocess(captions, (merges, merges), out)
    assert (out / coco_t2i.TOKENS_FILE).stat().st_mtime_ns == stamp
    assert json.loads((out / coco_t2i.MANIFEST_FILE).read_text())["samples"] == 2
