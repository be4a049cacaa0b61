"""Helpers the tests share (a test module never imports another test module's functions): the
repository's folders here, the Snakemake runs in :mod:`testkit.workflow`, the losses' rows,
encoders and passes in :mod:`testkit.losses`."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"


def model_folder(folder: Path) -> Path:
    """A model folder as the loaders' completeness check sees one (clinsent.models.complete): its
    config, weights and a WordPiece vocabulary, all empty (the weights a whole safetensors file of
    no tensor: its 8-byte header length and an empty JSON header); nothing loads its weights."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    return folder


def sentence_model(base: Path, folder: Path) -> Path:
    """A saved sentence-transformers model (Transformer, mean Pooling, Normalize) made from the
    tiny BERT ``base``, as a trained run's ``model/`` folder is; for commands that need one."""
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(base), max_seq_length=32)
    modules = [word, models.Pooling(word.get_word_embedding_dimension(), "mean"), models.Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder))
    return folder
