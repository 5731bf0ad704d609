"""The `[ruff]` subsystem: a current ruff, installed from a pinned requirement without a lockfile.

Pants 2.17's own ruff backend predates `ruff check` / `ruff format` (it calls the bare `ruff` command,
which current releases reject), so this plugin drives the two subcommands itself.
"""

from __future__ import annotations

import os.path
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from pants.backend.python.subsystems.python_tool_base import PythonToolBase
from pants.backend.python.target_types import ConsoleScript, PythonSourceField
from pants.core.util_rules.config_files import ConfigFilesRequest
from pants.engine.target import FieldSet
from pants.option.option_types import ArgsListOption, FileOption, SkipOption


@dataclass(frozen=True)
class RuffFieldSet(FieldSet):
    required_fields = (PythonSourceField,)

    source: PythonSourceField


class Ruff(PythonToolBase):
    options_scope = "ruff"
    name = "Ruff"
    help = "Lint (`ruff check`) and format (`ruff format`) Python with Ruff."

    default_version = "ruff==0.17.6"
    default_main = ConsoleScript("ruff")
    default_requirements: ClassVar[list[str]] = [default_version]
    register_interpreter_constraints = True
    # PythonToolBase insists on a built-in lockfile resource; we never read it (see uses_lockfile).
    default_lockfile_resource = ("ruff_lint", "no-lockfile")

    skip = SkipOption("fmt", "fix", "lint")
    args = ArgsListOption(example="--select=I")
    config = FileOption(
        default=None,
        advanced=True,
        help="Path to the `pyproject.toml` or `ruff.toml` with ruff's settings.",
    )

    @property
    def uses_lockfile(self) -> bool:
        # Pinned by `version` like every other requirement here: a lockfile would name the index host.
        return False

    def config_request(self, dirs: Iterable[str]) -> ConfigFilesRequest:
        return ConfigFilesRequest(
            specified=self.config,
            specified_option_name=f"[{self.options_scope}].config",
            discovery=True,
            check_existence=["ruff.toml", *(os.path.join(d, "ruff.toml") for d in dirs)],
            check_content={"pyproject.toml": b"[tool.ruff"},
        )
