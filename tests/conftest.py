"""What every test file shares: slow checks run only where asked.

`./pants test ::` is the developer loop and must stay within minutes on a 2-core machine, so tests
marked `@pytest.mark.slow` (full-size builds, long end-to-end runs) are skipped unless
MLPERF_SLOW_TESTS=1 is set; CI (.ci/run) sets it and runs everything. Skipped rather than
deselected: a file whose every test is slow still passes instead of reporting "no tests ran".
"""

from __future__ import annotations

import os

import pytest

SLOW_TESTS_ENV = "MLPERF_SLOW_TESTS"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"slow: a check of minutes, run only with {SLOW_TESTS_ENV}=1 (CI sets it)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(SLOW_TESTS_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"slow: {SLOW_TESTS_ENV}=1 runs it (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
