"""Map an entity's character span to token positions through the tokenizer's offset mapping."""

from __future__ import annotations

import torch


def span_token_mask(offsets: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """Bool [T]: tokens that overlap characters [start, end). Special and padding tokens,
    whose offsets are (0, 0), never do. Empty when truncation cut the entity off."""
    tok_start, tok_end = offsets[..., 0], offsets[..., 1]
    return (tok_end > tok_start) & (tok_end > start) & (tok_start < end)
