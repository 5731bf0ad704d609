"""A rate as the harness prints it (run summaries, the lines about rates measured at start)."""

from __future__ import annotations


def rate_text(per_second: float | None) -> str:
    """At least three significant digits: SDXL's 1.24 samples/s is not 1.2; thousands grouped."""
    if per_second is None:
        return "n/a"
    return f"{per_second:,.1f}" if abs(per_second) >= 100 else f"{per_second:.3g}"
