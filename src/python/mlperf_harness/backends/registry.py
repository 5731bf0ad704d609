"""Backend names -> runner factories. Factories import their backend lazily so heavy optional
libraries (onnxruntime, torch, tensorrt) load only when that backend is chosen."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError


def _null() -> Runner:
    from mlperf_harness.backends.null.runner import NullRunner

    return NullRunner()


_FACTORIES: dict[str, Callable[[], Runner]] = {"null": _null}


def backend_names() -> Sequence[str]:
    return sorted(_FACTORIES)


def create_runner(name: str) -> Runner:
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise HarnessError(
            f"unknown backend {name!r}: choose one of {', '.join(backend_names())}"
        ) from None
    return factory()
