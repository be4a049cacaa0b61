"""A model folder is complete or refused: its weights, its config and its tokenizer are there.

Why a check of our own: transformers builds a tokenizer from whatever it finds, and a folder
without its tokenizer files (``tokenizer.json``, ``vocab.txt``) still loads: a BERT tokenizer of
five special tokens, every word ``[UNK]``, every text embedded alike, with no warning. So every
command and job that loads a model folder (the dry run's model check,
:func:`clinsent.models.base.resolve_model`, :func:`clinsent.embedding.vectors.load_model` and
``load_encoder``, the embed command, the token classifier) calls :func:`check_complete` first,
and a folder that lacks any of them is refused, naming the folder and the missing files.

What a folder needs, in the folder of its transformer (the root, or the first module's folder
that ``modules.json`` names):

- ``config.json``;
- its weights: ``model.safetensors`` or ``pytorch_model.bin`` (or their sharded index, or a
  TensorFlow or Flax file);
- its tokenizer: ``tokenizer.json`` (the fast tokenizer, whatever its kind), or the vocabulary
  files its tokenizer class needs (:data:`VOCABULARIES`): ``vocab.txt`` (WordPiece: BERT and its
  kin), ``vocab.json`` with ``merges.txt`` (byte-level BPE: RoBERTa, GPT-2, BART), or a
  sentencepiece model (``*.model``: XLM-R, T5, ALBERT, DeBERTa-v2). A class not in the table
  is satisfied by any of the three.
"""

from __future__ import annotations

import json
from pathlib import Path

from clinsent.errors import InputError

WEIGHTS = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
    "tf_model.h5",
    "flax_model.msgpack",
)
WORDPIECE, BPE, SENTENCEPIECE = ("vocab.txt",), ("vocab.json", "merges.txt"), ("*.model",)
# a tokenizer class's name (its start, longest first) -> the vocabulary files it reads
VOCABULARIES: dict[str, tuple[str, ...]] = {
    "XLMRoberta": SENTENCEPIECE,
    "Camembert": SENTENCEPIECE,
    "DebertaV2": SENTENCEPIECE,
    "Albert": SENTENCEPIECE,
    "XLNet": SENTENCEPIECE,
    "T5": SENTENCEPIECE,
    "BigBird": SENTENCEPIECE,
    "Llama": SENTENCEPIECE,
    "Roberta": BPE,
    "GPT2": BPE,
    "Bart": BPE,
    "Longformer": BPE,
    "Deberta": BPE,
    "MPNet": WORDPIECE,
    "DistilBert": WORDPIECE,
    "Electra": WORDPIECE,
    "MobileBert": WORDPIECE,
    "Funnel": WORDPIECE,
    "Bert": WORDPIECE,
}


def transformer_root(folder: Path) -> Path:
    """Where a model folder keeps its transformer: the first module's folder of a
    sentence-transformers ``modules.json`` (its ``path``; most often the root), else the root."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        path = str(modules[0].get("path", "")) if isinstance(modules, list) and modules else ""
    except (OSError, ValueError, AttributeError):
        path = ""
    root = folder / path
    return root if (root / "config.json").is_file() or not (folder / "config.json").is_file() else folder


def _has(root: Path, name: str) -> bool:
    return any(root.glob(name)) if "*" in name else (root / name).is_file()


def tokenizer_class(root: Path) -> str:
    """The tokenizer class the folder names (``tokenizer_config.json``), without ``Fast``; '' if none."""
    try:
        named = json.loads((root / "tokenizer_config.json").read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        return ""
    return str(named or "").removesuffix("Fast")


def vocabulary_of(name: str) -> tuple[tuple[str, ...], ...]:
    """The vocabulary files a tokenizer class reads (one set), or, unknown, any of the three."""
    found = next((files for prefix, files in VOCABULARIES.items() if name.startswith(prefix)), None)
    return (found,) if found is not None else (WORDPIECE, BPE, SENTENCEPIECE)


def missing_files(folder: str | Path) -> list[str]:
    """What ``folder`` lacks of a complete model (see the module), in words; empty when complete."""
    root = transformer_root(Path(folder))
    missing = []
    if not (root / "config.json").is_file():
        missing.append("config.json")
    if not any((root / w).is_file() for w in WEIGHTS):
        missing.append("its weights (model.safetensors or pytorch_model.bin)")
    missing += [why for file in sorted(root.glob("*.safetensors")) if (why := cut_short(file))]
    if not (root / "tokenizer.json").is_file():
        name = tokenizer_class(root)
        choices = vocabulary_of(name)
        if not any(all(_has(root, f) for f in files) for files in choices):
            needs = " or ".join(" with ".join(files) for files in choices)
            missing.append(f"its tokenizer (tokenizer.json, or {needs}{f' for its {name}' if name else ''})")
    return missing


def cut_short(file: Path) -> str | None:
    """Why a ``.safetensors`` file is not whole (a copy or download cut short), or None: its
    header (an 8-byte little-endian length, then that much JSON) read alone, and the file as long
    as the header's last tensor ends. The weights themselves are not read."""
    size = file.stat().st_size
    try:
        with file.open("rb") as fh:
            length = int.from_bytes(fh.read(8), "little")
            if size < 8 or length <= 0 or 8 + length > size:
                return f"a whole {file.name} (its header is cut short: {size:,} bytes)"
            header = json.loads(fh.read(length))
    except (OSError, ValueError):
        return f"a readable {file.name} (its header is not the safetensors JSON)"
    ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)]
    needed = 8 + length + max(ends, default=0)
    if size < needed:
        return f"a whole {file.name} ({size:,} of its {needed:,} bytes: cut short)"
    return None


def check_complete(folder: str | Path, where: str | Path) -> None:
    """Refuse a model folder that lacks its config, weights or tokenizer (see the module), naming
    ``where`` (the config key or flag), the folder and what is missing."""
    missing = missing_files(folder)
    if missing:
        root = transformer_root(Path(folder))
        at = f" (in {root})" if root != Path(folder) else ""
        raise InputError(
            where,
            f"the model folder {folder} is incomplete: it lacks {'; '.join(missing)}{at}",
            "copy the model's missing files into the folder (save it whole: model.save(folder), or "
            "tokenizer.save_pretrained(folder) for the tokenizer), or download it again",
        )
