"""A sentence-transformers model folder's own pooling (``pooling: model``): what its
``modules.json`` and Pooling ``config.json`` say, as one of our poolings, so a model is scored
the way its authors configured it (the benchmark's default for a model that has the files).

Both layouts are read: the boolean ``pooling_mode_*`` keys of sentence-transformers before v5
and the ``pooling_mode`` string of later versions. Only the poolings we rebuild are accepted
(CLS: ``cls_before_pooler``, mean: ``mean``); a ``Normalize`` module after it is not pooling: a
model saved from this one keeps it (:func:`ends_normalized`); any other module after the pooling
(a ``Dense`` head) or another pooling mode is an error that asks for ``pooling`` to be given."""

from __future__ import annotations

import json
from pathlib import Path

from clinsent.errors import InputError

# the sentence-transformers pooling modes we rebuild -> our pooling names
MODES = {"cls": "cls_before_pooler", "mean": "mean"}
_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}


def own_pooling(folder: str | Path, where: str = "pooling: model") -> str:
    """The pooling the model folder's sentence-transformers configuration gives (one of ``MODES``' values)."""
    folder = Path(folder)
    modules_file = folder / "modules.json"
    fix = "give the model's pooling (cls_before_pooler or mean) instead of model"
    if not modules_file.is_file():
        raise InputError(where, f"{folder} has no modules.json (not a sentence-transformers model)", fix)
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if "Pooling" not in kinds:
        raise InputError(where, f"{modules_file} lists no Pooling module", fix)
    after = [k for k in kinds[kinds.index("Pooling") + 1 :] if k != "Normalize"]
    if after:
        raise InputError(where, f"{modules_file}: modules after the pooling ({', '.join(after)}) are not rebuilt", fix)
    config_file = folder / str(modules[kinds.index("Pooling")].get("path", "")) / "config.json"
    if not config_file.is_file():
        raise InputError(where, f"{config_file} does not exist", fix)
    pooling = json.loads(config_file.read_text(encoding="utf-8"))
    if "pooling_mode" in pooling:
        value = pooling["pooling_mode"]
        modes = [value] if isinstance(value, str) else list(value)
    else:
        modes = [mode for key, mode in _FLAGS.items() if pooling.get(key)]
    if len(modes) != 1 or modes[0] not in MODES:
        raise InputError(
            where,
            f"{config_file}: pooling {' + '.join(map(str, modes)) or 'none'} is not one we rebuild "
            f"({', '.join(MODES)})",
            fix,
        )
    return MODES[modes[0]]


def module_kinds(folder: str | Path) -> list[str]:
    """The module kinds a sentence-transformers folder lists (``Transformer``, ``Pooling``,
    ``Normalize``, ...), in order; empty for a folder without ``modules.json`` (a plain
    transformers model)."""
    modules_file = Path(folder) / "modules.json"
    if not modules_file.is_file():
        return []
    return [str(m.get("type", "")).rsplit(".", 1)[-1] for m in json.loads(modules_file.read_text(encoding="utf-8"))]


def ends_normalized(kinds: list[str]) -> bool:
    """Whether a model's vectors leave it as unit vectors (``kinds``, :func:`module_kinds`: its last
    module is ``Normalize``):
    a model trained from it keeps that module, so its users' vectors stay of the same kind
    (inner-product search gives the neighbours cosine does)."""
    return bool(kinds) and kinds[-1] == "Normalize"
