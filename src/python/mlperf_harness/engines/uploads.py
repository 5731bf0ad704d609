"""Host arrays onto the GPU without waiting for it: the generative engines' prefills and steps.

torch copies a pageable CPU tensor to a GPU with cudaMemcpyAsync and then synchronizes the stream,
so the host waits until every kernel queued before the copy has run. A Llama admission issued
right after a decode step therefore waited for that step, then for its own prefill (its last
upload), before the scheduler could go on: the host and the GPU took turns. From pinned memory
with non_blocking the copy is queued behind that work and the host goes on issuing; torch's
caching host allocator keeps the pinned block until the copy has run. On the CPU both are the
plain tensor, as before.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def _on_gpu(device: Any) -> bool:
    return getattr(device, "type", str(device)) == "cuda"


def to_device(torch: Any, array: npt.ArrayLike, device: Any) -> Any:
    """`array` as a tensor on `device`, queued behind the stream's work on a GPU."""
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if not _on_gpu(device):
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def copy_into(torch: Any, target: Any, array: npt.ArrayLike) -> None:
    """`array` into the tensor `target` (same shape), as `to_device` uploads."""
    source = torch.from_numpy(np.ascontiguousarray(array))
    if _on_gpu(target.device):
        target.copy_(source.pin_memory(), non_blocking=True)
    else:
        target.copy_(source)
