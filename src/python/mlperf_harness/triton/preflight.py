"""Before a run: ask each server what it serves and refuse, in one line naming the server, one that
cannot serve this run (unreachable, another benchmark, model, precision or sample shape; with staged
samples, other data)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.triton import wire
from mlperf_harness.triton.addresses import ServerAddress
from mlperf_harness.triton.served_model import (
    MODEL_VERSION,
    SAMPLES,
    ServedModel,
    samples_digest,
    wire_shape,
)

CHECK_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Expected:
    """What this run needs a server to serve."""

    benchmark: str
    model_sha256: str | None
    config_ver: str
    precision: str | None  # None: whatever the servers agree on (no --precision given)
    sample: npt.NDArray[np.generic]  # one sample as the run's store gathers it
    varying_shapes: bool = False  # the store's samples differ in shape (served_model.py)


def check_servers(servers: Sequence[ServerAddress], expected: Expected) -> ServedModel:
    """The model every server serves; HarnessError for the first server that does not fit, or
    when two serve different engines."""
    found = [(address, check_server(address, expected)) for address in servers]
    first_address, first = found[0]
    for address, served in found[1:]:
        if served.engine_key != first.engine_key or served.output_shape != first.output_shape:
            raise HarnessError(
                f"Triton server {address} serves engine {served.engine_key} but {first_address} "
                f"serves {first.engine_key}: one run needs servers of one engine"
            )
    return first


def check_reachable(servers: Sequence[ServerAddress], benchmark: str) -> None:
    """Each server answers and has the benchmark's model ready: checked before this run prepares
    anything (a stand-in build takes a minute)."""
    for address in servers:
        with _client(address) as client:
            _reach(client, address, benchmark)


def check_server(address: ServerAddress, expected: Expected) -> ServedModel:
    with _client(address) as client:
        _reach(client, address, expected.benchmark)
        return _check(client, address, expected)


@contextlib.contextmanager
def _client(address: ServerAddress) -> Iterator[Any]:
    client = wire.connect(address)
    try:
        yield client
    except InferenceServerException as error:
        raise HarnessError(
            f"cannot use Triton server {address}: {wire.describe_error(error)}"
        ) from None
    finally:
        with contextlib.suppress(Exception):
            client.close()


def _reach(client: Any, address: ServerAddress, name: str) -> None:
    try:
        client.is_server_live(client_timeout=CHECK_TIMEOUT_S)
    except InferenceServerException as error:
        raise HarnessError(
            f"cannot reach Triton server {address}: {wire.describe_error(error)} (is it started, "
            "and listening on an address this host reaches?)"
        ) from None
    ready = client.is_model_ready(name, str(MODEL_VERSION), client_timeout=CHECK_TIMEOUT_S)
    if not ready:
        raise HarnessError(
            f"Triton server {address} has no model {name!r} ready: a server of another benchmark? "
            f"(serve this one with `pants package benchmarks/{name}:serve`)"
        )


def _check(client: Any, address: ServerAddress, expected: Expected) -> ServedModel:
    name = expected.benchmark
    metadata = client.get_model_metadata(
        name, str(MODEL_VERSION), as_json=True, client_timeout=CHECK_TIMEOUT_S
    )
    wanted_shape = list(wire_shape(tuple(expected.sample.shape[1:]), expected.varying_shapes))
    wanted_type = np_to_triton_dtype(expected.sample.dtype)
    inputs = {entry["name"]: entry for entry in metadata.get("inputs", [])}
    given = inputs.get(SAMPLES)
    if (
        given is None
        or [int(d) for d in given["shape"][1:]] != wanted_shape
        or given["datatype"] != wanted_type
    ):
        shown = "none" if given is None else f"{given['datatype']} {given['shape'][1:]}"
        raise HarnessError(
            f"Triton server {address} takes samples {shown}, this run has {wanted_type} "
            f"{wanted_shape}: other preprocessing or another model"
        )
    served = ServedModel.from_json(
        wire.ask_identity(address, name, expected.sample, CHECK_TIMEOUT_S), str(address)
    )
    problems = []
    if served.benchmark != name:
        problems.append(f"benchmark {served.benchmark}, not {name}")
    if served.model_sha256 != expected.model_sha256:
        problems.append(
            f"model sha256 {served.model_sha256}, not this run's {expected.model_sha256}"
        )
    if served.config_ver != expected.config_ver:
        problems.append(f"--config_ver {served.config_ver}, not {expected.config_ver}")
    if expected.precision is not None and served.precision != expected.precision:
        problems.append(f"precision {served.precision}, not {expected.precision}")
    if problems:
        raise HarnessError(f"Triton server {address} serves {'; '.join(problems)}")
    return served


def check_staged_samples(
    servers: Sequence[ServerAddress], served: ServedModel, store: SampleStore
) -> None:
    """--triton_samples staged: each server holds the same samples as this run (the same
    preprocessed data), checked on a few of them; HarnessError naming the first that does not."""
    probe = sorted({0, store.total_count // 2, store.total_count - 1})
    store.load(probe)
    try:
        expected = bytes(samples_digest(store, probe))
    finally:
        store.unload(probe)
    for address in servers:
        try:
            found = bytes(wire.hold(address, served, probe, CHECK_TIMEOUT_S))
        except InferenceServerException as error:
            raise HarnessError(
                f"Triton server {address} cannot hold this run's samples "
                f"({wire.describe_error(error)}): --triton_samples staged needs its own copy "
                "of the same data; or run with --triton_samples wire"
            ) from None
        if found != expected:
            raise HarnessError(
                f"Triton server {address} holds other samples than this run: --triton_samples "
                "staged needs each server to preprocess the same data (the same --data_dir or "
                "--preprocessed_dir); or run with --triton_samples wire"
            )
