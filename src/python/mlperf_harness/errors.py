"""The one exception type for problems the user can fix (bad input, missing file, wrong option).

The CLI prints a HarnessError's message as a single line and exits non-zero; any other exception is a
bug and keeps its traceback.
"""


class HarnessError(Exception):
    """A user-facing error: its message says what is wrong and what to do, on one line."""


def first_line(error: BaseException, width: int = 200) -> str:
    """An exception's first line, at most `width` characters (its repr where its text is empty):
    how an A/B table reports a variant that failed (a Triton compile error runs to pages)."""
    return (str(error).strip().splitlines() or [repr(error)])[0][:width]
