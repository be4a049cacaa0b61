"""Count the operators of a training step that make the host wait for the device.

On CUDA the host queues kernels and runs ahead; an operator whose result the host needs (a
tensor's value as a Python number, a data-dependent output shape) blocks until every queued
kernel has finished, so the host cannot prepare the next kernels meanwhile. These operators are
the same on the CPU, where nothing waits, so a test counts them there
(:class:`SyncCounter`, a ``TorchDispatchMode`` that sees every aten operator the step
dispatches) and a step that dispatches none of them runs unblocked on CUDA.

:data:`SYNC_OPS`: ``_local_scalar_dense`` (``.item()``, ``bool(t)``, ``int(t)``, ``float(t)``),
``is_nonzero`` (``if t:``), ``equal``, and the operators whose output size depends on the data
(``nonzero``, ``masked_select``, ``unique``, ``repeat_interleave`` without an output size,
indexing with a boolean mask, which runs ``nonzero`` on a device). A CPU-to-device copy is not one; a
device-to-CPU copy is (``_to_copy`` to the CPU of a device tensor), counted by
:class:`SyncCounter` only where the step runs on a device.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

SYNC_OPS = frozenset(
    {
        "aten._local_scalar_dense",
        "aten.is_nonzero",
        "aten.equal",
        "aten.nonzero",
        "aten.nonzero_static",
        "aten.masked_select",
        "aten._unique",
        "aten._unique2",
        "aten.unique_dim",
        "aten.unique_consecutive",
        "aten.repeat_interleave",
        "aten.item",
    }
)


BOOLEAN_INDEX_OPS = frozenset({"aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl_"})


class SyncCounter(TorchDispatchMode):
    """``with SyncCounter() as c: step()`` counts the host-syncing operators (``c.syncs``, by
    name) and every dispatched operator (``c.ops``: what the host dispatches one by one)."""

    def __init__(self) -> None:
        super().__init__()
        self.syncs: Counter[str] = Counter()
        self.ops = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = str(func.overloadpacket)  # e.g. "aten.nonzero"
        self.ops += 1
        if name in SYNC_OPS and not (name == "aten.repeat_interleave" and (kwargs or {}).get("output_size")):
            self.syncs[name] += 1
        elif name in ("aten._to_copy", "aten.copy_") and _device_to_host(args, kwargs):
            self.syncs[f"{name} (to host)"] += 1
        elif name in BOOLEAN_INDEX_OPS and _boolean_index(args):
            self.syncs[f"{name} (boolean mask)"] += 1
        return func(*args, **(kwargs or {}))


def _boolean_index(args: Any) -> bool:
    """An indexing operator given a boolean mask (on a device it runs ``nonzero`` first; on the
    CPU the kernel does it inside, unseen by the dispatcher)."""
    indices = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else []
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices)


def _device_to_host(args: Any, kwargs: Any) -> bool:
    """A copy from an accelerator tensor to the CPU (the host waits for it)."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors:
        return False
    target = (kwargs or {}).get("device")
    if target is not None:
        return tensors[0].device.type != "cpu" and torch.device(target).type == "cpu"
    return len(tensors) > 1 and tensors[0].device.type == "cpu" and tensors[1].device.type != "cpu"  # copy_(dst, src)
