"""The one exception type for problems the user can fix (bad input, missing file, wrong option).

The CLI prints a HarnessError's message as a single line and exits non-zero; any other exception is a
bug and keeps its traceback.
"""


class HarnessError(Exception):
    """A user-facing error: its message says what is wrong and what to do, on one line."""
