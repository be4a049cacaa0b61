"""Document tasks of the healthcare-LM paper: classification (frozen head, fine-tuned, k layers
frozen, few-shot) and the embedding-space analyses, against scikit-learn, scipy and networkx on
small real inputs, with the streamed computations forced through several blocks."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.tasks import TASKS


def _labelled(tmp_path: Path, n_per_class: int = 12, classes: int = 3, split: bool = True, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(classes):
        for i in range(n_per_class):
            rows.append(
                {
                    "text": f"class{c} document {i} " + " ".join(rng.choice(["a", "b", "c"], 5)),
                    "label": f"team{c}",
                    "split": "test" if i % 3 == 0 else "train",
                }
            )
    df = pd.DataFrame(rows)
    if not split:
        df = df.drop(columns="split")
    path = tmp_path / "docs.csv"
    df.to_csv(path, index=False)
    return path


def _task(name: str, path: Path, **settings):
    from clinsent.config.declare import build

    cls = TASKS.get(name)
    return cls(name, build(cls.settings_class, {"path": str(path), **settings}))


def _vectors(texts: list[str], dim: int = 6, seed: int = 0) -> np.ndarray:
    """Class-clustered vectors: class k sits near axis k."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 0.4, (len(texts), dim))
    for i, t in enumerate(texts):
        x[i, int(t[5])] += 2.0
    return x


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    import clinsent.evaluation.space as space

    monkeypatch.setattr(space, "BLOCK_CELLS", 40)  # a handful of rows per block


def test_class_similarity_against_the_full_matrix(tmp_path: Path, small_blocks: None) -> None:
    task = _task("class_similarity", _labelled(tmp_path), analysis_split="all")
    texts = task.texts()
    got = task.score(texts, _vectors(texts))
    x = _vectors(texts)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    labels = task.data["label"].to_numpy()
    i, j = np.triu_indices(len(x), 1)
    cos = (x @ x.T)[i, j]
    same = labels[i] == labels[j]
    assert got["within_mean"] == pytest.approx(cos[same].mean()) and got["between_mean"] == pytest.approx(
        cos[~same].mean()
    )
    q1, med, q3 = np.percentile(cos[same], [25, 50, 75])
    assert (got["within_q1"], got["within_med"], got["within_q3"]) == pytest.approx((q1, med, q3))
    assert got["separation"] == pytest.approx(cos[same].mean() - cos[~same].mean()) and got["separation"] > 0.5


def test_class_alignment_against_pdist(tmp_path: Path, small_blocks: None) -> None:
    task = _task("class_alignment", _labelled(tmp_path))
    texts = task.texts()
    assert len(texts) == 12  # the test split by default
    got = task.score(texts, _vectors(texts))
    x = _vectors(texts)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    labels = task.analysed()["label"].to_numpy()
    d2 = pdist(x, "sqeuclidean")
    i, j = np.triu_indices(len(x), 1)
    assert got["uniformity"] == pytest.approx(np.log(np.exp(-2 * d2).mean()))
    assert got["alignment"] == pytest.approx(d2[labels[i] == labels[j]].mean())


def test_similarity_graph_figures_by_hand() -> None:
    """A triangle (degrees 2), a pair (degrees 1) and three documents without an edge."""
    from clinsent.tasks.similarity_graph import graph_figures

    labels, degree = np.array([0, 0, 0, 1, 1, 2, 3, 4]), np.array([2, 2, 2, 1, 1, 0, 0, 0])
    edges = graph_figures(labels, degree, 3, "edges")  # the paper's reading: two components, three isolated
    assert edges == {"components": 2.0, "isolated": 3.0, "degree": (2 + 1) / 2, "node_degree": (3 * 2 + 2 * 1) / 5}
    nodes = graph_figures(labels, degree, 3, "nodes")  # every document a node: the three largest are 3, 2 and 1
    assert nodes == {"components": 5.0, "isolated": 3.0, "degree": (2 + 1 + 0) / 3, "node_degree": 8 / 6}


@pytest.mark.parametrize("components", ["edges", "nodes"])
def test_similarity_graph_against_networkx(tmp_path: Path, small_blocks: None, components: str) -> None:
    task = _task(
        "similarity_graph",
        _labelled(tmp_path, n_per_class=20),
        analysis_split="all",
        percentiles=[50, 90, 99],
        top_k=2,
        components=components,
    )
    texts = task.texts()
    got = task.score(texts, _vectors(texts, seed=3))
    x = _vectors(texts, seed=3)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    sims = x @ x.T
    i, j = np.triu_indices(len(x), 1)
    for p in (50, 90, 99):
        t = np.percentile(sims[i, j], p)
        assert got[f"threshold@{p}"] == pytest.approx(t)
        g = nx.Graph()  # the paper's graph: its edge list; `nodes` adds every document
        g.add_edges_from((a, b) for a, b in zip(i, j) if sims[a, b] > t)
        assert got[f"isolated@{p}"] == len(x) - g.number_of_nodes()
        if components == "nodes":
            g.add_nodes_from(range(len(x)))
        comps = sorted(nx.connected_components(g), key=len, reverse=True)
        assert got[f"components@{p}"] == len(comps)
        if len(comps) > 2 and len(comps[1]) == len(comps[2]):
            continue  # a tie at the cut: which of the two counts is the implementation's choice
        top = comps[:2]
        assert got[f"degree@{p}"] == pytest.approx(np.mean([np.mean([g.degree[n] for n in c]) for c in top]))
        assert got[f"node_degree@{p}"] == pytest.approx(np.mean([g.degree[n] for c in top for n in c]))
    assert task.headline == "components@50"
    for bad in ([], [0, 100]):
        with pytest.raises(InputError, match="percentiles"):
            _task("similarity_graph", _labelled(tmp_path), percentiles=bad)


def test_sampled_percentiles_stay_close_to_the_exact_ones(tmp_path: Path) -> None:
    from clinsent.evaluation.space import pair_cosines, sample_pairs

    x = _vectors([f"class{k % 3} d" for k in range(300)])
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    i, j = sample_pairs(300, 5000, seed=0)
    assert len(i) == 5000 and (i < j).all()
    exact = (x @ x.T)[np.triu_indices(300, 1)]
    assert np.percentile(pair_cosines(x, i, j), 90) == pytest.approx(np.percentile(exact, 90), abs=0.03)


def test_kmeans_with_k_the_classes_on_normalised_vectors_is_scikit_learns(tmp_path: Path) -> None:
    """The earlier default, now explicit knobs: k = the classes, L2-normalised vectors."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score, silhouette_score

    task = _task("kmeans_clusters", _labelled(tmp_path), analysis_split="all", k_choice="classes", normalize=True)
    texts = task.texts()
    got = task.score(texts, _vectors(texts))
    x = _vectors(texts)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    c = KMeans(n_clusters=3, n_init=10, random_state=0).fit_predict(x)
    assert got["k"] == 3
    assert got["davies_bouldin"] == pytest.approx(davies_bouldin_score(x, c))
    assert got["calinski_harabasz"] == pytest.approx(calinski_harabasz_score(x, c))
    assert got["silhouette"] == pytest.approx(silhouette_score(x, c)) and got["adjusted_rand"] > 0.9


def test_kmeans_chooses_the_k_with_the_best_silhouette_on_raw_vectors(tmp_path: Path) -> None:
    """The paper's optimal K: each K of k_min..k_max fitted on the raw vectors, the best silhouette kept."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import davies_bouldin_score, silhouette_score

    task = _task("kmeans_clusters", _labelled(tmp_path), analysis_split="all", k_max=6)
    texts = task.texts()
    x = _vectors(texts)
    x[: len(x) // 2] *= 3.0  # raw norms differ: normalising would change the clustering
    got = task.score(texts, x)
    fits = {k: KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(x) for k in range(2, 7)}
    scores = {k: silhouette_score(x, c) for k, c in fits.items()}
    best = max(scores, key=lambda k: (scores[k], -k))
    assert got["k"] == best and got["silhouette"] == pytest.approx(scores[best])
    assert got["davies_bouldin"] == pytest.approx(davies_bouldin_score(x, fits[best]))
    with pytest.raises(InputError, match=r"k_min: 7 is above k_max 6"):
        _task("kmeans_clusters", _labelled(tmp_path), k_min=7, k_max=6)


def test_classification_metrics_are_scikit_learns() -> None:
    from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

    from clinsent.evaluation.classification import classification_metrics

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 50)
    proba = rng.dirichlet([1, 1, 1], 50)
    got = classification_metrics(y, proba, 3)
    pred = proba.argmax(1)
    assert got["f1_macro"] == pytest.approx(f1_score(y, pred, average="macro"))
    assert got["precision_macro"] == pytest.approx(precision_score(y, pred, average="macro", zero_division=0))
    assert got["recall_macro"] == pytest.approx(recall_score(y, pred, average="macro"))
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y, proba, multi_class="ovr"))
    assert np.isnan(classification_metrics(np.zeros(5, int), rng.dirichlet([1, 1], 5), 2)["roc_auc"])
    binary = classification_metrics(y % 2, np.column_stack([1 - proba[:, 0], proba[:, 0]]), 2)
    assert binary["roc_auc"] == pytest.approx(roc_auc_score(y % 2, proba[:, 0]))


def test_doc_classification_frozen_head_and_few_shot(tmp_path: Path) -> None:
    from clinsent.evaluation.classification import best_epoch, train_head

    task = _task("doc_classification", _labelled(tmp_path), epochs=20, learning_rate=0.05)
    texts = task.texts()
    assert len(texts) == 36  # train and test documents
    vectors = _vectors(texts)
    got = task.score(texts, vectors)
    e = task.examples()
    of = dict(zip(texts, vectors))
    records, probas = train_head(
        np.array([of[t] for t in e.train_texts]),
        e.train_y,
        np.array([of[t] for t in e.test_texts]),
        e.test_y,
        3,
        20,
        0.05,
        16,
        0,
    )
    best = best_epoch(records)
    assert got["best_epoch"] == best and got["f1_macro"] == max(r["test"]["f1_macro"] for r in records)
    metrics, items = task.score_and_items(texts, vectors)  # the best epoch's test documents, one fit
    assert metrics == got and items.n == len(e.test_texts) and items.unit == "test documents"
    assert items.full() == pytest.approx({m: got[m] for m in items.names}, nan_ok=True)
    assert got["f1_macro"] > 0.9  # the classes are separable
    few = task.examples(per_class=3)
    assert len(few.train_texts) == 9 and np.bincount(few.train_y).tolist() == [3, 3, 3]
    with pytest.raises(InputError, match="class 'team0' has 8 training rows, fewer than per_class 9"):
        task.examples(per_class=9)
    unsplit = _task("doc_classification", _labelled(tmp_path / "..", split=False), test_share=0.25, split_seed=1)
    assert unsplit.data.groupby("label")["split"].apply(lambda s: (s == "test").sum()).tolist() == [3, 3, 3]


def test_labelled_documents_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    pd.DataFrame({"text": ["a note", "another"], "label": ["x", "x"]}).to_csv(path, index=False)
    with pytest.raises(InputError, match="one class only"):
        _ = _task("doc_classification", path).data
    pd.DataFrame({"text": ["secret words", ""], "label": ["x", "y"]}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"row\(s\) without text or label \(rows \[2\]\)") as err:
        _ = _task("doc_classification", path).data
    assert "secret" not in str(err.value)
    pd.DataFrame({"body": ["a"], "label": ["x"]}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"header line lacks \['text'\] \(2 field\(s\).*Fix: set text_column"):
        _ = _task("doc_classification", path).data
    pd.DataFrame({"body": ["a"], "label": ["x"]}).to_parquet(tmp_path / "bad.parquet")  # the expected names alone
    with pytest.raises(
        InputError, match=r"missing column\(s\) \['text'\] \(columns: a column of 4 characters, 'label'\)"
    ):
        _ = _task("doc_classification", tmp_path / "bad.parquet").data


def test_finetune_classifier_freezes_the_first_k_layers(tmp_path: Path, tiny_bert: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from clinsent.finetune.classifier import finetune_classifier, transformer_layers
    from clinsent.finetune.config import FinetuneSettings

    task = _task("doc_classification", _labelled(tmp_path, n_per_class=6))

    def model():
        t = Transformer(str(tiny_bert), max_seq_length=32)
        return SentenceTransformer(modules=[t, Pooling(32, "mean")], device="cpu")

    for frozen_layers in (1, 2):
        m = model()
        before = [p.detach().clone() for p in m.parameters()]
        layer_params = [list(layer.parameters()) for layer in transformer_layers(m[0].auto_model)]
        result, record = finetune_classifier(
            m,
            task,
            FinetuneSettings(train="x", epochs=1, learning_rate=1e-2, batch_size=4, freeze_layers=frozen_layers),
            seed=0,
            log=lambda _: None,
        )
        changed = {id(p) for p, b in zip(m.parameters(), before) if not torch.equal(p, b)}
        frozen = [p for layer in layer_params[:frozen_layers] for p in layer]
        assert not any(id(p) in changed for p in frozen)
        assert all(id(p) not in changed for p in m[0].auto_model.get_input_embeddings().parameters())
        assert record["frozen"] == (frozen_layers == 2) and len(result.epochs) == 1
        assert set(result.best_metrics()["ci"]) == {
            "f1_macro",
            "accuracy",
            "precision_macro",
            "recall_macro",
            "roc_auc",
        }
        if frozen_layers == 1:
            assert any(id(p) in changed for p in layer_params[1])
        else:  # every layer frozen: the encoder is not touched, only the head trains
            assert not changed

    def drawn(seed: int, **knobs: int) -> list[int]:
        s = FinetuneSettings(train="x", epochs=1, per_class=2, **knobs)
        return finetune_classifier(model(), task, s, seed=seed, log=lambda _: None)[1]["train_rows"]

    few = drawn(5)
    assert len(few) == 6 and few == task.examples(per_class=2, seed=5).train_rows and few != drawn(6)
    # draw_seed: the same documents whatever the job's seed, those the eval set's own draw picks
    assert drawn(5, draw_seed=3) == drawn(6, draw_seed=3) == task.examples(per_class=2, seed=3).train_rows


def test_draw_seed_needs_a_few_shot_document_entry(tmp_path: Path) -> None:
    from clinsent.finetune.config import resolve_finetunes
    from clinsent.tasks.config import resolve_eval_sets

    conll = tmp_path / "ner.conll"
    conll.write_text("fever B-problem\n. O\n\n", encoding="utf-8")
    cfg = {
        "methods": {"simcse": {"objective": "simcse"}},
        "base_models": {"b": "x"},
        "eval_sets": {
            "docs": {"task": "doc_classification", "path": str(_labelled(tmp_path))},
            "ner": {"task": "token_classification", "path": str(conll), "test_path": str(conll)},
        },
    }
    for entry, message in [
        (
            {"train": "docs", "draw_seed": 0},
            r"finetune\.f\.draw_seed: draws the few-shot "
            r"documents, but per_class is not set",
        ),
        (
            {"train": "ner", "draw_seed": 0},
            r"finetune\.f\.draw_seed: the few-shot draw applies "
            r"to document tasks",
        ),
    ]:
        with pytest.raises(InputError, match=message):
            resolve_finetunes(
                RunConfig.parse(cfg | {"finetune": {"f": entry}}), resolve_eval_sets(RunConfig.parse(cfg))
            )
    cfg["finetune"] = {"f": {"train": "docs", "per_class": 2, "draw_seed": 0}}
    assert (
        resolve_finetunes(RunConfig.parse(cfg), resolve_eval_sets(RunConfig.parse(cfg)))["f"].params()["draw_seed"]
        == 0
    )  # it reruns the job
