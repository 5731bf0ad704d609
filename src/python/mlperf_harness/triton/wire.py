"""What travels between the harness and a Triton server: tritonclient's gRPC calls, in one place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from mlperf_harness.triton.addresses import ServerAddress
from mlperf_harness.triton.served_model import (
    ANSWER,
    DIGEST,
    HOLD,
    IDENTITY,
    KEEPALIVE_MS,
    MODEL_VERSION,
    SAMPLE_IDS,
    SAMPLES,
    ServedModel,
    from_wire,
    to_wire,
)

Callback = Callable[[Any, Any], None]


# After a failed connection gRPC waits before trying again, doubling the wait up to 120 s: a server
# started again after a minute's outage went unnoticed for seconds past the end of a soak run
# (the prober's calls failed at once, on the backoff). Tried again within a second instead.
_RECONNECT_BACKOFF_MS = (("initial", 250), ("min", 250), ("max", 1_000))


def connect(address: ServerAddress) -> grpcclient.InferenceServerClient:
    """tritonclient's channel (its message limits and keepalive options, which channel_args replace
    whole), with keepalive pings (KEEPALIVE_MS), which notice a host that vanished without closing its
    connections, and a short reconnect backoff."""
    options = [
        ("grpc.max_send_message_length", grpcclient.MAX_GRPC_MESSAGE_SIZE),
        ("grpc.max_receive_message_length", grpcclient.MAX_GRPC_MESSAGE_SIZE),
        ("grpc.keepalive_time_ms", KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        (
            "grpc.http2.max_pings_without_data",
            grpcclient.KeepAliveOptions().http2_max_pings_without_data,
        ),
        *((f"grpc.{kind}_reconnect_backoff_ms", ms) for kind, ms in _RECONNECT_BACKOFF_MS),
    ]
    return grpcclient.InferenceServerClient(str(address), channel_args=options)


def samples_input(samples: npt.NDArray[np.generic]) -> grpcclient.InferInput:
    shaped = to_wire(samples)
    tensor = grpcclient.InferInput(SAMPLES, list(shaped.shape), np_to_triton_dtype(shaped.dtype))
    tensor.set_data_from_numpy(np.ascontiguousarray(shaped))
    return tensor


def ids_input(indices: Sequence[int]) -> grpcclient.InferInput:
    """A batch named by its sample indices (--triton_samples staged), one row each."""
    tensor = grpcclient.InferInput(SAMPLE_IDS, [len(indices), 1], "INT64")
    tensor.set_data_from_numpy(np.asarray(indices, dtype=np.int64).reshape(-1, 1))
    return tensor


def send(
    client: grpcclient.InferenceServerClient,
    served: ServedModel,
    batch: grpcclient.InferInput,
    response: str,
    timeout_s: float,
    callback: Callback,
) -> None:
    """An asynchronous request of `batch` (samples_input or ids_input) for `response` (OUTPUT or
    ANSWER); `callback(result, error)` runs on gRPC's thread."""
    client.async_infer(
        served.model_name,
        [batch],
        lambda result, error: callback(result, error),
        model_version=str(MODEL_VERSION),
        outputs=[grpcclient.InferRequestedOutput(response)],
        client_timeout=timeout_s,
    )


def hold(
    client: grpcclient.InferenceServerClient,
    served: ServedModel,
    indices: Sequence[int],
    timeout_s: float,
) -> npt.NDArray[np.uint8]:
    """Have the server hold exactly these samples (--triton_samples staged); the digest of what it
    loaded (served_model.samples_digest)."""
    tensor = grpcclient.InferInput(HOLD, [1, len(indices)], "INT64")
    tensor.set_data_from_numpy(np.asarray(indices, dtype=np.int64).reshape(1, -1))
    result = client.infer(
        served.model_name,
        [tensor],
        model_version=str(MODEL_VERSION),
        outputs=[grpcclient.InferRequestedOutput(DIGEST)],
        client_timeout=timeout_s,
    )
    digest: npt.NDArray[np.uint8] = result.as_numpy(DIGEST).reshape(-1)
    return digest


def rows(result: Any, served: ServedModel, response: str) -> npt.NDArray[np.generic]:
    """The response's rows in the shape the server's runner (or postprocessing) made them."""
    array = result.as_numpy(response)
    shape = served.answer_shape if response == ANSWER else served.output_shape
    return from_wire(array, shape, served.varying_shapes)


def ask_identity(
    client: grpcclient.InferenceServerClient,
    model_name: str,
    sample: npt.NDArray[np.generic],
    timeout_s: float,
) -> bytes:
    """The server's identity record (one sample in; the model does not run)."""
    result = client.infer(
        model_name,
        [samples_input(sample)],
        model_version=str(MODEL_VERSION),
        outputs=[grpcclient.InferRequestedOutput(IDENTITY)],
        client_timeout=timeout_s,
    )
    value = result.as_numpy(IDENTITY).reshape(-1)[0]
    return bytes(value)


def serves(client: grpcclient.InferenceServerClient, served: ServedModel, timeout_s: float) -> bool:
    """Whether the server answers and serves the same model and engine as before."""
    try:
        if not client.is_model_ready(
            served.model_name, str(MODEL_VERSION), client_timeout=timeout_s
        ):
            return False
        sample = np.zeros((1, *served.sample_shape), dtype=served.sample_dtype)
        found = ServedModel.from_json(
            ask_identity(client, served.model_name, sample, timeout_s), ""
        )
    except Exception:
        return False
    return found == served


def describe_error(error: Any) -> str:
    """One short line for a failed call: the gRPC status and the message's first line."""
    if isinstance(error, InferenceServerException):
        status = error.status() or "error"
        message = (error.message() or "").strip().splitlines()
        text = message[0] if message else ""
        return f"{status.replace('StatusCode.', '')}: {text[:160]}".rstrip(": ")
    return f"{type(error).__name__}: {str(error).splitlines()[0][:160] if str(error) else ''}"
