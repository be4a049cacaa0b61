"""One training job over several processes: the group torch's launcher starts, as the step sees it.

A job with ``training.processes`` > 1 (or ``training.nodes`` > 1) is started by torch's own
launcher (``torch.distributed.run``, torchrun: :mod:`clinsent.train.launch`); each process it
starts reads its rank from the launcher's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``)
and joins torch's default process group here (:meth:`Processes.join`): NCCL where the process has
a CUDA device (one per process, ``cuda:LOCAL_RANK``), gloo on the CPU otherwise, so every path runs
where there is no GPU. Beside it a gloo group on the CPU carries the host-side agreements (the stop
flag, the random states of a checkpoint, the wait while process 0 evaluates), so none of them
waits on the device.

:class:`Processes` is what the step and the trainer ask of the group, each a collective of torch's
own: the rows of the global batch this process embeds (:meth:`share`), every process's vectors in
rank order (:meth:`gather`), the additive loss parts summed (:meth:`summed`), whether any process
was asked to stop (:meth:`agree`), host objects from every process (:meth:`objects`), and a check
that every process holds the same tensors (:meth:`check_same`): DDP's averaging can be skipped
without an error (a parameter that no loss uses, with ``find_unused_parameters`` off), and a job
that goes on with replicas that differ trains W models and saves one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from clinsent.errors import InputError

# how long the other processes wait for process 0 (its evaluations of the curve sets and its
# checkpoints run while they wait on the CPU group): far longer than any evaluation
HOST_WAIT = timedelta(hours=12)
LAUNCHED = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")  # set by torchrun


class Desynchronised(RuntimeError):
    """The processes' replicas differ: their gradients were not averaged alike."""


@dataclass
class Processes:
    """This process's place in the job's group (``rank`` of ``world``; ``local_rank`` on its node)."""

    rank: int
    world: int
    local_rank: int
    backend: str
    host: Any = None  # the gloo group on the CPU (None: the default group is gloo already)

    @classmethod
    def launched(cls, environ: Mapping[str, str] = os.environ) -> bool:
        """Whether this process was started by torch's launcher (its environment says so)."""
        return all(k in environ for k in LAUNCHED)

    @classmethod
    def join(cls, environ: Mapping[str, str] = os.environ) -> Processes:
        """Join the launcher's group (see the module): NCCL on this process's CUDA device where
        it has one, gloo on the CPU otherwise."""
        rank, world, local = int(environ["RANK"]), int(environ["WORLD_SIZE"]), int(environ["LOCAL_RANK"])
        cuda = torch.cuda.is_available()
        if cuda and torch.cuda.device_count() <= local:
            raise InputError(
                "training.processes",
                f"process {local} of this node has no GPU of its own: the job sees {torch.cuda.device_count()} "
                "(one process per GPU)",
                "give the job as many GPUs as training.processes (--resources gpu, the Slurm profile's gpus), or "
                "lower training.processes",
            )
        if cuda:
            torch.cuda.set_device(local)
        backend = "nccl" if cuda else "gloo"
        if not dist.is_initialized():
            dist.init_process_group(backend, timeout=HOST_WAIT if backend == "gloo" else None)
        host = dist.new_group(backend="gloo", timeout=HOST_WAIT) if backend != "gloo" else None
        return cls(rank, world, local, backend, host)

    @property
    def main(self) -> bool:
        """Process 0: the one that evaluates, checkpoints and writes (every other writes nothing)."""
        return self.rank == 0

    def device(self) -> torch.device:
        """This process's device: its CUDA device (one per process), or the CPU."""
        return torch.device("cuda", self.local_rank) if self.backend == "nccl" else torch.device("cpu")

    def describe(self) -> str:
        """The train log's line: ``processes: N (backend)``."""
        return f"processes: {self.world} ({self.backend}); this is rank {self.rank}"

    def share(self, rows: int) -> tuple[int, int]:
        """The rows ``start..stop-1`` of a global batch of ``rows`` that this process embeds: an
        even split (the config refuses a batch size the processes do not divide; a short last
        batch gives the first processes one row more)."""
        base, extra = divmod(rows, self.world)
        start = self.rank * base + min(self.rank, extra)
        return start, start + base + (1 if self.rank < extra else 0)

    def gather(self, tensors: Mapping[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, list[int]]]:
        """Every process's ``tensors`` (first axis: rows), concatenated in rank order by name, and
        each name's row count per process. Detached: the gradient of the global loss with
        respect to them is taken on the gathered copies and sent back to each process's own rows
        by the step (:mod:`clinsent.train.spread`). A name may be missing on some processes, and
        the row counts may differ (MED-SE: the entity slots of each process's rows): they are
        agreed on the CPU group first, then each name is one ``all_gather`` of rows padded to the
        longest."""
        shapes = {k: (tuple(v.shape), str(v.dtype).removeprefix("torch.")) for k, v in tensors.items()}
        everyone: list[dict[str, Any]] = self.objects(shapes)
        out: dict[str, torch.Tensor] = {}
        counts: dict[str, list[int]] = {}
        for name in sorted({k for s in everyone for k in s}):
            shape, dtype = next(s[name] for s in everyone if name in s)
            rows = [s[name][0][0] if name in s else 0 for s in everyone]
            mine = tensors.get(name)
            if mine is None:
                mine = torch.zeros((0, *shape[1:]), dtype=getattr(torch, dtype), device=self.device())
            longest = max(rows)
            padded = mine.detach()
            if len(padded) < longest:
                padded = torch.cat([padded, padded.new_zeros((longest - len(padded), *padded.shape[1:]))])
            parts = [torch.empty_like(padded) for _ in range(self.world)]
            dist.all_gather(parts, padded.contiguous())
            out[name] = torch.cat([p[:n] for p, n in zip(parts, rows, strict=True)])
            counts[name] = rows
        return out, counts

    def summed(self, parts: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The loss parts added up over the processes (each process's additive parts are its rows'
        share of the global batch's): one all-reduce on the device, for the log and the curve."""
        if not parts:
            return {}
        names = list(parts)
        stacked = torch.stack([parts[k].detach().float() for k in names])
        dist.all_reduce(stacked)
        return dict(zip(names, stacked.unbind(), strict=True))

    def agree(self, flag: bool) -> bool:
        """Whether any process has ``flag`` set (its SIGTERM): one all-reduce on the CPU group,
        so every process stops after the same step and no device is waited on."""
        value = torch.tensor([1 if flag else 0], dtype=torch.int32)
        dist.all_reduce(value, op=dist.ReduceOp.MAX, group=self.host)
        return bool(value.item())

    def objects(self, obj: Any) -> list[Any]:
        """``obj`` of every process, in rank order (the CPU group: host objects only)."""
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj, group=self.host)
        return out

    def wait(self) -> None:
        """Every process waits here until all arrive (the CPU group; long enough for process 0's
        evaluations and checkpoints)."""
        dist.barrier(group=self.host)

    def check_same(self, named: Mapping[str, torch.Tensor], what: str) -> None:
        """Refuse to go on where the processes' ``named`` tensors differ (each compared by its sum
        and its sum of squares in float64); the error names the first tensors that differ."""
        names = list(named)
        if not names:
            return
        with torch.no_grad():
            sums = torch.stack(
                [torch.stack([t.double().sum(), t.double().square().sum()]) for t in named.values()]
            ).cpu()
        everyone = self.objects(sums)
        differ = [
            n
            for i, n in enumerate(names)
            if any(not torch.allclose(other[i], everyone[0][i], rtol=1e-6, atol=1e-9) for other in everyone)
        ]
        if differ:
            raise Desynchronised(
                f"the {self.world} processes' {what} differ ({len(differ)} tensors, first: {', '.join(differ[:3])}): "
                "their gradients were not averaged alike, so each process would train its own model. "
                "This is a bug in the distributed step, not in your input: report it with the job's log"
            )

    def close(self) -> None:
        """Leave the group (the launcher's processes end after this)."""
        if dist.is_initialized():
            dist.destroy_process_group()
