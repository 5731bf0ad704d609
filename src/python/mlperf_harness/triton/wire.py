"""What travels between the harness and a Triton server: tritonclient's gRPC calls, in one place.

Our served models are decoupled (backend_model.py), and Triton answers a decoupled model over gRPC
streams only: a run's batches go out on one long-lived stream per server (ServerStream), and
every other request (the identity record, a HOLD) on a stream of its own (`call`). A stream carries no
per-request deadline: the run's process keeps its own (client_sut.py)."""

from __future__ import annotations

import contextlib
import queue
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


# (request id, or None for an error of the stream itself; result; error)
StreamCallback = Callable[[str | None, Any, Any], None]


class ServerStream:
    """A stream to one server (a connection of its own) for requests of `model_name` answering
    `output`: a run's batches, or one control call. `on_reply(request_id, result, error)` runs on
    the stream's own thread (tritonclient's) for every answer; an error carries no request id (the
    stream's protocol has none for it), and is the server's. After an error the stream is broken:
    close it, and open it again once the server is back."""

    def __init__(self, address: ServerAddress, model_name: str, output: str) -> None:
        self._client = connect(address)
        self._model_name = model_name
        self._outputs = [grpcclient.InferRequestedOutput(output)]

    def open(self, on_reply: StreamCallback) -> None:
        def reply(result: Any, error: Any) -> None:
            request_id = None if result is None else result.get_response().id
            on_reply(request_id, result, error)

        self._client.start_stream(callback=reply)

    def send(self, request_id: str, inputs: Sequence[grpcclient.InferInput]) -> None:
        """`inputs`: a batch (samples_input or ids_input), or a control request's. Raises if the
        stream is broken."""
        self._client.async_stream_infer(
            self._model_name,
            list(inputs),
            model_version=str(MODEL_VERSION),
            outputs=self._outputs,
            request_id=request_id,
        )

    def close(self) -> None:
        """Cancels what it still carries (a lost server's batches, re-sent elsewhere)."""
        with contextlib.suppress(Exception):
            self._client.stop_stream(cancel_requests=True)

    def shut(self) -> None:
        self.close()
        with contextlib.suppress(Exception):
            self._client.close()


def call(
    address: ServerAddress,
    model_name: str,
    inputs: list[grpcclient.InferInput],
    output: str,
    timeout_s: float,
) -> Any:
    """One request on a stream of its own (a connection of its own, so that it never waits behind
    a run's batches); its result, or InferenceServerException (also when no answer came within
    `timeout_s`)."""
    answers: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
    stream = ServerStream(address, model_name, output)
    try:
        stream.open(lambda _request_id, result, error: answers.put((result, error)))
        stream.send("call", inputs)
        try:
            result, error = answers.get(timeout=timeout_s)
        except queue.Empty:
            raise InferenceServerException(
                f"no answer within {timeout_s:g} s", status="StatusCode.DEADLINE_EXCEEDED"
            ) from None
        if error is not None:
            raise error
        return result
    finally:
        stream.shut()


def hold(
    address: ServerAddress, served: ServedModel, indices: Sequence[int], timeout_s: float
) -> npt.NDArray[np.uint8]:
    """Have the server hold exactly these samples (--triton_samples staged); the digest of what it
    loaded (served_model.samples_digest)."""
    tensor = grpcclient.InferInput(HOLD, [1, len(indices)], "INT64")
    tensor.set_data_from_numpy(np.asarray(indices, dtype=np.int64).reshape(1, -1))
    result = call(address, served.model_name, [tensor], DIGEST, timeout_s)
    digest: npt.NDArray[np.uint8] = result.as_numpy(DIGEST).reshape(-1)
    return digest


def rows(result: Any, served: ServedModel, response: str) -> npt.NDArray[np.generic]:
    """The response's rows in the shape the server's runner (or postprocessing) made them."""
    array = result.as_numpy(response)
    shape = served.answer_shape if response == ANSWER else served.output_shape
    return from_wire(array, shape, served.varying_shapes)


def ask_identity(
    address: ServerAddress, model_name: str, sample: npt.NDArray[np.generic], timeout_s: float
) -> bytes:
    """The server's identity record (one sample in; the model does not run)."""
    result = call(address, model_name, [samples_input(sample)], IDENTITY, timeout_s)
    value = result.as_numpy(IDENTITY).reshape(-1)[0]
    return bytes(value)


def serves(address: ServerAddress, served: ServedModel, timeout_s: float) -> bool:
    """Whether the server answers and serves the same model and engine as before."""
    sample = np.zeros((1, *served.sample_shape), dtype=served.sample_dtype)
    try:
        found = ServedModel.from_json(
            ask_identity(address, served.model_name, sample, timeout_s), ""
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
