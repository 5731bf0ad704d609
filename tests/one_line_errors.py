"""What every test of a one-line error checks: the message is exactly one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mlperf_harness.errors import HarnessError


def one_error_line(err: str, prog: str) -> str:
    """An entry point's stderr: one line, `<prog>: error: ...`; returned."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{prog}: error: "), err
    return lines[0]


def raised_line(call: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The message of the HarnessError `call(*args, **kwargs)` raises, checked to be one line."""
    with pytest.raises(HarnessError) as caught:
        call(*args, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message
