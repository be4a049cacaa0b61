"""Embedding on CPU-only servers: a saved model run with ONNX Runtime, optionally int8.

Many clinical data enclaves have no GPU. ``backend: onnx`` (``--backend onnx``) exports the saved
sentence-transformers model once, the whole pipeline as one graph (the transformer, its pooling,
a Dense and Normalize where the model has them: ``SentenceTransformer.forward``'s
``sentence_embedding``), and runs it with ONNX Runtime on the CPU; ``quantize: int8`` quantizes
the graph's MatMul weights to int8, per output channel, with dynamic activations
(``onnxruntime.quantization.quantize_dynamic``).

Why not ``SentenceTransformer(path, backend="onnx")``: that path goes through ``optimum``'s
exporter, which is not among this project's pinned packages and, at the pinned
sentence-transformers and transformers, is not known to work; the export here uses only
``torch.onnx`` (TorchScript exporter, opset 17) and ``onnxruntime``, the libraries it wraps.
Why MatMul weights per channel only: quantizing every op (the default, the embeddings' Gather
included) cost the packaged MiniLM 0.04 Spearman on the demo BIOSSES pairs, MatMul per channel
0.006 (``bench/embed.py`` measures it on every run).

The export is cached beside the model folder, ``<model>.onnx/<identity>/{fp32,int8}.onnx``, keyed
by the model's files (:func:`clinsent.corpus_shards.model_identity`): a retrained model gets a
new export, shards of one run share one (each writes atomically, so two shards exporting at
once leave one whole file). Tokenization is the model's own tokenizer at the model's
``max_seq_length`` (the evaluation length it was saved with).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from clinsent.errors import InputError

BACKENDS = ("torch", "onnx")
QUANTIZE = ("none", "int8")
OPSET = 17


def check_backend(backend: str, quantize: str, where: str) -> None:
    """A known backend and quantization, and int8 only with ONNX: one line naming ``where``."""
    from clinsent.errors import shown_value

    if backend not in BACKENDS:
        raise InputError(f"{where}.backend", f"{shown_value(backend)} is not a backend", f"give one of {BACKENDS}")
    if quantize not in QUANTIZE:
        raise InputError(
            f"{where}.quantize", f"{shown_value(quantize)} is not a quantization", f"give one of {QUANTIZE}"
        )
    if quantize != "none" and backend != "onnx":
        raise InputError(
            f"{where}.quantize",
            f"{quantize} quantization needs the onnx backend (torch runs the model as saved)",
            "set backend: onnx, or quantize: none",
        )


def export_folder(model_dir: Path) -> Path:
    from clinsent.corpus_shards import model_identity

    return model_dir.parent / f"{model_dir.name}.onnx" / model_identity(model_dir)


def _replace_atomically(write: Any, target: Path) -> None:
    """``write(path)`` to a temporary file beside ``target``, renamed onto it: the guarded,
    atomic writer (:func:`clinsent.io.atomic_path`)."""
    from clinsent.io import atomic_path

    with atomic_path(target, ".onnx") as tmp:
        write(str(tmp))


def export(model_dir: Path, quantize: str = "none", log: Any = print) -> Path:
    """The model's ONNX graph (``fp32.onnx``, or ``int8.onnx`` quantized from it), exported on
    first use and cached beside the model folder (see the module)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from clinsent.guarded import claim

    folder = claim(export_folder(model_dir), inputs=(model_dir,))
    fp32, int8 = folder / "fp32.onnx", folder / "int8.onnx"
    wanted = int8 if quantize == "int8" else fp32
    if wanted.exists():
        return wanted
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.parent.iterdir():  # exports of the model's earlier files (a retrained run)
        if stale.is_dir() and stale != folder and len(stale.name) == len(folder.name):
            import shutil

            shutil.rmtree(claim(stale, inputs=(model_dir,)), ignore_errors=True)
    if not fp32.exists():
        model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True).eval()
        names = list(model.tokenizer.model_input_names)
        sample = model.tokenizer(["an example sentence", "two"], padding=True, return_tensors="pt")

        class Graph(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
                return self.model(dict(zip(names, inputs, strict=True)))["sentence_embedding"]

        axes = {name: {0: "batch", 1: "tokens"} for name in names} | {"sentence_embedding": {0: "batch"}}

        def write(path: str) -> None:
            import warnings

            with torch.no_grad(), warnings.catch_warnings():  # the tracer's notes on shapes it fixes: none apply
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    Graph(),
                    tuple(sample[n] for n in names),
                    path,
                    input_names=names,
                    output_names=["sentence_embedding"],
                    dynamic_axes=axes,
                    opset_version=OPSET,
                    dynamo=False,
                )

        log(f"exporting {model_dir.name} to ONNX (once; cached in {folder.parent.name}/{folder.name})")
        _replace_atomically(write, fp32)
    if quantize == "int8" and not int8.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        def quantized(path: str) -> None:
            import logging

            logging.disable(logging.WARNING)  # its advice to pre-process (shape inference) is for static quantization
            try:
                quantize_dynamic(
                    str(fp32), path, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
                )
            finally:
                logging.disable(logging.NOTSET)

        _replace_atomically(quantized, int8)
    return wanted


class OnnxEncoder:
    """``encode(texts, batch_size)`` as ``SentenceTransformer.encode``, run by ONNX Runtime."""

    def __init__(self, model_dir: Path, quantize: str = "none", threads: int | None = None, log: Any = print) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        from clinsent.models.saved import saved_max_length, transformer_folder

        graph = export(model_dir, quantize, log)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.session.get_inputs()]
        root = transformer_folder(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
        own = self.tokenizer.model_max_length
        self.max_length = saved_max_length(root) or (int(own) if own < 10**6 else None)

    def encode(self, texts: list[str], batch_size: int = 64, **_: Any) -> np.ndarray:
        out = []
        for i in range(0, len(texts), batch_size):
            batch = self.tokenizer(
                texts[i : i + batch_size],
                padding=True,
                truncation=True,
                return_tensors="np",
                **({"max_length": self.max_length} if self.max_length else {}),
            )
            feeds = {name: np.asarray(batch[name], dtype=np.int64) for name in self.names}
            out.append(self.session.run(None, feeds)[0].astype(np.float32))
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)
