"""Ruff (check and format) for Pants 2.17: see subsystem.py for why this is not the built-in backend."""

from ruff_lint import rules as ruff_rules


def rules():
    return ruff_rules.rules()
