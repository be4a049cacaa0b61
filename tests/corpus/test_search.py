"""The search over an embedded corpus (clinsent.embedding.search, ``python -m clinsent search``):
the nearest rows by inner product equal scikit-learn's brute-force cosine neighbours on unit
vectors, across row groups; the command embeds its queries with the corpus's model, refuses
another model's vectors, and writes ids and scores only, owner-only where the vectors are."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.neighbors import NearestNeighbors

from clinsent.embedding import search
from clinsent.errors import InputError


def _vectors(path: Path, ids: list, vectors: np.ndarray, row_group: int) -> None:
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1])
    pq.write_table(pa.table({"id": ids, "vector": column}), path, row_group_size=row_group)


def test_the_nearest_rows_are_scikit_learns_cosine_neighbours(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    corpus = rng.normal(size=(250, 16)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = rng.normal(size=(4, 16)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ids = [f"note-{i}" for i in range(250)]
    path = tmp_path / "v.parquet"
    _vectors(path, ids, corpus, row_group=40)
    monkeypatch.setattr(search, "ROWS", 37)  # many batches, none aligned with the row groups
    hits = search.nearest(path, queries, top=5)
    brute = NearestNeighbors(n_neighbors=5, metric="cosine", algorithm="brute").fit(corpus)
    distances, index = brute.kneighbors(queries)
    for q in range(4):
        mine = [h for h in hits if h.query == q]
        assert [h.rank for h in mine] == [1, 2, 3, 4, 5]
        assert [h.id for h in mine] == [ids[i] for i in index[q]]
        np.testing.assert_allclose([h.score for h in mine], 1 - distances[q], atol=1e-6)


def test_a_tie_keeps_the_earlier_row_and_bad_files_are_one_line(tmp_path: Path) -> None:
    same = np.tile(np.array([[1.0, 0.0]], np.float32), (3, 1))
    path = tmp_path / "v.parquet"
    _vectors(path, [10, 11, 12], same, row_group=1)
    assert [h.id for h in search.nearest(path, np.array([1.0, 0.0]), top=2)] == [10, 11]
    with pytest.raises(InputError, match="2-dimensional vectors and the query's are 3-dimensional"):
        search.nearest(path, np.ones(3), top=1)
    (tmp_path / "no.parquet").write_text("id,vector\n")
    with pytest.raises(InputError, match="cannot be read as parquet"):
        search.nearest(tmp_path / "no.parquet", np.ones(2), top=1)
    pq.write_table(pa.table({"id": [1], "v": [1.0]}), tmp_path / "cols.parquet")
    with pytest.raises(InputError, match="no `id` and `vector`"):
        search.nearest(tmp_path / "cols.parquet", np.ones(2), top=1)


def test_the_command_finds_what_the_model_embeds_and_refuses_another_models_vectors(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clinsent.commands.search import main as search_main
    from clinsent.embedding.command import main as embed_main
    from clinsent.embedding.vectors import load_encoder

    from testkit import sentence_model

    texts = ["chest pain on exertion", "no acute distress", "shortness of breath", "fever and chills"]
    tiny_bert = sentence_model(tiny_bert, tmp_path / "model")  # a saved model, as a trained run's
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n")
    os.chmod(source, 0o600)  # nobody else can read it: its vectors and hits are owner-only
    vectors = tmp_path / "mine" / "v.parquet"
    assert embed_main(["--model", str(tiny_bert), "--input", str(source), "--out", str(vectors)]) == 0
    capsys.readouterr()
    out = tmp_path / "mine" / "hits.csv"
    argv = ["--vectors", str(vectors), "--model", str(tiny_bert), "--query", texts[2], "--top", "2", "--out", str(out)]
    assert search_main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "query\trank\tid\tscore" and printed[1].startswith("0\t1\t2\t")  # itself, line 2
    expected = load_encoder(tiny_bert, "cpu").encode([texts[2]], batch_size=1)[0]
    assert float(printed[1].split("\t")[3]) == pytest.approx(float(expected @ expected), abs=1e-3)
    assert not any(t in "\n".join(printed) + out.read_text() for t in texts)  # ids and scores only
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    other = tmp_path / "other"
    shutil.copytree(tiny_bert, other)
    (other / "README.md").write_text("another model's card")  # another folder's content: another model
    assert search_main(["--vectors", str(vectors), "--model", str(other), "--query", "x"]) == 2
    assert "was embedded by another model" in capsys.readouterr().err


def test_vectors_that_are_not_parquet_or_record_no_model_are_one_line(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 83: `search --vectors` on a file that is not Parquet was a traceback, and a vectors
    file without the embed command's record of its model was searched with any model. Both are one
    line (exit 2); the second goes on where the user says --model made them."""
    import pandas as pd
    import pyarrow.parquet as pq

    from clinsent.commands.search import main as search_main
    from clinsent.embedding.vectors import embeddings_table

    from testkit import sentence_model

    model = sentence_model(tiny_bert, tmp_path / "model")
    dims = len(load_model_dims(model))
    capsys.readouterr()  # the model's own loading lines
    text = tmp_path / "v.parquet"
    text.write_text("id,vector\n1,0.5\n")
    assert search_main(["--vectors", str(text), "--model", str(model), "--query", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"search: {text}: not a readable parquet file (ArrowInvalid). Fix: give a complete parquet file"
    bare = tmp_path / "bare.parquet"
    rows = pd.DataFrame({"id": [1, 2], "text": ["a", "b"], "vector": [np.full(dims, 0.1), np.full(dims, 0.2)]})
    pq.write_table(embeddings_table(rows), bare)  # the embed command's layout, without its record of the model
    assert search_main(["--vectors", str(bare), "--model", str(model), "--query", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "records no model" in err and "--model-made-them" in err and "\n" not in err
    assert search_main(["--vectors", str(bare), "--model", str(model), "--query", "x", "--model-made-them"]) == 0


def load_model_dims(model: Path) -> list[float]:
    from clinsent.embedding.vectors import load_encoder

    return list(load_encoder(model, "cpu").encode(["x"], batch_size=1)[0])
