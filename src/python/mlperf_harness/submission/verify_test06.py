"""TEST06 verification (LLM output consistency): our own implementation of what MLCommons'
`compliance/TEST06/run_verification.py` checks on the audit run's accuracy log, writing the same
lines into verify_accuracy.txt (the submission checker looks for each check's `True` or
`Skipped` line) and the TEST06/ directory as the checker wants it: verify_accuracy.txt and
accuracy/mlperf_log_accuracy.json.

The three checks, per logged response (token ids in the run's type, int64 or int32):
- first token (not in Offline, which reports no first tokens): the first token LoadGen logged
  from FirstTokenComplete (`token_data`) equals the response's first token;
- EOS: at most one EOS at the response's end (a run that pads with EOS fails);
- length: the response holds exactly `token_count` tokens (the n_tokens the SUT reported).

One deliberate difference: MLCommons' script reads `token_count` without a guard and crashes on a
log without it (a run that did not record token latencies); we fail the length check with the
reason, and refuse a run that is no TEST06 audit run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import ACCURACY_FILE, DETAIL_FILE, read_detail_log
from mlperf_harness.submission.audit_dirs import VERIFY_ACCURACY
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.verify import AuditVerdict

TEST06_PASS = "TEST06 verification complete"
TEST06_FAIL = "TEST06 verification failed"
TOKEN_TYPES = {"int64": np.int64, "int32": np.int32}


@dataclass(frozen=True)
class Test06Checks:
    first_token: bool | None  # None: skipped (Offline)
    eos: bool
    length: bool
    reasons: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.first_token is not False and self.eos and self.length

    def lines(self) -> list[str]:
        first = "Skipped" if self.first_token is None else str(self.first_token)
        return [
            f"First token check pass: {first}",
            f"EOS check pass: {self.eos}",
            f"Sample length check pass: {self.length}",
            TEST06_PASS if self.passed else TEST06_FAIL,
        ]


def check_log(
    entries: Sequence[dict[str, Any]], dtype: str, eos_id: int, first_tokens: bool
) -> Test06Checks:
    """The three checks over an accuracy log's entries (module docstring)."""
    item = TOKEN_TYPES.get(dtype)
    if item is None:
        raise HarnessError(f"TEST06 reads token ids as int64 or int32, not {dtype}")
    reasons: list[str] = []
    first_ok: bool | None = True if first_tokens else None
    eos_ok = length_ok = True
    for entry in entries:
        where = f"qsl_idx {entry.get('qsl_idx')}"
        data = np.frombuffer(bytes.fromhex(str(entry.get("data", ""))), item)
        ends = 0
        for token in data[::-1]:
            if token != eos_id:
                break
            ends += 1
        if ends > 1 and eos_ok:
            eos_ok = False
            reasons.append(f"{where}: {ends} EOS tokens at the end")
        if "token_count" not in entry:
            if length_ok:
                reasons.append(f"{where}: no token_count logged (did the run record tokens?)")
            length_ok = False
        elif int(entry["token_count"]) != len(data) and length_ok:
            length_ok = False
            reasons.append(f"{where}: {len(data)} tokens, token_count {entry['token_count']}")
        if first_tokens and first_ok:
            first = np.frombuffer(bytes.fromhex(str(entry.get("token_data", ""))), item)
            if not first.size or any(a != b for a, b in zip(data, first, strict=False)):
                first_ok = False
                reasons.append(f"{where}: first token {first[:1].tolist()} != {data[:1].tolist()}")
    return Test06Checks(first_ok, eos_ok, length_ok, tuple(reasons))


def verify_test06(audit_run: Path, out_dir: Path, dtype: str, eos_id: int) -> AuditVerdict:
    """Verify a TEST06 audit run and write `out_dir` as the complete TEST06/ directory (built
    under a temporary name beside it and renamed into place; a run again replaces it)."""
    detail_file = audit_run / DETAIL_FILE
    if not detail_file.is_file():
        raise HarnessError(f"{audit_run} holds no LoadGen run ({DETAIL_FILE} is missing)")
    detail = read_detail_log(detail_file).entries
    settings = detail.get("requested_accuracy_log_sampling_target")
    scenario = str(detail.get("effective_scenario") or detail.get("requested_scenario") or "")
    if not scenario:
        raise HarnessError(f"{audit_run} holds no LoadGen run (no scenario in its detail log)")
    if settings is None or not detail.get("requested_use_token_latencies", False):
        raise HarnessError(
            f"{audit_run} is no TEST06 audit run (its LoadGen settings lack the audit's sampling"
            " target or token recording)"
        )
    log = audit_run / ACCURACY_FILE
    try:
        entries = json.loads(log.read_text())
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot read {log}: {error}") from error
    if not isinstance(entries, list) or not entries:
        raise HarnessError(f"{log} holds no logged responses: TEST06 has nothing to check")
    checks = check_log(entries, dtype, eos_id, first_tokens=scenario != "Offline")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(
        tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".partial", dir=out_dir.parent)
    )
    try:
        content = staging / out_dir.name
        (content / "accuracy").mkdir(parents=True)
        (content / VERIFY_ACCURACY).write_text("".join(line + "\n" for line in checks.lines()))
        shutil.copy2(log, content / "accuracy" / ACCURACY_FILE)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        content.rename(out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    reasons = [f"TEST06 {reason}" for reason in checks.reasons]
    return AuditVerdict(AuditTest.TEST06, checks.passed, reasons, [])
