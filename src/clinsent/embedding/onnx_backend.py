"""Embedding on CPU-only servers: a saved model run with ONNX Runtime, optionally int8.

Many clinical data enclaves have no GPU. ``backend: onnx`` (``--backend onnx``) exports the saved
sentence-transformers model once, the whole pipeline as one graph (the transformer, its pooling,
a Dense and Normalize where the model has them: ``SentenceTransformer.forward``'s
``sentence_embedding``), and runs it with ONNX Runtime on the CPU; ``quantize: int8`` quantizes
the graph's MatMul weights to int8, per output channel, with dynamic activations
(``onnxruntime.quantization.quantize_dynamic``).

Why our own export, not ``SentenceTransformer(path, backend="onnx")``: that path goes through
``optimum-onnx``'s exporter, whose newest release (0.1.0) requires ``transformers<4.58`` where this
project pins 5.23, so it cannot be installed beside the lock (``bench/peers/`` measures it in an
environment of its own, sentence-transformers 5.7). Its export is also of the transformer's last
hidden state alone, with the modules after it run in torch: on a model whose pooling reads every
layer (``WeightedLayerPooling``: the first_last pooling of the papers' SimCSE runs), that module finds
no layers and passes the last one on, without a word; on the demo's SimCSE model its ONNX and
OpenVINO vectors were 0.21 (mean cosine distance) from the model's own. fastembed pools by mean or
CLS only. The export here uses only ``torch.onnx``
(TorchScript exporter, opset 17) and ``onnxruntime``, and holds the saved model's whole pipeline
(a first-last pooling included). Measured beside those peers (``bench/results/embed.md``), this
graph under ONNX Runtime ran at 1.1 times sentence-transformers' ONNX rate, the same vectors.
Why MatMul weights per channel only: quantizing every op (the default, the embeddings' Gather
included) cost the packaged MiniLM 0.04 Spearman on the demo BIOSSES pairs, MatMul per channel
0.006 (``bench/embed.py`` measures it on every run).

The export is cached where the tool may write (:mod:`clinsent.safety.cache`: ``<results>/cache``
for workflow jobs, the embed command's ``--cache``, by default ``.clinsent-cache`` beside its
output), never beside the model: ``<cache>/onnx/<key>/{fp32,int8}.onnx``, where the key is a hash
of the model folder's bytes (:func:`clinsent.safety.content.content_key`), so a model whose
weights changed with the same names, sizes and times gets a new export. Shards of one run
exporting one model take turns (:func:`clinsent.safety.exclusive.building_lock`): the first
exports, the others wait and reuse it. A cached graph that ONNX Runtime cannot load (a truncated
file) is removed and exported again, with one line. Dynamic int8 quantization uses no
calibration sample, so the key is the model's alone. Tokenization is the model's own tokenizer
at the model's ``max_seq_length`` (the evaluation length it was saved with).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from clinsent.errors import InputError

BACKENDS = ("torch", "onnx", "openvino")
QUANTIZE = ("none", "int8", "bf16")
# a lossy setting -> the backends that run it (torch runs the model as saved)
QUANTIZED_BY = {"int8": ("onnx", "openvino"), "bf16": ("openvino",)}
OPSET = 17


def check_backend(backend: str, quantize: str, where: str) -> None:
    """A known backend and quantization, each lossy setting with a backend that runs it (int8:
    onnx or openvino; bf16: openvino): one line naming ``where``."""
    from clinsent.errors import shown_value

    if backend not in BACKENDS:
        raise InputError(f"{where}.backend", f"{shown_value(backend)} is not a backend", f"give one of {BACKENDS}")
    if quantize not in QUANTIZE:
        raise InputError(
            f"{where}.quantize", f"{shown_value(quantize)} is not a quantization", f"give one of {QUANTIZE}"
        )
    runners = QUANTIZED_BY.get(quantize, (backend,))
    if backend not in runners:
        named = " or ".join(runners)
        raise InputError(
            f"{where}.quantize",
            f"{quantize} runs with the {named} backend, not {backend}",
            f"set backend: {named}, or quantize: none",
        )


def saved_tokenizer(model_dir: Path) -> tuple[Any, int | None]:
    """The saved model's tokenizer and the length it reads (the evaluation length it was saved
    with, else its tokenizer's own), for a backend that runs the exported graph."""
    from transformers import AutoTokenizer

    from clinsent.models.saved import saved_max_length, transformer_folder

    root = transformer_folder(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
    own = tokenizer.model_max_length
    return tokenizer, saved_max_length(root) or (int(own) if own < 10**6 else None)


def export_folder(cache: Path, model_key: str) -> Path:
    """The cache entry of one model's export (``model_key``: its content key)."""
    return cache / "onnx" / model_key


def _replace_atomically(write: Any, target: Path) -> None:
    """``write(path)`` to a temporary file beside ``target``, renamed onto it: the guarded,
    atomic writer (:func:`clinsent.io.files.atomic_path`)."""
    from clinsent.io.files import atomic_path

    with atomic_path(target, ".onnx") as tmp:
        write(str(tmp))


def export(model_dir: Path, quantize: str, cache: Path, model_key: str, log: Any = print) -> Path:
    """The model's ONNX graph (``fp32.onnx``, or ``int8.onnx`` quantized from it), exported on
    first use into the cache entry of ``model_key`` (see the module); the builders of one entry
    take turns, and the later ones reuse the first one's files."""
    from clinsent.safety.exclusive import building_lock
    from clinsent.safety.guard import claim

    folder = claim(export_folder(cache, model_key), inputs=(model_dir,))
    fp32, int8 = folder / "fp32.onnx", folder / "int8.onnx"
    wanted = int8 if quantize == "int8" else fp32
    if wanted.exists():
        return wanted
    with building_lock(folder, waiting=lambda who: log(f"waiting for {who}, which is exporting this model to ONNX")):
        if not wanted.exists():
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            _build(model_dir, quantize, fp32, int8, log)
    return wanted


def _build(model_dir: Path, quantize: str, fp32: Path, int8: Path, log: Any) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

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

        log(f"exporting {model_dir.name} to ONNX (once; cached in {fp32.parent})")
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


class ExportedEncoder:
    """``encode(texts, batch_size)`` as ``SentenceTransformer.encode``, by a runtime that runs the
    model's exported graph (:func:`export`): what the ONNX and OpenVINO encoders share, the saved
    model's tokenizer and length, its content key, batches fed as int64 arrays."""

    names: list[str]  # the graph's inputs, set by the runtime

    def __init__(
        self, model_dir: Path, cache: Path, threads: int | None = None, log: Any = print, model_key: str | None = None
    ) -> None:
        """``cache``: the cache folder (made ready by :func:`clinsent.safety.cache.cache_folder`);
        ``threads``: the runtime's (None: its own choice); ``model_key``: the model folder's
        content key, where the caller has it."""
        from clinsent.safety.content import content_key

        self.cache, self.threads, self.log = cache, threads, log
        self.key = model_key or content_key(model_dir)
        self.tokenizer, self.max_length = saved_tokenizer(model_dir)

    def feeds(self, texts: list[str], names: list[str]) -> dict[str, np.ndarray]:
        from clinsent.models.saved import tokenized

        batch = tokenized(self.tokenizer, texts, self.max_length, "np")
        return {name: np.asarray(batch[name], dtype=np.int64) for name in names}

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """One batch's vectors (float32)."""
        raise NotImplementedError

    def encode(self, texts: list[str], batch_size: int = 64, **_: Any) -> np.ndarray:
        out = [self.run(self.feeds(texts[i : i + batch_size], self.names)) for i in range(0, len(texts), batch_size)]
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


class OnnxEncoder(ExportedEncoder):
    """The exported graph run by ONNX Runtime (``quantize``: ``none`` or ``int8``)."""

    def __init__(self, model_dir: Path, quantize: str, cache: Path, **run: Any) -> None:
        """``run``: :class:`ExportedEncoder`'s ``threads``, ``log`` and ``model_key``."""
        import onnxruntime as ort

        super().__init__(model_dir, cache, **run)
        key, threads, log = self.key, self.threads, self.log
        options = ort.SessionOptions()
        # ONNX Runtime's memory arena (its default), kept: without it each run's intermediate
        # buffers came from the C heap, whose peak varied by chunk (MiniLM f32, 2 threads: 763 to
        # 957 MB over ten chunks; 1.22 times 10,000 sentences' peak at a million). With it, on
        # 10,000 sentences, f32 peaked at 717 to 724 MB over 7 runs (903 to 977 without, 6 runs)
        # at the same rate within this machine's noise (470 to 547/s; 477 to 558); at a million,
        # 1.08 times (f32) and 1.06 (int8) their 10,000-sentence peaks (bench/results/embed.md).
        # It had been turned off when it grew (int8, 1.3 times to 100,000), before each batch's
        # vectors were copied out at once (encode_in_length_order).
        options.enable_cpu_mem_arena = True
        if threads:
            options.intra_op_num_threads = threads
        graph = export(model_dir, quantize, cache, key, log)
        try:
            self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own errors (InvalidProtobuf, Fail): a damaged cache entry
            import shutil

            from clinsent.safety.exclusive import building_lock
            from clinsent.safety.guard import claim

            log(f"the cached ONNX graph {graph} cannot be loaded ({type(exc).__name__}): removed, exporting again")
            with building_lock(graph.parent):  # never under another builder of the same entry
                shutil.rmtree(claim(graph.parent), ignore_errors=True)
            graph = export(model_dir, quantize, cache, key, log)
            self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.session.get_inputs()]

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(self.session.run(None, feeds)[0], dtype=np.float32)
