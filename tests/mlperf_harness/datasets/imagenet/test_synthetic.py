"""The generated stand-in image set: determinism, ImageNet layout, distinct splits, variety."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.datasets.imagenet import synthetic
from mlperf_harness.datasets.imagenet.layout import VAL_MAP_NAME, check_layout, parse_val_map
from mlperf_harness.datasets.imagenet.transform import preprocess_file, read_bgr
from mlperf_harness.errors import HarnessError


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    synthetic.generate_image_set(tmp_path / "a", 24, seed=7, progress=False)
    synthetic.generate_image_set(tmp_path / "b", 24, seed=7, progress=False)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_a_larger_count_extends_a_smaller_one(tmp_path: Path) -> None:
    synthetic.generate_image_set(tmp_path / "small", 5, seed=1, progress=False)
    synthetic.generate_image_set(tmp_path / "large", 12, seed=1, progress=False)
    small, large = _files(tmp_path / "small"), _files(tmp_path / "large")
    for name, data in small.items():
        if name != VAL_MAP_NAME:
            assert large[name] == data
    small_lines = small[VAL_MAP_NAME].decode().splitlines()
    assert large[VAL_MAP_NAME].decode().splitlines()[:5] == small_lines


def test_different_seeds_give_different_images(tmp_path: Path) -> None:
    synthetic.generate_image_set(tmp_path / "a", 10, seed=0, progress=False)
    synthetic.generate_image_set(tmp_path / "b", 10, seed=1, progress=False)
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    images = [name for name in a if name != VAL_MAP_NAME]
    assert all(a[name] != b[name] for name in images)


def test_imagenet_layout_and_balanced_labels(tmp_path: Path) -> None:
    count = 3 * synthetic.NUM_CLASSES + 4
    val_map = synthetic.generate_image_set(tmp_path, count, seed=3, progress=False)
    assert val_map == tmp_path / "val_map.txt"
    # Exactly the listed JPEGs and val_map.txt: no temporary files left behind.
    entries = parse_val_map(val_map)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [name for name, _ in entries] + ["val_map.txt"]
    )
    assert len(check_layout(tmp_path)) == count
    for line in val_map.read_text().splitlines():
        file_name, label_text = line.split(" ")
        assert file_name.endswith(".JPEG") and label_text.isdigit()
    labels = Counter(label for _, label in entries)
    assert set(labels) == set(synthetic.IMAGENET_LABELS)
    assert max(labels.values()) - min(labels.values()) <= 1
    for index, (_, label) in enumerate(entries):
        assert label == synthetic.IMAGENET_LABELS[synthetic.class_of_index(index)]
    for name, _ in entries[:4]:
        assert read_bgr(tmp_path / name).shape[2] == 3
        assert preprocess_file(tmp_path / name).shape == (3, 224, 224)


def test_sizes_and_aspect_ratios_vary(tmp_path: Path) -> None:
    synthetic.generate_image_set(tmp_path, 30, seed=0, progress=False)
    shapes = {read_bgr(path).shape[:2] for path in tmp_path.glob("*.JPEG")}
    assert len(shapes) > 20
    assert any(h > w for h, w in shapes) and any(w > h for h, w in shapes)
    # Short sides below and above 256 exercise both upscaling and downscaling in the resize.
    short_sides = [min(shape) for shape in shapes]
    assert min(short_sides) < 256 < max(short_sides)


def test_classes_differ_in_colour(tmp_path: Path) -> None:
    """Each class has its own palette: mean colours of different classes are far apart."""
    synthetic.generate_image_set(tmp_path, 2 * synthetic.NUM_CLASSES, seed=5, progress=False)
    means: dict[int, list[npt.NDArray[Any]]] = {}
    for name, label in parse_val_map(tmp_path / "val_map.txt"):
        means.setdefault(label, []).append(read_bgr(tmp_path / name).reshape(-1, 3).mean(axis=0))
    centres = np.array([np.mean(means[label], axis=0) for label in sorted(means)])
    distances = np.linalg.norm(centres[:, None] - centres[None, :], axis=2)
    assert np.min(distances[~np.eye(len(centres), dtype=bool)]) > 15.0


def test_splits_have_distinct_seeds_and_never_share_images(tmp_path: Path) -> None:
    seeds = {
        (seed, split): synthetic.split_seed(seed, split)
        for seed in range(20)
        for split in synthetic.SPLITS
    }
    assert len(set(seeds.values())) == len(seeds)
    contents = {}
    for split in synthetic.SPLITS:
        val_map = synthetic.generate_split(tmp_path, split, 10, seed=0, progress=False)
        assert val_map == tmp_path / split / "val_map.txt"
        contents[split] = {
            data for name, data in _files(val_map.parent).items() if name != VAL_MAP_NAME
        }
    splits = list(contents)
    for i, first in enumerate(splits):
        for second in splits[i + 1 :]:
            assert not contents[first] & contents[second]


@pytest.mark.parametrize(("count", "seed"), [(0, 0), (-1, 0), (3, -1)])
def test_bad_count_or_seed_is_a_user_error(tmp_path: Path, count: int, seed: int) -> None:
    with pytest.raises(HarnessError):
        synthetic.generate_image_set(tmp_path, count, seed, progress=False)


def test_unknown_split_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="unknown split"):
        synthetic.generate_split(tmp_path, "test", 3, seed=0, progress=False)
