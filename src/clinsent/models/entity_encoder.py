"""Entity encoders of MED-SE (Hwang et al. 2022, section 3.2 "Entity Pooling", Table 8).

The token states of an entity's span (the main encoder's last layer, same forward pass as
the sentence embedding) go through an entity encoder and are then average-pooled over the
span into one entity embedding h_ent:

- ``mean``: no encoder, the span's token states are averaged directly;
- ``bilstm``: a bidirectional LSTM (d/2 per direction) over the span's tokens;
- ``fc``: one fully connected layer (Linear d->d) applied to every span token;
- ``transformer`` (the paper's default): a shallow Transformer encoder over the span's tokens;
- ``cross_attention`` ("CA", after Lin et al. 2021): the span's tokens are the queries of a
  multi-head attention over all of the sentence's (unpadded) tokens, followed by a residual,
  LayerNorm and a feed-forward block, so the entity is encoded in its sentence's context.
"""

from __future__ import annotations

import torch
from torch import nn


def _heads(dim: int, heads: int | None) -> int:
    n = heads or max(1, dim // 64)
    while dim % n:
        n -= 1
    return n


class CrossAttentionBlock(nn.Module):
    """Queries (entity tokens) attend over keys/values (the sentence's tokens); post-norm."""

    def __init__(self, dim: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(4 * dim, dim))
        self.norm2 = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, queries: torch.Tensor, context: torch.Tensor, context_padding: torch.Tensor) -> torch.Tensor:
        attended, _ = self.attn(queries, context, context, key_padding_mask=context_padding, need_weights=False)
        x = self.norm1(queries + self.drop(attended))
        return self.norm2(x + self.drop(self.ff(x)))


class EntityEncoder(nn.Module):
    """Gathers each entity's span, encodes it (:meth:`encode`, one subclass per kind) and
    average-pools the encoded span into h_ent."""

    host_lengths = False  # whether ``encode`` reads the spans' lengths on the host (a captured step cannot)

    def __init__(self, dim: int, layers: int = 1, heads: int | None = None, dropout: float = 0.1) -> None:
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(
                f"EntityEncoder(dim={dim!r}): build an entity encoder by name with entity_encoder(kind, dim)"
            )

    def encode(
        self,
        spans: torch.Tensor,
        valid: torch.Tensor,
        lengths: torch.Tensor,
        token_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """spans [n, S, d] (each entity's tokens at the front, ``valid`` [n, S] marks them; ``lengths``
        [n], their counts, on the host) -> [n, S, d]."""
        return spans

    def forward(
        self,
        token_states: torch.Tensor,
        span_mask: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        width: int | None = None,
        lengths: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``token_states`` [n, T, d], ``span_mask`` [n, T] (True on the entity's tokens) and the
        sentences' ``attention_mask`` [n, T] (needed by ``cross_attention``) -> h_ent [n, d].

        The span is gathered to the front of a compact [n, S, d] tensor first, so the
        span-only encoders see the entity's tokens and nothing else. ``lengths`` [n], each span's
        token count, and ``width`` S, their maximum, are counted on the host when the batch is
        prepared (the bilstm packs its sequences by the lengths), so the step never waits for
        the device to count them (and a compiled step sees S as a number); counted here when
        not given.
        """
        if lengths is None:
            lengths = span_mask.sum(dim=1).cpu()
        if width is None:
            width = int(lengths.max()) if len(lengths) else 0
        index = torch.argsort((~span_mask).to(torch.int8), dim=1, stable=True)[:, :width]
        valid = torch.arange(width, device=span_mask.device).unsqueeze(0) < lengths.to(
            span_mask.device, non_blocking=True
        ).unsqueeze(1)
        return self.pooled(token_states, index, valid, attention_mask, lengths)

    def pooled(
        self,
        token_states: torch.Tensor,
        index: torch.Tensor,
        valid: torch.Tensor,
        attention_mask: torch.Tensor | None,
        lengths: torch.Tensor,
    ) -> torch.Tensor:
        """h_ent [n, d] from each entity's token positions ``index`` [n, S] (its tokens first,
        ``valid`` [n, S] marks them; ``lengths`` [n], their counts, on the host): the span's
        states gathered, encoded and mean-pooled. The positions are made when the batch is
        prepared (:mod:`clinsent.losses.medse`), so the step neither sorts nor counts."""
        spans = torch.gather(token_states, 1, index.unsqueeze(-1).expand(-1, -1, token_states.size(-1)))
        spans = self.encode(spans, valid, lengths, token_states, attention_mask)
        mask = valid.unsqueeze(-1).to(spans.dtype)
        return (spans * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


class MeanEncoder(EntityEncoder):
    """``mean``: the span's token states averaged as they are."""


class TransformerEncoder(EntityEncoder):
    """``transformer``: a shallow post-norm Transformer encoder over the span's tokens."""

    def __init__(self, dim: int, layers: int = 1, heads: int | None = None, dropout: float = 0.1) -> None:
        super().__init__(dim)
        layer = nn.TransformerEncoderLayer(
            dim, _heads(dim, heads), dim_feedforward=4 * dim, dropout=dropout, batch_first=True, norm_first=False
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)

    def encode(
        self,
        spans: torch.Tensor,
        valid: torch.Tensor,
        lengths: torch.Tensor,
        token_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        return self.encoder(spans, src_key_padding_mask=~valid)


class BiLSTMEncoder(EntityEncoder):
    """``bilstm``: a bidirectional LSTM (d/2 per direction) over the span's tokens."""

    host_lengths = True  # pack_padded_sequence sorts by them on the host

    def __init__(self, dim: int, layers: int = 1, heads: int | None = None, dropout: float = 0.1) -> None:
        super().__init__(dim)
        self.encoder = nn.LSTM(dim, dim // 2, num_layers=layers, batch_first=True, bidirectional=True)
        self.lstm_out = nn.Linear(2 * (dim // 2), dim) if dim % 2 else nn.Identity()

    def encode(
        self,
        spans: torch.Tensor,
        valid: torch.Tensor,
        lengths: torch.Tensor,
        token_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(
            spans,
            lengths.clamp(min=1),
            batch_first=True,  # on the host
            enforce_sorted=False,
        )
        # zero initial states sized here: left to the LSTM, it reads the batch size from the packed
        # batch sizes with `.item()` (a host tensor, but the counter cannot tell it from a sync)
        zeros = spans.new_zeros(2 * self.encoder.num_layers, spans.size(0), self.encoder.hidden_size)
        out, _ = self.encoder(packed, (zeros, zeros))
        spans, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=spans.size(1))
        return self.lstm_out(spans)


class LinearEncoder(EntityEncoder):
    """``fc``: one fully connected layer (Linear d->d) applied to every span token."""

    def __init__(self, dim: int, layers: int = 1, heads: int | None = None, dropout: float = 0.1) -> None:
        super().__init__(dim)
        self.encoder = nn.Linear(dim, dim)

    def encode(
        self,
        spans: torch.Tensor,
        valid: torch.Tensor,
        lengths: torch.Tensor,
        token_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        return self.encoder(spans)


class CrossAttentionEncoder(EntityEncoder):
    """``cross_attention``: the span's tokens attend over all of the sentence's tokens."""

    def __init__(self, dim: int, layers: int = 1, heads: int | None = None, dropout: float = 0.1) -> None:
        super().__init__(dim)
        self.encoder = nn.ModuleList(CrossAttentionBlock(dim, _heads(dim, heads), dropout) for _ in range(layers))

    def encode(
        self,
        spans: torch.Tensor,
        valid: torch.Tensor,
        lengths: torch.Tensor,
        token_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        if attention_mask is None:
            raise ValueError("the cross_attention entity encoder needs the sentences' attention_mask")
        padding = attention_mask.to(spans.device) == 0
        for block in self.encoder:
            spans = block(spans, token_states, padding)
        return spans


# the name a config gives (``methods.<id>.entity_encoder``, MedseSettings) -> its module
ENTITY_ENCODERS: dict[str, type[EntityEncoder]] = {
    "mean": MeanEncoder,
    "bilstm": BiLSTMEncoder,
    "fc": LinearEncoder,
    "transformer": TransformerEncoder,
    "cross_attention": CrossAttentionEncoder,
}


def entity_encoder(
    kind: str, dim: int, layers: int = 1, heads: int | None = None, dropout: float = 0.1
) -> EntityEncoder:
    """The entity encoder a config names, built for hidden size ``dim``."""
    if kind not in ENTITY_ENCODERS:
        raise ValueError(f"unknown entity encoder {kind!r}; use one of {', '.join(ENTITY_ENCODERS)}")
    return ENTITY_ENCODERS[kind](dim, layers=layers, heads=heads, dropout=dropout)
