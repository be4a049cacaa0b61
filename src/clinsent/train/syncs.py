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
:class:`SyncCounter` only where the step runs on a device. So is a host-to-device copy without
``non_blocking`` (CUDA copies it synchronously, pinned memory or not): on the CPU it dispatches
nothing, so :class:`BlockingCopies` counts the ``Tensor.to`` calls of this package's code that
name a device without it.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
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
    name) and every dispatched operator (``c.ops``: what the host dispatches one by one).

    It also counts, as ``"Tensor.to (blocking) at <file>:<line>"``, every ``Tensor.to`` /
    ``Tensor.cuda`` call of this package's code that names a device without ``non_blocking=True``
    (:class:`BlockingCopies`). On the CPU such a call dispatches nothing, so the operator count
    cannot see it; on CUDA, a copy from the host without ``non_blocking`` makes the host wait (even
    from pinned memory), as the first ``make gpu-check`` on an H200 found in CT's labels and
    NT-Xent's targets."""

    def __init__(self) -> None:
        super().__init__()
        self.syncs: Counter[str] = Counter()
        self.ops = 0
        self._copies = BlockingCopies(self.syncs)

    def __enter__(self) -> SyncCounter:
        self._copies.__enter__()
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self._copies.__exit__(*exc)

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


class BlockingCopies(TorchFunctionMode):
    """Counts, into ``counts``, the ``Tensor.to(device)`` and ``Tensor.cuda()`` calls that this
    package's own code makes without ``non_blocking=True``, by where they are
    (``"Tensor.to (blocking) at clinsent/losses/ct.py:62"``). Seen at the Python API, where a call
    that moves nothing on the CPU still shows what it would do on a device. Calls made inside
    transformers or torch are not counted: there the tensor is already on its device (the CUDA
    test of the same step, ``tests/train/test_cuda.py``, passes with them)."""

    def __init__(self, counts: Counter[str]) -> None:
        super().__init__()
        self.counts = counts

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func in (torch.Tensor.to, torch.Tensor.cuda) and not kwargs.get("non_blocking", False):
            if _names_a_device(func, args[1:], kwargs) and (where := _our_caller()):
                self.counts[f"Tensor.to (blocking) at {where}"] += 1
        return func(*args, **kwargs)


def _our_caller() -> str | None:
    """``clinsent/<module>.py:<line>`` of the call where this package's code called ``to`` /
    ``cuda`` itself; None where torch or a library did (``clip_grad_norm_``, say)."""
    frame = sys._getframe(2)  # past this function and __torch_function__: the caller of Tensor.to
    if not frame.f_code.co_filename.startswith(_PACKAGE):
        return None
    return f"clinsent/{os.path.relpath(frame.f_code.co_filename, _PACKAGE)}:{frame.f_lineno}"


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _names_a_device(func: Any, rest: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a ``to`` / ``cuda`` call (its arguments after ``self``) moves to a device without
    ``non_blocking`` passed positionally as true: ``cuda(device, non_blocking)`` always moves;
    ``to(device, dtype, non_blocking)`` and ``to(other, non_blocking)`` move, ``to(dtype)``
    does not."""
    if func is torch.Tensor.cuda:
        return not (len(rest) > 1 and rest[1] is True)
    if "device" in kwargs or "other" in kwargs:
        return True
    if not rest or isinstance(rest[0], torch.dtype):
        return False
    flag = 1 if isinstance(rest[0], torch.Tensor) else 2
    return not (len(rest) > flag and rest[flag] is True)
