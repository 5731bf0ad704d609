"""preprocess_data on generated JPEGs: exactness, int8, resumption, bad input, the sample store."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.datasets.imagenet import transform
from mlperf_harness.datasets.imagenet.preprocess import (
    FP32,
    INT8_LINEAR,
    INT8_LINEAR_SCALE,
    MANIFEST_NAME,
    PreprocessedSamples,
    dequantize_int8_linear,
    load_samples,
    preprocess_data,
    quantize_int8_linear,
)
from mlperf_harness.errors import HarnessError

# (width, height, channels): landscape, portrait, grey, smaller than the 256 resize, square, odd.
SHAPES = [(500, 375, 3), (375, 500, 3), (320, 240, 1), (150, 100, 3), (256, 256, 3), (333, 517, 3)]


def _image(rng: np.random.Generator, width: int, height: int, channels: int) -> npt.NDArray[Any]:
    shape = (height, width) if channels == 1 else (height, width, channels)
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


def _make_set(data_dir: Path, count: int, seed: int = 0) -> list[Path]:
    """count JPEGs of varied shapes under data_dir/imagenet with a val_map.txt; their paths."""
    image_dir = data_dir / "imagenet"
    image_dir.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    paths, lines = [], []
    for i in range(count):
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        assert cv2.imwrite(str(image_dir / name), _image(rng, *SHAPES[i % len(SHAPES)]))
        paths.append(image_dir / name)
        lines.append(f"{name} {(7 * i) % 1000}")
    (image_dir / "val_map.txt").write_text("\n".join(lines) + "\n")
    return paths


def _manifest(out: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((out / MANIFEST_NAME).read_text())
    return manifest


def _stats(out: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(out)): (path.stat().st_ino, path.stat().st_mtime_ns)
        for path in sorted(out.glob("*/*.npy"))
    }


def _temp_files(out: Path) -> list[Path]:
    return [path for path in out.rglob("*") if path.name.endswith(".tmp")]


def test_outputs_match_the_reference_transform(tmp_path: Path) -> None:
    sources = _make_set(tmp_path / "data", 12)
    out = tmp_path / "out"
    report = preprocess_data(tmp_path / "data", out, workers=2, chunk_size=2, progress=False)
    assert (report.total, report.processed, report.skipped, report.workers) == (12, 12, 0, 2)
    assert "partial image set: 12 images" in report.dataset

    manifest = _manifest(out)
    assert manifest["complete"] is True
    assert [s["file"] for s in manifest["samples"]] == [p.name for p in sources]
    assert [s["label"] for s in manifest["samples"]] == [(7 * i) % 1000 for i in range(12)]
    assert manifest["formats"][INT8_LINEAR]["scale"] == INT8_LINEAR_SCALE == 1.0

    expected = np.stack([transform.preprocess_file(path) for path in sources])
    fp32 = load_samples(out, range(12), FP32)
    assert fp32.dtype == np.float32 and fp32.shape == (12, 3, 224, 224)
    assert np.array_equal(fp32, expected)  # bit for bit
    int8 = load_samples(out, range(12), INT8_LINEAR)
    assert int8.dtype == np.int8
    assert np.array_equal(int8, quantize_int8_linear(expected))
    # Each file on its own is NVIDIA's layout: <format>/<image file>.npy holding one CHW array.
    single = np.load(out / FP32 / f"{sources[3].name}.npy")
    assert np.array_equal(single, expected[3])
    assert PreprocessedSamples(out).labels == [(7 * i) % 1000 for i in range(12)]
    assert np.array_equal(load_samples(out, [5, 0, 5], FP32), expected[[5, 0, 5]])


def test_int8_linear_quantizer_is_nvidias() -> None:
    values = np.array([-200.0, -128.5, -127.9, -0.7, 0.0, 0.7, 126.9, 127.5, 151.2], np.float32)
    assert quantize_int8_linear(values).tolist() == [-128, -128, -127, 0, 0, 0, 126, 127, 127]


def test_int8_linear_round_trip(tmp_path: Path) -> None:
    _make_set(tmp_path / "data", 6)
    out = tmp_path / "out"
    preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    fp32 = load_samples(out, range(6), FP32)
    restored = dequantize_int8_linear(load_samples(out, range(6), INT8_LINEAR))
    assert np.array_equal(restored, np.trunc(np.clip(fp32, -128, 127)))
    in_range = (fp32 >= -128) & (fp32 <= 127)
    assert np.all(np.abs(restored - fp32)[in_range] < 1.0)
    assert np.all(restored[fp32 > 127] == 127)  # bright red pixels clip: 255 - 123.68 > 127
    assert np.any(fp32 > 127)


def test_rerun_redoes_only_a_deleted_output(tmp_path: Path) -> None:
    sources = _make_set(tmp_path / "data", 8)
    out = tmp_path / "out"
    preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    before = _stats(out)
    deleted = out / INT8_LINEAR / f"{sources[4].name}.npy"
    content = deleted.read_bytes()
    deleted.unlink()

    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (report.processed, report.skipped) == (1, 7)
    assert deleted.read_bytes() == content
    after = _stats(out)
    changed = {name for name in before if before[name] != after[name]}
    # The sample is recomputed as a whole: its fp32 file is rewritten too, nothing else is.
    assert changed == {f"{fmt}/{sources[4].name}.npy" for fmt in (FP32, INT8_LINEAR)}

    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (report.processed, report.skipped) == (0, 8)
    assert _stats(out) == after


def test_changed_source_is_redone_and_touched_source_is_not(tmp_path: Path) -> None:
    sources = _make_set(tmp_path / "data", 6)
    out = tmp_path / "out"
    preprocess_data(tmp_path / "data", out, workers=1, progress=False)

    # Same content, new mtime: re-hashed, found unchanged, not recomputed.
    os.utime(sources[1], ns=(time.time_ns(), time.time_ns() + 10**9))
    before = _stats(out)
    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (report.processed, report.skipped) == (0, 6)
    assert _stats(out) == before
    assert _manifest(out)["samples"][1]["source"]["mtime_ns"] == sources[1].stat().st_mtime_ns

    # New content: recomputed from the new image.
    rng = np.random.default_rng(99)
    assert cv2.imwrite(str(sources[2]), _image(rng, 400, 300, 3))
    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (report.processed, report.skipped) == (1, 5)
    expected = transform.preprocess_file(sources[2])
    assert np.array_equal(load_samples(out, [2], FP32)[0], expected)


def test_another_transform_version_redoes_everything(tmp_path: Path) -> None:
    _make_set(tmp_path / "data", 4)
    out = tmp_path / "out"
    preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    manifest = _manifest(out)
    manifest["transform"]["version"] = "an older transform"
    (out / MANIFEST_NAME).write_text(json.dumps(manifest))
    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (report.processed, report.skipped) == (4, 0)


def test_new_format_is_added_incrementally(tmp_path: Path) -> None:
    _make_set(tmp_path / "data", 4)
    out = tmp_path / "out"
    preprocess_data(tmp_path / "data", out, [FP32], workers=1, progress=False)
    assert not (out / INT8_LINEAR).exists()
    with pytest.raises(HarnessError, match="not 'int8_linear'"):
        load_samples(out, [0], INT8_LINEAR)
    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (report.processed, report.skipped) == (4, 0)
    assert load_samples(out, range(4), INT8_LINEAR).shape == (4, 3, 224, 224)


def test_a_narrower_run_keeps_the_formats_already_made(tmp_path: Path) -> None:
    # A benchmark run asks for fp32 only; it must not drop the int8 files preprocess_data made.
    _make_set(tmp_path / "data", 4)
    out = tmp_path / "out"
    preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    narrow = preprocess_data(tmp_path / "data", out, [FP32], workers=1, progress=False)
    assert (narrow.processed, narrow.skipped) == (0, 4)
    assert set(_manifest(out)["formats"]) == {FP32, INT8_LINEAR}
    again = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (again.processed, again.skipped) == (0, 4)


@pytest.mark.parametrize("workers", [1, 2])
def test_corrupt_jpeg_is_named_and_nothing_is_half_written(tmp_path: Path, workers: int) -> None:
    sources = _make_set(tmp_path / "data", 8)
    good = sources[5].read_bytes()
    sources[5].write_bytes(b"\xff\xd8\xff\xe0 this is not really a JPEG" * 10)
    out = tmp_path / "out"
    with pytest.raises(HarnessError) as caught:
        preprocess_data(tmp_path / "data", out, workers=workers, chunk_size=2, progress=False)
    message = str(caught.value)
    assert str(sources[5]) in message and "corrupt" in message
    assert "\n" not in message
    assert _temp_files(out) == []
    assert not (out / FP32 / f"{sources[5].name}.npy").exists()
    manifest = _manifest(out)  # saved, valid, and marked incomplete
    assert manifest["complete"] is False
    done = {sample["file"] for sample in manifest["samples"]}
    assert sources[5].name not in done
    for sample in manifest["samples"]:  # every sample the manifest lists is whole and right
        expected = transform.preprocess_file(tmp_path / "data" / "imagenet" / sample["file"])
        assert np.array_equal(np.load(out / sample["outputs"][FP32]), expected)
    with pytest.raises(HarnessError, match="not complete"):
        load_samples(out, [0], FP32)

    sources[5].write_bytes(good)
    report = preprocess_data(tmp_path / "data", out, workers=workers, progress=False)
    assert report.skipped == len(done)
    assert report.processed == 8 - len(done)
    assert _manifest(out)["complete"] is True


def test_missing_jpeg_is_named(tmp_path: Path) -> None:
    sources = _make_set(tmp_path / "data", 3)
    sources[1].unlink()
    pattern = f"1 of 3 images .* missing \\({re.escape(sources[1].name)}\\)"
    with pytest.raises(HarnessError, match=pattern):
        preprocess_data(tmp_path / "data", tmp_path / "out", workers=1, progress=False)


def test_unknown_format_is_rejected(tmp_path: Path) -> None:
    _make_set(tmp_path / "data", 1)
    with pytest.raises(HarnessError, match="unknown preprocessing format"):
        preprocess_data(tmp_path / "data", tmp_path / "out", ["int4"], progress=False)


def test_sample_store_validates_what_it_reads(tmp_path: Path) -> None:
    sources = _make_set(tmp_path / "data", 3)
    out = tmp_path / "out"
    with pytest.raises(HarnessError, match=r"no readable manifest\.json"):
        load_samples(out, [0], FP32)
    preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    with pytest.raises(HarnessError, match="sample index 3 is out of range"):
        load_samples(out, [0, 3], FP32)
    wrong = out / FP32 / f"{sources[2].name}.npy"
    np.save(wrong, np.zeros((3, 224, 223), np.float32))
    with pytest.raises(HarnessError, match=re.escape(f"{wrong} is float32[3, 224, 223]")):
        load_samples(out, [2], FP32)
    wrong.write_bytes(b"garbage")
    with pytest.raises(HarnessError, match=re.escape(f"cannot read preprocessed sample {wrong}")):
        load_samples(out, [2], FP32)
    # A rerun notices the damaged file by its size and rewrites it.
    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert (report.processed, report.skipped) == (1, 2)
    assert np.array_equal(load_samples(out, [2], FP32)[0], transform.preprocess_file(sources[2]))


def test_ctrl_c_leaves_a_consistent_resumable_tree(tmp_path: Path) -> None:
    """SIGINT to the process group (as Ctrl-C sends it) mid-run; then a rerun finishes the job."""
    count = 48
    sources = _make_set(tmp_path / "data", count)
    out = tmp_path / "out"
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            from mlperf_harness.datasets.imagenet.preprocess import preprocess_data
            if __name__ == "__main__":
                preprocess_data(Path({str(tmp_path / "data")!r}), Path({str(out)!r}),
                                workers=2, chunk_size=1, progress=False)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if len(list((out / FP32).glob("*.npy")) if (out / FP32).exists() else []) >= 6:
            break
        time.sleep(0.02)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=60)
    # Interrupted (KeyboardInterrupt) or, on a very fast machine, already finished.
    assert process.returncode in (0, 1, -signal.SIGINT)

    assert _temp_files(out) == []
    manifest = _manifest(out)
    for sample in manifest["samples"]:
        expected = transform.preprocess_file(tmp_path / "data" / "imagenet" / sample["file"])
        assert np.array_equal(np.load(out / sample["outputs"][FP32]), expected)
    report = preprocess_data(tmp_path / "data", out, workers=1, progress=False)
    assert report.skipped == len(manifest["samples"])
    assert report.processed + report.skipped == count
    expected_all = np.stack([transform.preprocess_file(path) for path in sources])
    assert np.array_equal(load_samples(out, range(count), FP32), expected_all)
