"""How every progress bar decides whether to draw itself."""

from __future__ import annotations


def bar_disabled(progress: bool) -> bool | None:
    """tqdm's `disable` for a bar the caller wants (`progress`) or not. None lets tqdm draw only on a
    terminal: redirected into a log, a bar would leave a trail of carriage-return updates."""
    return None if progress else True
