"""What a Triton server of ours serves, as both sides see it: tensor names, and the identity record a
server answers with and a client checks before a run (a server of another benchmark, model or
precision is refused before LoadGen starts)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.harness.volume_store import VolumeStore

MODEL_VERSION = 1
SAMPLES = (
    "samples"  # input: preprocessed samples stacked on axis 0, as the sample store gathers them
)
OUTPUT = "output"  # the runner's raw outputs, one row per sample
ANSWER = "answer"  # the benchmark's postprocessed response rows (what LoadGen logs)
IDENTITY = "identity"  # one JSON record per sample: a request asking only for it runs no model
RESPONSES = (OUTPUT, ANSWER)
# --triton_samples staged: the server holds the samples, requests name them.
SAMPLE_IDS = "sample_ids"  # input: the sample indices of a batch, one per row (in place of SAMPLES)
HOLD = "hold"  # input: one row, every sample index the server must hold from now on (LoadGen's set)
DIGEST = "digest"  # output of a HOLD request: samples_digest of the held samples, as both sides
DIGEST_BYTES = 32  # sha256
DIGEST_SAMPLES = 4  # the samples a digest covers: the set's first ones, cheap to read on each side
# The client pings each server this often, calls or none, to notice a host that vanished without
# closing its connections; the server must accept pings that often (gRPC's default answers a ping
# more often than every 5 minutes without data with GOAWAY "Too many pings", which lost a healthy
# server mid-run in a slow Server run).
KEEPALIVE_MS = 2_000


VARYING = -1  # Triton's variable-size dimension


def varying_shapes(store: SampleStore) -> bool:
    """Whether the store's samples differ in shape (3D-UNet's volumes): their tensors then travel
    with variable dimensions, one sample to a request, and arrive in the shape they were sent."""
    return isinstance(store, VolumeStore)


def samples_digest(store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.uint8]:
    """sha256 over the bytes of the first DIGEST_SAMPLES samples at `indices` (loaded): equal on a
    server and the run's process when they preprocessed the same data."""
    digest = hashlib.sha256()
    for index in list(indices)[:DIGEST_SAMPLES]:
        digest.update(np.ascontiguousarray(store.gather([index])).tobytes())
    return np.frombuffer(digest.digest(), dtype=np.uint8)


def wire_shape(shape: tuple[int, ...], varying: bool = False) -> tuple[int, ...]:
    """A per-sample shape as a Triton tensor carries it: Triton needs at least one dimension and
    none of size 0, so a scalar travels as (1,) and an empty row (the null backend's) as one
    zero; the receiver restores the recorded shape (from_wire). Samples of varying shapes declare
    every dimension variable."""
    if varying and shape and 0 not in shape:
        return (VARYING,) * len(shape)
    return (1,) if not shape or 0 in shape else shape


def to_wire(rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
    shape = tuple(rows.shape[1:])
    if not shape:
        return rows.reshape(len(rows), 1)
    if 0 in shape:
        return np.zeros((len(rows), 1), dtype=rows.dtype)
    return rows


def from_wire(
    array: npt.NDArray[Any], shape: tuple[int, ...], varying: bool = False
) -> npt.NDArray[Any]:
    """The rows as sent: `shape` is the recorded per-sample shape (of one sample, where they
    vary: the array keeps its own then)."""
    if 0 in shape:
        return np.empty((len(array), *shape), dtype=array.dtype)
    if varying:
        return array
    return array.reshape((len(array), *shape))


@dataclass(frozen=True)
class ServedModel:
    benchmark: str
    model_name: str  # Triton's model name: the benchmark's
    engine_key: str  # the engine cache's directory and file of every engine, or "none"
    model_sha256: str | None
    backend: str
    precision: str
    max_batch_size: int
    runners: (
        int  # runners answering side by side: a CPU backend's workers; on GPU hosts, GPUs x streams
    )
    sample_dtype: str
    sample_shape: tuple[int, ...]
    output_dtype: str
    output_shape: tuple[int, ...]
    answer_dtype: str
    answer_shape: tuple[int, ...]
    config_ver: str
    stand_in: bool
    varying_shapes: bool  # samples differ in shape: the *_shape fields are the warm-up's

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str | bytes, where: str) -> ServedModel:
        try:
            record: dict[str, Any] = json.loads(text)
            values = {}
            for field in fields(ServedModel):
                value = record[field.name]
                values[field.name] = tuple(value) if field.name.endswith("_shape") else value
            return ServedModel(**cast(dict[str, Any], values))
        except (ValueError, KeyError, TypeError) as error:
            raise HarnessError(
                f"Triton server {where} answered no identity of ours ({error}): is it a server of "
                "this harness (`pants package benchmarks/<name>:serve`)?"
            ) from error

    def describe(self) -> str:
        return (
            f"{self.benchmark} {self.precision} on {self.backend}, engine {self.engine_key}, "
            f"batch <= {self.max_batch_size}, {self.runners} runner(s)"
        )
