"""`ruff format` as a formatter (so `lint` checks formatting) and `ruff check` as linter and fixer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pants.backend.python.util_rules import pex
from pants.backend.python.util_rules.pex import PexRequest, VenvPex, VenvPexProcess
from pants.core.goals.fix import FixResult, FixTargetsRequest
from pants.core.goals.fmt import FmtResult, FmtTargetsRequest
from pants.core.goals.lint import LintResult, LintTargetsRequest
from pants.core.util_rules.config_files import ConfigFiles, ConfigFilesRequest
from pants.core.util_rules.partitions import PartitionerType
from pants.core.util_rules.source_files import SourceFiles, SourceFilesRequest
from pants.engine.fs import Digest, MergeDigests
from pants.engine.internals.native_engine import Snapshot
from pants.engine.process import FallibleProcessResult
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.util.logging import LogLevel
from pants.util.strutil import pluralize

from ruff_lint.subsystem import Ruff, RuffFieldSet


class RuffFormatRequest(FmtTargetsRequest):
    field_set_type = RuffFieldSet
    tool_subsystem = Ruff
    partitioner_type = PartitionerType.DEFAULT_SINGLE_PARTITION


class RuffFixRequest(FixTargetsRequest):
    field_set_type = RuffFieldSet
    tool_subsystem = Ruff
    partitioner_type = PartitionerType.DEFAULT_SINGLE_PARTITION


class RuffCheckRequest(LintTargetsRequest):
    field_set_type = RuffFieldSet
    tool_subsystem = Ruff
    partitioner_type = PartitionerType.DEFAULT_SINGLE_PARTITION


@dataclass(frozen=True)
class RuffInvocation:
    snapshot: Snapshot
    subcommand: tuple[str, ...]


@rule(level=LogLevel.DEBUG)
async def run_ruff(request: RuffInvocation, ruff: Ruff) -> FallibleProcessResult:
    ruff_pex, config_files = await MultiGet(
        Get(VenvPex, PexRequest, ruff.to_pex_request()),
        Get(ConfigFiles, ConfigFilesRequest, ruff.config_request(request.snapshot.dirs)),
    )
    input_digest = await Get(
        Digest, MergeDigests((request.snapshot.digest, config_files.snapshot.digest))
    )
    conf_args = [f"--config={ruff.config}"] if ruff.config else []
    return await Get(
        FallibleProcessResult,
        VenvPexProcess(
            ruff_pex,
            argv=(
                *request.subcommand,
                "--no-cache",
                *conf_args,
                *ruff.args,
                *request.snapshot.files,
            ),
            input_digest=input_digest,
            output_files=request.snapshot.files,
            description=f"Run ruff {' '.join(request.subcommand)} on {pluralize(len(request.snapshot.files), 'file')}.",
            level=LogLevel.DEBUG,
        ),
    )


@rule(desc="Format with ruff", level=LogLevel.DEBUG)
async def ruff_format(request: RuffFormatRequest.Batch, ruff: Ruff) -> FmtResult:
    result = await Get(FallibleProcessResult, RuffInvocation(request.snapshot, ("format",)))
    return await FmtResult.create(request, result, strip_chroot_path=True)


@rule(desc="Fix with ruff", level=LogLevel.DEBUG)
async def ruff_fix(request: RuffFixRequest.Batch, ruff: Ruff) -> FixResult:
    result = await Get(FallibleProcessResult, RuffInvocation(request.snapshot, ("check", "--fix")))
    return await FixResult.create(request, result, strip_chroot_path=True)


@rule(desc="Lint with ruff", level=LogLevel.DEBUG)
async def ruff_check(request: RuffCheckRequest.Batch[RuffFieldSet, Any]) -> LintResult:
    sources = await Get(
        SourceFiles, SourceFilesRequest(field_set.source for field_set in request.elements)
    )
    result = await Get(FallibleProcessResult, RuffInvocation(sources.snapshot, ("check",)))
    return LintResult.create(request, result, strip_chroot_path=True)


def rules():
    return [
        *collect_rules(),
        *RuffFormatRequest.rules(),
        *RuffFixRequest.rules(),
        *RuffCheckRequest.rules(),
        *pex.rules(),
    ]
