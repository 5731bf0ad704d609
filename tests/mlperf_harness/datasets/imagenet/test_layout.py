"""The ImageNet layout check: each way the data can be missing or malformed, and good layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.datasets.imagenet.layout import (
    FULL_VAL_COUNT,
    check_layout,
    is_full_val_map,
)
from mlperf_harness.errors import HarnessError


def _write_set(image_dir: Path, names: list[str], *, labels: list[int] | None = None) -> None:
    """A val_map.txt listing names, and a (not necessarily decodable) file for each name."""
    image_dir.mkdir(parents=True, exist_ok=True)
    labels = labels if labels is not None else list(range(len(names)))
    lines = [f"{name}\t{label}" for name, label in zip(names, labels, strict=True)]
    (image_dir / "val_map.txt").write_text("\n".join(lines) + "\n")
    for name in names:
        (image_dir / name).write_bytes(b"not decoded by the layout check")


def _names(count: int) -> list[str]:
    return [f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, count + 1)]


def _error(data_dir: Path) -> str:
    with pytest.raises(HarnessError) as caught:
        check_layout(data_dir)
    message = str(caught.value)
    assert "\n" not in message  # the CLI prints it as one line
    return message


def test_nvidia_layout_is_parsed_in_order(tmp_path: Path) -> None:
    names = _names(5)
    _write_set(tmp_path / "imagenet", names, labels=[65, 970, 230, 809, 516])
    val_set = check_layout(tmp_path)
    assert val_set.image_dir == tmp_path / "imagenet"
    assert val_set.entries == list(zip(names, [65, 970, 230, 809, 516], strict=True))
    assert len(val_set) == 5
    assert not val_set.is_full
    assert "partial image set: 5 images" in val_set.describe()


def test_val_map_directly_in_the_given_directory(tmp_path: Path) -> None:
    _write_set(tmp_path, ["a.jpg", "b.jpg"])
    val_set = check_layout(tmp_path)
    assert val_set.image_dir == tmp_path
    assert val_set.entries == [("a.jpg", 0), ("b.jpg", 1)]


def test_blank_lines_and_spaces_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "x.JPEG").write_bytes(b"")
    (tmp_path / "y.JPEG").write_bytes(b"")
    (tmp_path / "val_map.txt").write_text("x.JPEG 3\n\n  y.JPEG    7  \n")
    assert check_layout(tmp_path).entries == [("x.JPEG", 3), ("y.JPEG", 7)]


def test_missing_data_dir_says_where_to_get_the_data(tmp_path: Path) -> None:
    message = _error(tmp_path / "nowhere")
    assert f"{tmp_path / 'nowhere'} does not exist" in message
    assert "image-net.org" in message and "license" in message
    assert "val_map.txt" in message


def test_empty_dir_says_no_val_map_and_no_images(tmp_path: Path) -> None:
    message = _error(tmp_path)
    assert "no val_map.txt, no images" in message
    assert str(tmp_path / "imagenet" / "val_map.txt") in message
    assert "image-net.org" in message


def test_images_without_val_map_are_counted(tmp_path: Path) -> None:
    image_dir = tmp_path / "imagenet"
    image_dir.mkdir()
    for name in _names(4):
        (image_dir / name).write_bytes(b"")
    message = _error(tmp_path)
    assert f"{image_dir} has 4 JPEG files but no val_map.txt" in message
    assert "MLCommons" in message


def test_missing_images_are_counted_and_the_first_named(tmp_path: Path) -> None:
    names = _names(6)
    image_dir = tmp_path / "imagenet"
    _write_set(image_dir, names)
    for name in names[1:6]:
        (image_dir / name).unlink()
    message = _error(tmp_path)
    assert "5 of 6 images listed in" in message
    assert f"({names[1]}, {names[2]}, {names[3]}, ...)" in message
    assert names[0] not in message.split("missing")[1]
    assert "image-net.org" in message


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("b.JPEG", 'expected "<file> <label>"'),
        ("b.JPEG 1 extra", 'expected "<file> <label>"'),
        ("b.JPEG cat", "label 'cat' is not a non-negative integer"),
        ("b.JPEG -1", "label '-1' is not a non-negative integer"),
        ("sub/b.JPEG 1", "must be a file name, not a path"),
        ("a.JPEG 1", "a.JPEG is already listed on line 1"),
    ],
)
def test_malformed_line_is_named_by_number(tmp_path: Path, line: str, problem: str) -> None:
    (tmp_path / "a.JPEG").write_bytes(b"")
    (tmp_path / "b.JPEG").write_bytes(b"")
    (tmp_path / "val_map.txt").write_text(f"a.JPEG 0\n{line}\n")
    message = _error(tmp_path)
    assert f"malformed {tmp_path / 'val_map.txt'} line 2:" in message
    assert problem in message


def test_empty_val_map(tmp_path: Path) -> None:
    (tmp_path / "val_map.txt").write_text("\n\n")
    assert "lists no images" in _error(tmp_path)


def test_full_set_is_recognised_by_its_names() -> None:
    entries = [(name, 0) for name in _names(FULL_VAL_COUNT)]
    assert is_full_val_map(entries)
    assert not is_full_val_map(entries[:-1])
    assert not is_full_val_map([*entries[:-1], ("ILSVRC2012_val_00000001.JPEG", 0)])
    assert not is_full_val_map([*entries[:-1], ("other.JPEG", 0)])
