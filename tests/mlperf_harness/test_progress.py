"""Progress bars draw on a terminal only, and never when not asked for."""

from __future__ import annotations

import io

from tqdm import tqdm

from mlperf_harness.progress import bar_disabled


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drawn(stream: io.StringIO, progress: bool) -> str:
    with tqdm(total=3, desc="work", file=stream, disable=bar_disabled(progress)) as bar:
        bar.update(3)
    return stream.getvalue()


def test_a_wanted_bar_draws_on_a_terminal_only() -> None:
    assert "work" in _drawn(Terminal(), progress=True)
    assert _drawn(io.StringIO(), progress=True) == ""  # a log file: no carriage-return trail


def test_an_unwanted_bar_never_draws() -> None:
    assert _drawn(Terminal(), progress=False) == ""
