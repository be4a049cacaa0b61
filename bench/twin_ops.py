"""Operators one step dispatches with two encoders of one architecture (MED-SE's sentence and
definition encoders, CT's twins): run one after the other, as the trainer does without
``grouped``, against run as one batched model (``torch.func``: both weight sets stacked, ``vmap``
over them; the sentence encoder's weights taken twice, once per SimCSE view) and as one grouped
pass (:mod:`clinsent.models.grouped`, ``grouped: true``), the question being which brings
MED-SE's operators nearer SimCSE's (the CPU proxies' goal, 1.6x).

A BERT of BERT-base's depth (12 layers) at a tiny width, batch 8, length 16, eval mode (no
dropout, so both ways compute the same function: the largest difference of their outputs is
printed too); the attention mask is passed as an additive 4-D mask (transformers' own mask
building branches on the mask's values, which ``vmap`` refuses). Forward and backward, counted
by :class:`clinsent.train.syncs.SyncCounter`.

Usage: python bench/twin_ops.py
"""

from __future__ import annotations

import torch
from torch.func import functional_call, vmap
from transformers import BertConfig, BertModel

from clinsent.models.grouped import Part, hidden_states
from clinsent.train.syncs import SyncCounter

ROWS, LENGTH = 8, 16


def main() -> None:
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=1000,
        hidden_size=32,
        num_hidden_layers=12,
        num_attention_heads=2,
        intermediate_size=64,
    )
    sentences, definitions = BertModel(config).eval(), BertModel(config).eval()
    print(f"attention: {sentences.config._attn_implementation} (transformers' default, as the trainer's)")
    ids = torch.randint(5, 1000, (3, ROWS, LENGTH))  # two views of the sentences, then the definitions
    mask = torch.ones(3, ROWS, LENGTH)
    mask[:, :, 12:] = 0
    additive = (1.0 - mask[:, :, None, None, :]) * torch.finfo(torch.float32).min
    own, other = dict(sentences.named_parameters()), dict(definitions.named_parameters())

    def one_after_the_other() -> torch.Tensor:
        views = sentences(ids[:2].reshape(2 * ROWS, LENGTH), attention_mask=mask[:2].reshape(2 * ROWS, LENGTH))
        defs = definitions(ids[2], attention_mask=mask[2])
        (views.last_hidden_state.sum() + defs.last_hidden_state.sum()).backward()
        return torch.cat([views.last_hidden_state, defs.last_hidden_state]).reshape(3, ROWS, LENGTH, -1)

    def forward(params: dict[str, torch.Tensor], x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return functional_call(sentences, params, (x,), {"attention_mask": m}).last_hidden_state

    def batched() -> torch.Tensor:
        stacked = {n: torch.stack([own[n], own[n], other[n]]) for n in own}
        out = vmap(forward)(stacked, ids, additive)
        out.sum().backward()
        return out

    def grouped() -> torch.Tensor:
        views = {"input_ids": ids[:2].reshape(2 * ROWS, LENGTH), "attention_mask": mask[:2].reshape(2 * ROWS, LENGTH)}
        states = hidden_states(
            [Part(sentences, views), Part(definitions, {"input_ids": ids[2], "attention_mask": mask[2]})]
        )
        last = torch.cat([states[0][-1], states[1][-1]])
        last.sum().backward()
        return last.reshape(3, ROWS, LENGTH, -1)

    counts, outputs = {}, {}
    steps = (
        ("one after the other", one_after_the_other),
        ("one batched model (vmap)", batched),
        ("one grouped pass", grouped),
    )
    for name, step in steps:
        step()  # first-use costs out of the count
        with SyncCounter() as counted:
            outputs[name] = step()
        counts[name] = counted.ops
    first, *others = outputs.values()
    real = mask[..., None].bool()
    for name, ops in counts.items():
        print(f"{name}: {ops} operators per forward and backward")
    for name, out in zip(list(outputs)[1:], others, strict=True):  # at the real tokens
        print(f"largest difference, {name}: {float((first - out).detach().abs().masked_select(real).max()):.2e}")


if __name__ == "__main__":
    main()
