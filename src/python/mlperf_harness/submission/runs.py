"""The runs behind one (system, model, scenario) of a submission, as staging takes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rules import AuditTest


@dataclass(frozen=True)
class ScenarioRuns:
    system: str  # the system's name: results/<system>/, systems/<system>.json
    model: str  # the submission's model directory name (rules.MODELS key), e.g. "resnet50"
    benchmark: str  # our benchmark's name, e.g. "resnet50"
    scenario: Scenario
    # Run log directories as run_harness leaves them: LoadGen's logs, result.json, user.conf
    # (the LoadGen settings the run applied over mlperf.conf), accuracy.txt in accuracy runs.
    performance_dir: Path
    accuracy_dir: Path
    # Each audit's complete TEST0x/ directory, as verification writes it (staged as it is).
    audit_dirs: dict[AuditTest, Path] = field(default_factory=dict)
