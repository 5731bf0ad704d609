"""download() against a real HTTP server on 127.0.0.1: full, resumed, corrupt, failed transfers."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_file_server import FileServer, closed_port_url, serve_file

from mlperf_harness.datasets.download import download
from mlperf_harness.datasets.model_sources import ModelSource
from mlperf_harness.errors import HarnessError

PAYLOAD = bytes(range(256)) * 4099  # ~1 MiB, not a multiple of the copy block
SHA256 = hashlib.sha256(PAYLOAD).hexdigest()
MD5 = hashlib.md5(PAYLOAD).hexdigest()


@pytest.fixture
def server() -> Iterator[FileServer]:
    with serve_file("model.onnx", PAYLOAD) as running:
        yield running


def _part(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def test_full_download_with_sha256(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "models" / "model.onnx"
    assert download(server.url, dest, SHA256, "test model", progress=False) == dest
    assert dest.read_bytes() == PAYLOAD
    assert not _part(dest).exists()
    assert server.state.range_headers == [None]


def test_md5_is_verified_too(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    download(server.url, dest, description="test model", md5=MD5.upper(), progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_existing_file_with_right_checksum_is_not_fetched(
    server: FileServer, tmp_path: Path
) -> None:
    dest = tmp_path / "model.onnx"
    dest.write_bytes(PAYLOAD)
    download(server.url, dest, SHA256, "test model", progress=False)
    assert server.state.range_headers == []


def test_existing_file_with_wrong_checksum_is_an_error(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    dest.write_bytes(b"something else")
    with pytest.raises(HarnessError, match="exists but its sha256 is"):
        download(server.url, dest, SHA256, "test model", progress=False)
    assert dest.read_bytes() == b"something else"  # the user's file is never deleted


def test_resume_from_part_file_with_range(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    _part(dest).write_bytes(PAYLOAD[:300_000])
    download(server.url, dest, SHA256, "test model", progress=False)
    assert server.state.range_headers == ["bytes=300000-"]
    assert dest.read_bytes() == PAYLOAD
    assert not _part(dest).exists()


def test_server_ignoring_range_restarts_cleanly(server: FileServer, tmp_path: Path) -> None:
    server.state.honour_range = False
    dest = tmp_path / "model.onnx"
    _part(dest).write_bytes(PAYLOAD[:300_000])
    download(server.url, dest, SHA256, "test model", progress=False)
    assert server.state.range_headers == ["bytes=300000-"]
    assert dest.read_bytes() == PAYLOAD


def test_complete_part_file_is_just_verified_and_renamed(
    server: FileServer, tmp_path: Path
) -> None:
    dest = tmp_path / "model.onnx"
    _part(dest).write_bytes(PAYLOAD)  # an earlier run stopped between the last byte and the rename
    download(server.url, dest, SHA256, "test model", progress=False)
    assert server.state.range_headers == [f"bytes={len(PAYLOAD)}-"]
    assert dest.read_bytes() == PAYLOAD


def test_cut_connection_keeps_part_for_resume(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    server.state.truncate_at = 500_000
    with pytest.raises(HarnessError, match="run again to resume") as caught:
        download(server.url, dest, SHA256, "test model", progress=False)
    assert "\n" not in str(caught.value)
    assert not dest.exists()
    assert _part(dest).read_bytes() == PAYLOAD[:500_000]
    server.state.truncate_at = None
    download(server.url, dest, SHA256, "test model", progress=False)
    assert server.state.range_headers == [None, "bytes=500000-"]
    assert dest.read_bytes() == PAYLOAD


def test_checksum_mismatch_deletes_the_part_file(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    wrong = "0" * 64
    with pytest.raises(HarnessError) as caught:
        download(server.url, dest, wrong, "test model", progress=False)
    message = str(caught.value)
    assert f"has sha256 {SHA256}, expected {wrong}" in message
    assert "\n" not in message
    assert not dest.exists()
    assert not _part(dest).exists()


def test_not_found_is_a_harness_error(server: FileServer, tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="HTTP 404 Not Found"):
        download(server.url + ".missing", tmp_path / "x", None, "test model", progress=False)


def test_unreachable_host_says_where_to_put_the_file(tmp_path: Path) -> None:
    dest = tmp_path / "models" / "model.onnx"
    with pytest.raises(HarnessError) as caught:
        download(closed_port_url("model.onnx"), dest, SHA256, "test model", timeout=5)
    message = str(caught.value)
    assert "cannot download test model" in message
    assert f"put it at {dest} with sha256 {SHA256}" in message
    assert "\n" not in message
    assert not dest.exists()


def test_model_source_fetch_verifies_its_md5(server: FileServer, tmp_path: Path) -> None:
    source = ModelSource("test model", "model.onnx", server.url, MD5, None, "this test")
    assert source.fetch(tmp_path, progress=False).read_bytes() == PAYLOAD
    wrong = ModelSource("test model", "other.onnx", server.url, "0" * 32, None, "this test")
    with pytest.raises(HarnessError, match="has md5"):
        wrong.fetch(tmp_path, progress=False)
