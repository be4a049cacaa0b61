"""Embed with a saved sentence-transformers model through transformers alone, when its modules
are the ones this pipeline writes (:mod:`clinsent.models.pooling`): a Transformer, then
``WeightedLayerPooling`` and/or ``Pooling`` (cls or mean), optionally a ``Dense`` with tanh (the
MLP of ``cls_mlp``), optionally ``Normalize``.

Why not ``SentenceTransformer(path)`` in every embed job: importing sentence-transformers adds
about 4 s to a job's start (it pulls in scikit-learn and its backends), and an embed job of a
demo eval set is mostly start-up; the grids run hundreds of them. The vectors are the same
(``tests/losses/test_losses_pooling.py`` equates them for every pooling), and any other module list
(another Dense, max pooling, a user's custom module) is loaded with ``SentenceTransformer(path)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.errors import InputError
from clinsent.models.complete import check_complete


def transformer_folder(model_dir: str | Path) -> Path:
    """The folder of a saved model's Transformer module (its first module: the weights and tokenizer)."""
    modules = json.loads((Path(model_dir) / "modules.json").read_text())
    return Path(model_dir) / str(modules[0].get("path", ""))


def tokenized(tokenizer: Any, texts: list[str], max_length: int | None, tensors: str) -> Any:
    """One batch as every encoder of a saved model tokenizes it: padded to its longest text, cut
    at the saved length (``max_length``; None: the tokenizer's own), as ``tensors`` (pt, np)."""
    cut = {"max_length": max_length} if max_length else {}
    return tokenizer(texts, padding=True, truncation=True, return_tensors=tensors, **cut)


def saved_max_length(root: Path) -> int | None:
    """The length a saved Transformer module truncates to: ``sentence_bert_config.json``'s
    ``max_seq_length`` (sentence-transformers before 6); None where the tokenizer's own
    ``model_max_length`` holds it (sentence-transformers 6 saves it there)."""
    config = root / "sentence_bert_config.json"
    value = json.loads(config.read_text()).get("max_seq_length") if config.exists() else None
    return int(value) if isinstance(value, int) and value > 0 else None


def _pooling_mode(pooling_config: dict[str, Any]) -> str | None:
    """'cls' or 'mean' from a Pooling module's config.json (sentence-transformers 6 names one mode;
    earlier versions set one flag each), or None for anything else."""
    mode = pooling_config.get("pooling_mode")
    if isinstance(mode, str):
        return mode if mode in ("cls", "mean") else None
    flags = [k for k, v in pooling_config.items() if k.startswith("pooling_mode_") and v is True]
    named = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean"}
    return named.get(flags[0]) if len(flags) == 1 else None


class SavedEncoder:
    """A saved model of the known layout: ``encode(texts, batch_size)`` as ``SentenceTransformer.encode``."""

    def __init__(self, folder: Path, modules: list[dict[str, Any]], device: str) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.device = torch.device(device)
        root = folder / modules[0]["path"]
        self.max_length = saved_max_length(root)
        self.tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(root), local_files_only=True).to(self.device).eval()
        self.layer_start: int | None = None
        self.layer_weights: Any = None
        self.mode = "mean"
        self.dense: tuple[Any, Any] | None = None  # (weight, bias) of a Dense + tanh after the pooling
        self.normalize = False
        for module in modules[1:]:
            READ_MODULE[module["type"].rsplit(".", 1)[-1]](self, folder / module["path"])

    def encode(self, texts: list[str], batch_size: int = 64, **_: Any) -> np.ndarray:
        import torch

        from clinsent.models.pooling import masked_mean

        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                batch = tokenized(self.tokenizer, texts[i : i + batch_size], self.max_length, "pt")
                batch = {k: v.to(self.device) for k, v in batch.items()}
                result = self.model(**batch, output_hidden_states=self.layer_start is not None, return_dict=True)
                if self.layer_start is not None:
                    layers = torch.stack(result.hidden_states[self.layer_start :]).float()
                    w = self.layer_weights.view(-1, 1, 1, 1)
                    states = (w * layers).sum(dim=0) / self.layer_weights.sum()
                else:
                    states = result.last_hidden_state.float()
                mask = batch["attention_mask"]
                vec = states[:, 0] if self.mode == "cls" else masked_mean(states, mask)
                if self.dense is not None:
                    vec = torch.tanh(torch.nn.functional.linear(vec, *self.dense))
                if self.normalize:
                    vec = torch.nn.functional.normalize(vec, p=2, dim=1)
                out.append(vec.cpu().numpy())
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 0), np.float32)


def _read_layer_pooling(encoder: SavedEncoder, folder: Path) -> None:
    encoder.layer_start = int(json.loads((folder / "config.json").read_text())["layer_start"])
    encoder.layer_weights = _weights(folder)["layer_weights"].float().to(encoder.device)


def _read_pooling(encoder: SavedEncoder, folder: Path) -> None:
    encoder.mode = str(_pooling_mode(json.loads((folder / "config.json").read_text())))


def _read_normalize(encoder: SavedEncoder, folder: Path) -> None:
    encoder.normalize = True


def _read_dense(encoder: SavedEncoder, folder: Path) -> None:
    weights = _weights(folder)
    bias = weights.get("linear.bias")
    encoder.dense = (
        weights["linear.weight"].float().to(encoder.device),
        None if bias is None else bias.float().to(encoder.device),
    )


def _plain_tanh_dense(folder: Path) -> bool:
    """A Dense module this loader runs exactly: tanh, no residual (the MLP a ``cls_mlp`` model keeps)."""
    try:
        dense = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return str(dense.get("activation_function", "torch.nn.modules.activation.Tanh")).endswith(
        ".Tanh"
    ) and not dense.get("use_residual", False)


# a module after the Transformer (the last part of its modules.json "type") -> what it sets
READ_MODULE = {
    "WeightedLayerPooling": _read_layer_pooling,
    "Pooling": _read_pooling,
    "Dense": _read_dense,
    "Normalize": _read_normalize,
}
# the orders of those modules this loader runs: [WeightedLayerPooling] Pooling [Dense] [Normalize]
LAYOUTS = [
    [*w, "Pooling", *d, *n]
    for w in ([], ["WeightedLayerPooling"])
    for d in ([], ["Dense"])
    for n in ([], ["Normalize"])
]


def _weights(folder: Path) -> dict[str, Any]:
    if (folder / "model.safetensors").exists():
        from safetensors.torch import load_file

        return dict(load_file(str(folder / "model.safetensors")))
    import torch

    return dict(torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True))


def known_layout(folder: str | Path) -> list[dict[str, Any]] | None:
    """The modules of a saved model this loader runs exactly, or None (load it with sentence-transformers)."""
    folder = Path(folder)
    try:
        modules = json.loads((folder / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if (
        not kinds
        or kinds[0] != "Transformer"
        or any(k not in READ_MODULE for k in kinds[1:])
        or kinds.count("Pooling") != 1
    ):
        return None
    if kinds[1:] not in LAYOUTS:
        return None
    if "Dense" in kinds and not _plain_tanh_dense(folder / modules[kinds.index("Dense")]["path"]):
        return None
    st = folder / modules[0]["path"] / "sentence_bert_config.json"
    if st.exists() and json.loads(st.read_text()).get("do_lower_case"):
        return None  # sentence-transformers lower-cases before its tokenizer: leave it to the library
    pooling = folder / modules[kinds.index("Pooling")]["path"] / "config.json"
    try:
        if _pooling_mode(json.loads(pooling.read_text())) is None:
            return None
    except (OSError, ValueError):
        return None
    return list(modules)


def check_model_folder(folder: str | Path, where: str, own_pooling: bool = False) -> None:
    """What a job needs of a local model folder, checked when the config is read: a
    ``modules.json`` (where there is one) that parses as sentence-transformers' list of modules,
    the transformer's ``config.json`` (at the root, or in the first module's folder) that
    parses, and with ``own_pooling`` the pooling the folder configures
    (:func:`clinsent.models.st_config.own_pooling`). Errors name ``where`` (the config key)."""
    folder = Path(folder)
    root = folder
    modules_file = folder / "modules.json"
    if modules_file.exists():
        try:
            modules = json.loads(modules_file.read_text(encoding="utf-8"))
            ok = isinstance(modules, list) and all(
                isinstance(m, dict) and isinstance(m.get("path", ""), str) for m in modules
            )
        except (OSError, ValueError):
            ok = False
        if not ok:
            raise InputError(
                where,
                f"{modules_file} is not a readable modules.json (JSON, a list of modules)",
                "restore the model folder (re-save or re-download it), or delete modules.json to load "
                "the folder as a plain transformers model",
            )
        root = folder / str(modules[0].get("path", "")) if modules else folder
    config = next((p for p in (folder / "config.json", root / "config.json") if p.is_file()), None)
    if config is None:
        raise InputError(
            where,
            f"{folder} has no config.json (not a transformers or sentence-transformers model folder)",
            "point it at the model's folder (the one with config.json), or give a Hugging Face id",
        )
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(where, f"{config} is not readable JSON", "restore the model folder") from None
    check_complete(folder, where)  # its weights and tokenizer too (clinsent.models.complete)
    if own_pooling:
        from clinsent.models.st_config import own_pooling as read_pooling

        try:
            read_pooling(folder, where)
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(
                where,
                f"the pooling configuration of {folder} is not readable JSON",
                "restore the model folder, or give the model's pooling instead of model",
            ) from None
