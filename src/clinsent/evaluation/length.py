"""The evaluation length: how many tokens of each text every embedding of an eval set reads.

Training truncates to the method's ``max_length`` (what fits a batch); evaluation need not.
``evaluation.max_length`` in the config is one value for every row of every eval set, so the
rows of a table compare alike:

- ``auto`` (the default): the base model's own length, as sentence-transformers reads it: its
  ``sentence_bert_config.json``'s ``max_seq_length`` where the model has one (the packaged
  MiniLM: 256), else its tokenizer's ``model_max_length`` (sentence-transformers 6 saves the
  length there), at most the model's ``max_position_embeddings`` (what
  ``sentence_transformers``' ``Transformer`` takes without a length);
- a number of tokens, at most the model's positions (BioSimCSE fixes 128 in all its
  experiments; the healthcare-LM paper limits documents to 512).

The train job saves every model (the untrained one too) with this length as its
``max_seq_length``, so the embed jobs, a later ``SentenceTransformer(path).encode`` and the
release copies all read the same tokens; the curve sets are scored at it as well, so the
selected step is chosen on the numbers the table reports. SimCSE's own evaluation does not
truncate whatever length it trained at; this is that choice, stated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError

AUTO = "auto"
UNBOUNDED = 10**6  # a tokenizer without a limit says about 1e30


def configured(config: RunConfig) -> int | str:
    """``evaluation.max_length`` of a config: ``auto`` or a number of tokens."""
    value = config.evaluation.max_length
    return value if value == AUTO else int(value)


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def own_length(folder: str | Path | None, model_config: Any) -> int | None:
    """The model's own length, read from its files (the loaded tokenizer already holds the
    training length): ``sentence_bert_config.json``'s ``max_seq_length`` (sentence-transformers
    before 6), else ``tokenizer_config.json``'s ``model_max_length`` (where sentence-transformers
    6 keeps it, and every Hugging Face tokenizer its limit), at most the model's positions; the
    positions alone where the files say nothing. None when nothing states one."""
    positions = getattr(model_config, "max_position_embeddings", None)
    limits: list[int] = []
    if folder is not None and Path(folder).is_dir():
        saved = _json(Path(folder) / "sentence_bert_config.json").get("max_seq_length")
        if not (isinstance(saved, int) and saved > 0):
            saved = _json(Path(folder) / "tokenizer_config.json").get("model_max_length")
        if isinstance(saved, int | float) and 0 < saved < UNBOUNDED:
            limits.append(int(saved))
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    return min(limits) if limits else None


def resolve(spec: int | str, folder: str | Path | None, model_config: Any) -> int:
    """The evaluation length of one base model (``folder``: its files, where they are local):
    ``spec`` (``auto``, or a number: at most that many tokens, and never more than the model's
    positions, as a paper's "512 tokens" means on a model with fewer)."""
    positions = getattr(model_config, "max_position_embeddings", None)
    if spec == AUTO:
        own = own_length(folder, model_config)
        if own is None:
            raise InputError(
                "config: evaluation.max_length",
                "auto: the base model states no length (no sentence_bert_config.json, tokenizer limit or positions)",
                "set evaluation.max_length to a number of tokens",
            )
        return own
    length = int(spec)
    return min(length, positions) if isinstance(positions, int) and positions > 0 else length


def describe(lengths: Mapping[str, int], spec: int | str) -> str:
    """The table note's words: ``lengths``: base model -> its evaluation length."""
    own = spec == AUTO
    if len(set(lengths.values())) == 1:
        (n,) = set(lengths.values())
        bases = "the base model" if len(lengths) == 1 else "every base model"
        how = f"{bases}'s own length" if own else "evaluation.max_length"
        names = list(lengths)
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
        return f"Texts are evaluated at up to {n} tokens on {who} ({how}), every row alike."
    each = [f"{n} tokens on {base}" for base, n in lengths.items()]
    shown = ", ".join(each[:-1]) + f" and {each[-1]}"
    how = "each base model's own length" if own else "evaluation.max_length, at most each base model's positions"
    return f"Texts are evaluated at up to {shown} ({how}), every row of a base model alike."
