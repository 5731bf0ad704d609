"""The marks of tests that need torch (and Triton's compiler): CI has neither (PyPI's torch wheel
brings gigabytes of CUDA libraries), so they run with a CPU torch by hand or on a GPU host, and
skip everywhere else."""

from __future__ import annotations

import importlib.util

import pytest

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (CPU build)"
)
needs_torch_and_triton = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None,
    reason="torch and triton are not installed (CPU build)",
)
