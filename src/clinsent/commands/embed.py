"""``python -m clinsent embed``: the embed command (:mod:`clinsent.embedding.command`) with its
``--quality-set`` read here, above the eval tasks it builds (the embedding package sits below them)."""

from __future__ import annotations

from pathlib import Path

from clinsent.embedding import command
from clinsent.errors import InputError
from clinsent.tasks import Task


def quality_task_of(path: Path | None, fmt: str | None, quantize: str) -> Task | None:
    """The eval set ``--quality-set`` names, as a task scored from embeddings (read now, before
    the model loads: a bad file is one line); None where no set is named."""
    if path is None and fmt is None:
        return None
    if path is None or fmt is None:
        raise InputError(
            "--quality-set" if path is None else "--quality-format",
            "a quality set needs both its file and its format",
            "give --quality-set FILE --quality-format NAME (an eval set's format, e.g. n2c2_sts), or neither",
        )
    if quantize == "none":
        raise InputError(
            "--quality-set", "scores the quantized vectors against fp32's, and --quantize is none", "give --quantize"
        )
    from clinsent.config.declare import build
    from clinsent.config.sections import EvalSetConfig, Evaluation
    from clinsent.tasks.config import resolve_eval_set

    entry = resolve_eval_set("quality_set", build(EvalSetConfig, {"path": str(path), "format": fmt}), Evaluation())
    if not entry.task.zero_shot:
        raise InputError("--quality-format", f"{fmt} is not scored from embeddings", "give an STS-like format")
    entry.task.texts()  # read through the reader registry now, not after the model loads
    return entry.task


def main(argv: list[str]) -> int:
    return command.main(argv, quality_of=quality_task_of)
