"""Numeric precision of a training or fine-tuning job: the ``precision`` knob.

- ``auto`` (the default): bf16 autocast on a GPU of compute capability 8.0 or more (A100, H100,
  RTX 30/40), fp16 autocast with a gradient scaler below it (V100, T4, RTX 20, where bf16 is
  emulated and slow), float32 on the CPU (what every CPU run did before the knob existed).
- ``bf16``, ``fp16``, ``fp32``: that one, on any device (bf16 on an older GPU runs, slowly, with
  a warning; ``fp32`` is the one for debugging numerics).

Autocast covers the encoder's forward pass; poolings and losses compute in float32 (they cast
what they read), the weights and the optimiser stay float32. fp16 needs
``torch.amp.GradScaler``: the loss is scaled before backward, the gradients unscaled before
clipping, and a step whose gradients overflowed is skipped, the learning-rate schedule with it
(:class:`clinsent.optimisation.Optimisation`).

Torch is imported inside the functions: the settings side (the knob's allowed values) stays light.
"""

from __future__ import annotations

from typing import Any, Literal

Precision = Literal["auto", "bf16", "fp16", "fp32"]
# what users write for a precision -> the name this knob uses (named in the error, not accepted silently)
ALIASES = {
    "half": "fp16",
    "float16": "fp16",
    "16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "full": "fp32",
    "32": "fp32",
    "single": "fp32",
    "amp": "auto",
    "mixed": "auto",
}
PRECISION_DOC = (
    "auto (bf16 on a GPU of compute capability >= 8.0, fp16 with a gradient scaler below, fp32 on the "
    "CPU), bf16, fp16 or fp32"
)


def resolve(setting: str, device: Any) -> str:
    """The precision a job uses on ``device`` (a ``torch.device``): bf16, fp16 or fp32."""
    if setting != "auto":
        return setting
    if getattr(device, "type", str(device)) != "cuda":
        return "fp32"
    import torch

    return "bf16" if torch.cuda.get_device_capability(device)[0] >= 8 else "fp16"


def autocast(device: Any, precision: str = "auto") -> Any:
    """The autocast context of ``precision`` on ``device`` (disabled for fp32)."""
    import torch

    kind = getattr(device, "type", str(device))
    resolved = resolve(precision, device)
    if resolved == "fp32":
        return torch.autocast(device_type=kind, enabled=False)
    return torch.autocast(device_type=kind, dtype=torch.bfloat16 if resolved == "bf16" else torch.float16)


def grad_scaler(device: Any, precision: str) -> Any:
    """A ``torch.amp.GradScaler`` for fp16, else None."""
    if resolve(precision, device) != "fp16":
        return None
    import torch

    return torch.amp.GradScaler(getattr(device, "type", str(device)))


def slow_on(device: Any, precision: str) -> str | None:
    """A warning when ``precision`` is emulated on ``device`` (bf16 below compute capability 8.0)."""
    if resolve(precision, device) != "bf16" or getattr(device, "type", str(device)) != "cuda":
        return None
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    if major >= 8:
        return None
    return (
        f"precision bf16 on a GPU of compute capability {major}.{minor}: bf16 is emulated there and slow; "
        "precision: auto (fp16 with a gradient scaler) is the usual choice"
    )
