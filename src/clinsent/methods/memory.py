"""The memory and speed knobs checked against each other and against the objective's loss, when
the config is read: ``accumulate`` only where no loss term compares rows across the batch,
``mini_batch`` only where one does, ``unpad`` and ``grouped`` without gradient checkpointing (their
forwards are not transformers' checkpointed one), ``varlen_attention`` not with ``unpad: false``, ``compile_mode``
not with ``compile: false`` (with ``auto`` they turn the knob on: :mod:`clinsent.gpu.speed`).
"""

from __future__ import annotations

from clinsent.errors import InputError
from clinsent.methods.knobs import MethodSettings, TrainedSettings


def check_memory(
    s: MethodSettings, objective: str, steps_in_chunks: bool, in_batch_negatives: bool, where: str
) -> None:
    """Raise an InputError naming the knob for a combination that cannot run (see the module)."""
    if not isinstance(s, TrainedSettings):
        return
    if s.unpad is True and s.gradient_checkpointing:
        raise InputError(
            f"{where}.unpad",
            "the unpadded forward does not checkpoint its layers",
            "use one of unpad and gradient_checkpointing (mini_batch also bounds memory)",
        )
    if s.grouped is True and s.gradient_checkpointing:
        raise InputError(
            f"{where}.grouped",
            "the grouped pass does not checkpoint its layers",
            "use one of grouped and gradient_checkpointing (mini_batch also bounds memory)",
        )
    if s.varlen_attention and (s.unpad is False or s.gradient_checkpointing):
        raise InputError(
            f"{where}.varlen_attention",
            "variable-length attention runs on the unpadded forward"
            + (", which does not checkpoint its layers" if s.gradient_checkpointing else ", and unpad is false"),
            "remove varlen_attention, or set unpad to auto or true (without gradient_checkpointing)",
        )
    if s.compile_mode != "default" and s.compile is False:
        raise InputError(
            f"{where}.compile_mode",
            "torch.compile's mode applies to the compiled step, and compile is false",
            "set compile to auto or true, or remove compile_mode",
        )
    if not steps_in_chunks and (s.accumulate > 1 or s.mini_batch is not None):
        key = "accumulate" if s.accumulate > 1 else "mini_batch"
        raise InputError(
            f"{where}.{key}",
            f"objective {objective}'s loss steps a batch in one pass (it has no "
            "embed/score halves and no chunk, see clinsent.losses.base)",
            f"remove {key}, or give the loss those methods and set steps_in_chunks = True on {objective}",
        )
    if in_batch_negatives and s.accumulate > 1:
        raise InputError(
            f"{where}.accumulate",
            f"objective {objective} contrasts each row with the other rows "
            f"of its batch: {s.accumulate} accumulated micro-batches would each have 1/{s.accumulate} "
            "of the negatives",
            f"use mini_batch: {max(1, s.batch_size // s.accumulate)} instead (every "
            "negative of the batch and its gradients, the memory of that many rows)",
        )
    if not in_batch_negatives and s.mini_batch is not None:
        raise InputError(
            f"{where}.mini_batch",
            f"objective {objective} has no in-batch negatives, so chunks need no second pass",
            f"use accumulate: {max(1, s.batch_size // s.mini_batch)} instead "
            "(micro-batches, one optimiser step, the full batch's gradient)",
        )
    if s.accumulate > s.batch_size:
        raise InputError(
            f"{where}.accumulate",
            f"{s.accumulate} micro-batches of a batch of {s.batch_size}",
            "give accumulate at most batch_size",
        )
