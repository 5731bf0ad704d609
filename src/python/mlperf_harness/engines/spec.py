"""What an engine is built from, and the key derived from exactly that.

An engine is the backend-specific optimized form of a model: (model bytes, backend, precision, batch
size or profile, backend options, target device, calibration data for int8) plus the builder's own
code. The same inputs give the same key (a cache hit); any change gives another key (a rebuild).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import platform
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from mlperf_harness.errors import HarnessError

SPEC_VERSION = 1  # bump when the meaning of a field changes


@dataclass(frozen=True)
class EngineSpec:
    benchmark: str
    backend: str
    precision: str
    batch_size: int  # the largest batch the engine serves (TensorRT: the profile's max)
    model_sha256: str
    device: str  # what the engine is tuned for: a CPU's ISA or a GPU's name and compute capability
    builder_sha256: str  # the source of the builder that makes it
    calibration_sha256: str | None = None  # int8: the calibration samples and method
    options: tuple[tuple[str, str], ...] = ()  # backend options, sorted by name

    def to_json(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        record["options"] = dict(self.options)
        record["spec_version"] = SPEC_VERSION
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> EngineSpec:
        if record.get("spec_version") != SPEC_VERSION:
            raise HarnessError(f"engine record of another version ({record.get('spec_version')})")
        values = {k: v for k, v in record.items() if k != "spec_version"}
        values["options"] = tuple(sorted(values.get("options", {}).items()))
        return cls(**values)

    @property
    def key(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        """A directory name people can read: what it is, then the key that makes it unique."""
        return f"{self.backend}-{self.precision}-b{self.batch_size}-{self.key}"

    def differences(self, other: EngineSpec) -> list[str]:
        """Fields that differ, as `field: ours != theirs`, for refusing a mismatched engine."""
        mine, theirs = self.to_json(), other.to_json()
        return [f"{k}: {mine[k]!r} != {theirs[k]!r}" for k in mine if mine[k] != theirs.get(k)]


def source_sha256(*modules: ModuleType) -> str:
    """The builder's own code as part of the key: a changed builder must rebuild its engines."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()


def cpu_device() -> str:
    """ONNX Runtime's optimized graphs may use kernels for this ISA: engines are per CPU kind."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    wanted = (
                        "avx512f",
                        "avx512_vnni",
                        "avx512_bf16",
                        "amx_int8",
                        "avx2",
                        "avx_vnni",
                    )
                    present = set(line.split(":", 1)[1].split())
                    flags = "+".join(flag for flag in wanted if flag in present)
                    break
    except OSError:
        pass
    return f"cpu-{platform.machine()}-{flags or 'baseline'}"
