"""One peer's timed run, inside that peer's own environment (``bench/peers/build.py``): called by
``bench/bench_embed.py``, never imported by the project.

    <env>/bin/python bench/peers/run.py PEER BACKEND QUANTIZE MODEL WORK TEXTS QUALITY OUT THREADS

PEER ``sentence-transformers`` (BACKEND torch, onnx or openvino; QUANTIZE none or int8: its own
int8 exports, dynamic for ONNX with the CPU's best instruction set, static for OpenVINO calibrated
on 300 of the run's own texts) or ``fastembed`` (BACKEND onnx: the sentence-transformers ONNX export
in WORK loaded with ``specific_model_path``, mean pooling and normalisation as the model's modules
say). TEXTS and QUALITY: one text per line (TEXTS ``-``: only make the model's export); 64 of
the TEXTS are encoded untimed first (a warm-up), then all of them timed; the QUALITY texts'
vectors go to OUT (``.npy``). Prints one JSON line: sentences per second, seconds, the process's
peak resident MB.
"""

from __future__ import annotations

import csv
import importlib
import json
import resource
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

Encode = Callable[[list[str]], np.ndarray]


def _instruction_set() -> str:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    return "avx512" if "avx512f" in flags else "avx2"


def _this_versions_classes(folder: Path) -> None:
    """Name, in the copy's ``modules.json``, each module's class where this version keeps it.

    A model saved by our sentence-transformers (6.2) names ``Normalize`` as
    ``sentence_transformers.base.modules.normalize.Normalize``; the peer's 5.7 keeps the same class,
    with the same (empty) saved config, in ``sentence_transformer.modules``, and its loader fails on
    the path alone. A class this version lacks under any path is left as saved (the loader then
    says which).
    """
    from sentence_transformers.sentence_transformer import modules as known

    path = folder / "modules.json"
    modules = json.loads(path.read_text())
    for module in modules:
        where, _, name = module["type"].rpartition(".")
        try:
            importlib.import_module(where)
        except ModuleNotFoundError:
            if hasattr(known, name):
                module["type"] = f"{getattr(known, name).__module__}.{name}"
    path.write_text(json.dumps(modules, indent=2))


def sentence_transformers(
    backend: str, quantize: str, model: Path, work: Path, texts: list[str], threads: int
) -> Encode:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    folder = work / f"st-{backend}"
    if not folder.exists():
        shutil.copytree(model, folder)
        _this_versions_classes(folder)
    kwargs: dict = {"backend": backend} if backend != "torch" else {}
    if backend == "onnx" and not (folder / "onnx" / "model.onnx").exists():
        SentenceTransformer(str(folder), device="cpu", backend="onnx").save_pretrained(str(folder))
    if backend == "openvino" and not (folder / "openvino" / "openvino_model.xml").exists():
        SentenceTransformer(str(folder), device="cpu", backend="openvino").save_pretrained(str(folder))
    if quantize == "int8" and backend == "onnx":
        from sentence_transformers import export_dynamic_quantized_onnx_model

        config = _instruction_set()
        name = f"onnx/model_qint8_{config}.onnx"
        if not (folder / name).exists():
            m = SentenceTransformer(str(folder), device="cpu", backend="onnx")
            export_dynamic_quantized_onnx_model(m, config, str(folder))
        kwargs["model_kwargs"] = {"file_name": name}
    if quantize == "int8" and backend == "openvino":
        from optimum.intel import OVQuantizationConfig
        from sentence_transformers import export_static_quantized_openvino_model

        name = "openvino/openvino_model_qint8_quantized.xml"
        if not (folder / name).exists():
            calibration = work / "calibration"
            calibration.mkdir(exist_ok=True)
            with (calibration / "train.csv").open("w", newline="") as f:
                writer = csv.writer(f)
                writer.writerows([["sentence"], *([t] for t in texts[:300])])
            m = SentenceTransformer(str(folder), device="cpu", backend="openvino")
            export_static_quantized_openvino_model(
                m, OVQuantizationConfig(), str(folder), dataset_name=str(calibration),
                dataset_config_name="default", dataset_split="train", column_name="sentence",
            )  # fmt: skip
        kwargs["model_kwargs"] = {"file_name": name}
    st = SentenceTransformer(str(folder), device="cpu", **kwargs)
    return lambda batch: st.encode(batch, batch_size=64, convert_to_numpy=True)


def fastembed(backend: str, quantize: str, model: Path, work: Path, texts: list[str], threads: int) -> Encode:
    # by name: to mypy (which reads this folder) "fastembed" is the peer's folder beside this file
    fastembed_lib = importlib.import_module("fastembed")
    TextEmbedding = fastembed_lib.TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    modules = json.loads((model / "modules.json").read_text())  # the model's own, as saved
    pooling_path = next((model / m["path"] / "config.json" for m in modules if m["type"].endswith("Pooling")), None)
    pooling = json.loads(pooling_path.read_text()) if pooling_path and pooling_path.exists() else {}
    mean = pooling.get("pooling_mode_mean_tokens") or pooling.get("pooling_mode") == "mean"  # 5.x or 6.x keys
    if not mean or len(modules) > 3:
        raise SystemExit("fastembed takes mean (or CLS) pooling and normalisation only: this model has other modules")
    folder = work / "st-onnx"  # the sentence-transformers peer's ONNX export (run before this one)
    if not (folder / "onnx" / "model.onnx").exists():
        raise SystemExit("fastembed needs the sentence-transformers onnx export: run that peer first")
    dim = int(pooling.get("word_embedding_dimension") or pooling["embedding_dimension"])
    TextEmbedding.add_custom_model(
        model="local/bench-model", pooling=PoolingType.MEAN,
        normalization=any(m["type"].endswith("Normalize") for m in modules),
        sources=ModelSource(hf="local/bench-model"), dim=dim, model_file="onnx/model.onnx",
    )  # fmt: skip
    fe = TextEmbedding("local/bench-model", specific_model_path=str(folder), threads=threads)
    return lambda batch: np.stack(list(fe.embed(batch, batch_size=64)))


def main(argv: list[str]) -> None:
    peer, backend, quantize, model, work, texts_file, quality_file, out, threads = argv
    if texts_file == "-":  # only the model's export (what another peer loads: fastembed)
        make = {"sentence-transformers": sentence_transformers, "fastembed": fastembed}[peer]
        make(backend, quantize, Path(model), Path(work), [], int(threads))
        return
    texts = Path(texts_file).read_text().splitlines()
    quality = Path(quality_file).read_text().splitlines()
    make = {"sentence-transformers": sentence_transformers, "fastembed": fastembed}[peer]
    encode = make(backend, quantize, Path(model), Path(work), texts, int(threads))
    encode(texts[:64])  # warm-up
    start = time.perf_counter()
    vectors = encode(texts)
    seconds = time.perf_counter() - start
    assert len(vectors) == len(texts)
    np.save(out, np.asarray(encode(quality), dtype=np.float32))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"sentences_per_second": round(len(texts) / seconds, 1), "seconds": round(seconds, 2),
                      "peak_rss_mb": round(peak)}))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
