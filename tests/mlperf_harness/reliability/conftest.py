"""Fixtures of the reliability tests; the helpers behind them are in tests/reliability_support.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_support import Harness, private_mounts_refusal, write_images, write_tiny_model


@pytest.fixture
def harness() -> Harness:
    return Harness()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("model") / "tiny.onnx")


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_images(tmp_path_factory.mktemp("images"), 40)


@pytest.fixture(scope="session")
def private_mounts() -> None:
    refusal = private_mounts_refusal()
    if refusal is not None:
        pytest.skip(
            f"needs a private mount namespace (a small tmpfs, a read-only mount): {refusal}"
        )
