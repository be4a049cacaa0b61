"""Entity encoders of MED-SE (Hwang et al. 2022, section 3.2, "Entity Pooling", Table 8).

The token states of an entity's span (from the main encoder's last layer, same forward pass
as the sentence embedding) go through an entity encoder and are then average-pooled into
one entity embedding h_ent. ``transformer`` (a shallow Transformer encoder) is the paper's
default; ``mean`` averages the span's token states directly.
"""

from __future__ import annotations

import torch
from torch import nn

ENTITY_ENCODERS = ("mean", "transformer")


class EntityEncoder(nn.Module):
    def __init__(self, kind: str, dim: int, layers: int = 1, heads: int | None = None, dropout: float = 0.1) -> None:
        super().__init__()
        if kind not in ENTITY_ENCODERS:
            raise ValueError(f"unknown entity encoder {kind!r}; use one of {', '.join(ENTITY_ENCODERS)}")
        self.kind = kind
        self.encoder: nn.Module | None = None
        if kind == "transformer":
            n_heads = heads or max(1, dim // 64)
            layer = nn.TransformerEncoderLayer(dim, n_heads, dim_feedforward=4 * dim, dropout=dropout,
                                               batch_first=True, norm_first=False)
            self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)

    def forward(self, token_states: torch.Tensor, span_mask: torch.Tensor) -> torch.Tensor:
        """``token_states`` [n, T, d] and ``span_mask`` [n, T] (True on the entity's tokens) -> [n, d].

        The span is gathered to the front of a compact [n, S, d] tensor first, so the encoder
        attends over the entity's tokens only.
        """
        lengths = span_mask.sum(dim=1)
        width = int(lengths.max().item()) if len(lengths) else 0
        idx = torch.argsort((~span_mask).to(torch.int8), dim=1, stable=True)[:, :width]
        spans = torch.gather(token_states, 1, idx.unsqueeze(-1).expand(-1, -1, token_states.size(-1)))
        valid = torch.arange(width, device=span_mask.device).unsqueeze(0) < lengths.unsqueeze(1)
        if self.encoder is not None:
            spans = self.encoder(spans, src_key_padding_mask=~valid)
        mask = valid.unsqueeze(-1).to(spans.dtype)
        return (spans * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
