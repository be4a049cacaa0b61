"""The record of what a model job ran on: device, its name and compute capability, the CUDA and
cuDNN versions, torch, transformers and sentence-transformers, the precision and the GPU slot.

Scores move with these (kernels, reductions and bf16 rounding differ between cards and
releases), so every training and fine-tuning record keeps them (``selection.json``, the
fine-tune result files) and the trainer's first log line says the same. Library versions are
read from the installed packages' metadata, so recording them imports nothing new.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

from clinsent.gpu.slots import SLOT_ENV


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def hardware_record(device: Any, precision: str) -> dict[str, Any]:
    """The record of one job on ``device`` (a ``torch.device``) with ``precision`` (bf16, fp16, fp32)."""
    import torch

    cuda = getattr(device, "type", str(device)) == "cuda"
    if cuda:
        index = device.index if device.index is not None else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        name, capability = torch.cuda.get_device_name(index), f"{major}.{minor}"
    else:
        name, capability = f"{platform.processor() or platform.machine()} ({torch.get_num_threads()} threads)", None
    cudnn = torch.backends.cudnn.version() if cuda and torch.backends.cudnn.is_available() else None
    return {
        "device": "cuda" if cuda else "cpu",
        "device_name": name,
        "compute_capability": capability,
        "cuda": torch.version.cuda if cuda else None,
        "cudnn": cudnn,
        "torch": torch.__version__,
        "transformers": _version("transformers"),
        "sentence_transformers": _version("sentence-transformers"),
        "precision": precision,
        "gpu_slot": os.environ.get(SLOT_ENV, "none (not recorded)"),
    }


def describe(record: dict[str, Any]) -> str:
    """One log line of a record."""
    where = (
        record["device_name"]
        if record["device"] == "cpu"
        else (
            f"{record['device_name']}, compute capability {record['compute_capability']}, CUDA {record['cuda']}, "
            f"cuDNN {record['cudnn']}"
        )
    )
    return (
        f"device: {record['device']} ({where}), precision {record['precision']}, torch {record['torch']}, "
        f"transformers {record['transformers']}, sentence-transformers {record['sentence_transformers']}, "
        f"gpu slot {record['gpu_slot']}"
    )
