"""The healthcare-LM paper's pre-training methods (continued MLM, DeCLUTR, note category): MLM
masking statistics, DeCLUTR's span sampler, NT-Xent and the joint losses against hand
computations on the same batch, the documents stage, and the training-data checks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from clinsent.augment.declutr_spans import min_tokens, sample_spans
from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.losses.contrastive import nt_xent
from clinsent.losses.mlm import mask_tokens

# --- MLM masking ---------------------------------------------------------------------------


def _encoder(path: Path, max_length: int = 64):
    from clinsent.models.base import load_transformer
    from clinsent.models.encoder import Encoder

    t = load_transformer(str(path), max_length)
    return Encoder(t.auto_model, t.tokenizer, "mean", 1, max_length, torch.device("cpu"))


def test_masking_follows_15_80_10_10_and_spares_special_tokens(tiny_bert: Path) -> None:
    enc = _encoder(tiny_bert, 128)
    texts = [" ".join(f"word{i} chest pain fever cough" for i in range(20))] * 40 + ["short"] * 10
    features = enc.tokenize(texts, special_tokens_mask=True)
    ids, special = features["input_ids"], features.pop("special_tokens_mask")
    masked, labels = mask_tokens(ids, special, enc.tokenizer, torch.Generator().manual_seed(0))
    chosen = labels != -100
    candidates = special == 0
    assert not (chosen & ~candidates).any()  # [CLS], [SEP] and padding are never predicted
    assert torch.equal(labels[chosen], ids[chosen])  # labels are the original tokens
    assert torch.equal(masked[~chosen], ids[~chosen])  # nothing else changes
    n, k = int(candidates.sum()), int(chosen.sum())
    assert stats.binomtest(k, n, 0.15).pvalue > 1e-3
    mask_id = enc.tokenizer.mask_token_id
    to_mask = int((masked[chosen] == mask_id).sum())
    kept = int((masked[chosen] == ids[chosen]).sum())
    assert stats.binomtest(to_mask, k, 0.8).pvalue > 1e-3
    assert stats.binomtest(kept, k, 0.1 + 0.1 / len(enc.tokenizer)).pvalue > 1e-3  # random may draw itself
    again = mask_tokens(ids, special, enc.tokenizer, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], masked) and torch.equal(again[1], labels)  # the step's generator fixes it


def test_mlm_loss_is_cross_entropy_over_masked_positions(tiny_bert: Path) -> None:
    from clinsent.losses.mlm import MaskedLM, tokenize_for_mlm

    enc = _encoder(tiny_bert)
    lm = MaskedLM(enc).eval()
    enc.model.eval()
    assert lm.model.get_output_embeddings().weight is enc.model.get_input_embeddings().weight  # shared, tied
    features, special = tokenize_for_mlm(enc, ["the patient has chest pain and fever today", "renal failure"])
    ids, labels = mask_tokens(
        features["input_ids"], special, enc.tokenizer, torch.Generator().manual_seed(1), probability=0.5
    )
    loss, hs = lm({**features, "input_ids": ids}, labels)
    with torch.no_grad():
        logits = lm.model(
            input_ids=ids, attention_mask=features["attention_mask"], token_type_ids=features["token_type_ids"]
        ).logits
    keep = labels != -100
    hand = -torch.log_softmax(logits[keep], dim=-1).gather(1, labels[keep][:, None]).mean()
    assert float(loss.detach()) == pytest.approx(float(hand), rel=1e-5)
    assert len(hs) == enc.model.config.num_hidden_layers + 1
    zero, _ = lm({**features, "input_ids": features["input_ids"]}, torch.full_like(labels, -100))
    assert float(zero.detach()) == 0.0  # a batch with nothing masked adds nothing, not NaN


# --- DeCLUTR spans -------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["any", "subsuming", "adjacent"])
def test_declutr_spans_positions_lengths_and_anchors(strategy: str) -> None:
    rng = np.random.default_rng(0)
    lo, hi, a, p = 8, 64, 2, 2
    anchor_u, positive_u = [], []
    for _ in range(400):
        n = int(rng.integers(min_tokens(a, hi), 1000))
        anchors, positives = sample_spans(n, a, p, lo, hi, rng, strategy)
        assert len(anchors) == a and all(len(ps) == p for ps in positives)
        chunks = []
        for anchor, ps in zip(anchors, positives):
            length = anchor.end - anchor.start
            assert lo <= length <= hi and 0 <= anchor.start and anchor.end <= n
            chunk = anchor.start // hi
            assert anchor.end <= (chunk + 1) * hi  # inside one max_span chunk
            chunks.append(chunk)
            anchor_u.append((length - lo) / (hi - lo))
            for q in ps:
                plen = q.end - q.start
                assert 0 <= q.start and q.end <= n and plen >= lo
                if strategy == "subsuming":
                    assert anchor.start <= q.start and q.end <= anchor.end
                elif strategy == "adjacent":
                    assert q.end == anchor.start or q.start == anchor.end
                else:
                    assert (
                        plen <= hi and anchor.start - plen <= q.start <= anchor.end
                    )  # adjacent, overlapping or inside
                    positive_u.append((plen - lo) / (hi - lo))
        assert len(set(chunks)) == a and all(abs(x - y) > 1 for i, x in enumerate(chunks) for y in chunks[i + 1 :])
    # lengths are floor(Beta x (max - min) + min): the scaled lengths sit at most one step below Beta draws
    step = 1 / (hi - lo)
    assert stats.kstest(np.array(anchor_u) + step / 2, stats.beta(4, 2).cdf).pvalue > 1e-3
    if strategy == "any":
        assert stats.kstest(np.array(positive_u) + step / 2, stats.beta(2, 4).cdf).pvalue > 1e-3


def test_declutr_spans_refuse_short_documents() -> None:
    assert min_tokens(2, 512) == 2048  # the paper's Table 12 example
    with pytest.raises(ValueError, match="shorter than 128"):
        sample_spans(127, 2, 2, 8, 32, np.random.default_rng(0))


# --- losses --------------------------------------------------------------------------------


def test_nt_xent_against_a_loop() -> None:
    g = torch.Generator().manual_seed(0)
    a, b, tau = torch.randn(5, 8, generator=g), torch.randn(5, 8, generator=g), 0.05
    z = F.normalize(torch.cat([a, b]), dim=-1)
    total = 0.0
    for i in range(10):
        pos = (i + 5) % 10
        num = math.exp(float(z[i] @ z[pos]) / tau)
        den = sum(math.exp(float(z[i] @ z[k]) / tau) for k in range(10) if k != i)
        total += -math.log(num / den)
    assert float(nt_xent(a, b, tau)) == pytest.approx(total / 10, rel=1e-5)


def _method(name: str, **knobs):
    from clinsent.config.declare import build
    from clinsent.methods import METHODS

    cls = METHODS.get(name)
    return cls(build(cls.settings_class, {"max_length": 64, **knobs}))


def _docs(n: int = 12, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    words = "patient pain chest fever cough renal failure heart rate blood pressure normal stable".split()
    rows = [
        {
            "row_id": i,
            "category": ["Nursing", "Radiology", "ECG"][i % 3],
            "text": " ".join(rng.choice(words, 40 + 3 * i)),
        }
        for i in range(n)
    ]
    df = pd.DataFrame(rows)
    return df.assign(n_words=df["text"].str.split().str.len())


def test_declutr_loss_parts_match_a_hand_computation(tiny_bert: Path) -> None:
    enc = _encoder(tiny_bert)
    method = _method("declutr", min_span=4, max_span=8, num_anchors=2, num_positives=2, contrastive_weight=0.5)
    loss = method.build_loss(enc).eval()
    enc.model.eval()
    rows = _docs(3)
    batch = loss.prepare(rows, torch.Generator().manual_seed(3))
    parts = loss(batch)
    assert batch["features"]["input_ids"].shape[0] == 6 and batch["positives"]["input_ids"].shape[0] == 12
    with torch.no_grad():  # independently: mean-pooled masked anchors, positives averaged per anchor

        def mean_pool(f):
            h = enc.model(**{k: v for k, v in f.items() if k != "special_tokens_mask"}).last_hidden_state
            m = f["attention_mask"][..., None].float()
            return (h * m).sum(1) / m.sum(1)

        a = mean_pool(batch["features"])
        p = mean_pool(batch["positives"]).view(6, 2, -1).mean(1)
    assert float(parts["contrastive"]) == pytest.approx(0.5 * float(nt_xent(a, p, 0.05)), rel=1e-4)
    mlm_only, _ = loss.mlm.lm(batch["features"], batch["labels"])
    assert float(parts["mlm"]) == pytest.approx(float(mlm_only), rel=1e-6)


def test_note_category_loss_is_weighted_cross_entropy_of_the_head(tiny_bert: Path) -> None:
    from clinsent.data.documents import DocumentData

    enc = _encoder(tiny_bert)
    loss = _method("note_category", category_weight=0.1).build_loss(enc)
    rows = _docs(6)
    loss.bind(DocumentData(rows, 6, 0))
    loss.eval()
    enc.model.eval()
    assert loss.classes == ["ECG", "Nursing", "Radiology"]
    batch = loss.prepare(rows, torch.Generator().manual_seed(0))
    parts = loss(batch)
    with torch.no_grad():
        f = batch["features"]
        h = enc.model(**f).last_hidden_state
        m = f["attention_mask"][..., None].float()
        e = (h * m).sum(1) / m.sum(1)
        target = torch.tensor([loss.classes.index(c) for c in rows["category"]])
        hand = 0.1 * F.cross_entropy(loss.head(e), target)
    assert float(parts["category"]) == pytest.approx(float(hand), rel=1e-5)
    assert set(parts) == {"mlm", "category"}


# --- training data -------------------------------------------------------------------------


def test_document_rows_skip_short_documents_and_check_categories(tmp_path: Path, caplog) -> None:
    from clinsent.data.documents import DocumentRows

    docs = _docs(9)
    need = DocumentRows("pretrain", 4, min_words=60)
    with caplog.at_level("INFO"):
        kept = need.select(docs, "documents.parquet")
    assert len(kept) == int((docs["n_words"] >= 60).sum()) and "shorter than 60 words: skipped" in caplog.text
    with pytest.raises(InputError, match="no document has at least 10000 words"):
        DocumentRows("pretrain", 4, min_words=10_000).select(docs, "documents.parquet")
    cats = DocumentRows("pretrain", 4, categories=True)
    with pytest.raises(InputError, match="have no category.*CATEGORY"):
        cats.select(docs.assign(category=[""] + list(docs["category"][1:])), "d.parquet")
    lonely = docs.copy()
    lonely.loc[0, "category"] = "Echo"
    with pytest.raises(InputError, match=r"category \['Echo'\] occur in a single document"):
        cats.select(lonely, "d.parquet")
    assert "pain" not in caplog.text  # never note text


def test_document_methods_train_save_and_load(tmp_path: Path, tiny_bert: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    from clinsent.train.trainer import steps_from_epochs, train

    (tmp_path / "documents").mkdir()
    _docs(12).to_parquet(tmp_path / "documents" / "pretrain.parquet")
    for name, knobs in [("mlm", {}), ("declutr", {"min_span": 4, "max_span": 8}), ("note_category", {})]:
        method = _method(name, epochs=1.0, batch_size=4, eval_every=100, **knobs)
        need = method.data_need()
        data = need.load(need.inputs({"results": str(tmp_path)}, 0), 0)
        method = steps_from_epochs(method, data)
        assert method.settings.steps == 3  # 12 documents, 4 per batch
        out = tmp_path / name
        result = train(method, str(tiny_bert), out, {}, None, data=data, seed=0, log=lambda _: None)
        parts = {
            "mlm": ["loss_mlm"],
            "declutr": ["loss_mlm", "loss_contrastive"],
            "note_category": ["loss_mlm", "loss_category"],
        }[name]
        assert all(result.curve[p].iloc[1:].notna().all() for p in parts)
        assert SentenceTransformer(str(out), device="cpu").encode(["chest pain"]).shape == (1, 32)
        assert AutoModel.from_pretrained(str(out)).config.hidden_size == 32


# --- documents stage -----------------------------------------------------------------------


def _shard(tmp_path: Path, n: int = 60) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clinsent.corpus.notes import NOTE_SCHEMA

    rng = np.random.default_rng(1)
    rows = {
        "row_id": list(range(1, n + 1)),
        "note_id": [str(i) for i in range(1, n + 1)],
        "subject_id": [int(i // 3) if i % 7 else None for i in range(n)],
        "hadm_id": [1000 + i // 2 for i in range(n)],
        "category": [["Nursing", "Radiology", "Discharge summary"][i % 3] for i in range(n)],
        "description": ["Report"] * n,
        "text": [" \n".join(["word"] * int(rng.integers(1, 300))) + "\t end" for _ in range(n)],
    }
    path = tmp_path / "000.parquet"
    pq.write_table(pa.Table.from_pydict(rows, schema=NOTE_SCHEMA), path)
    return path


def test_documents_partition_by_patient_sample_and_count_lengths(tmp_path: Path) -> None:
    from clinsent.config.sections import Documents
    from clinsent.corpus.documents import MIN_LENGTHS, build_documents

    shard = _shard(tmp_path)
    out = {"pretrain": tmp_path / "pre.parquet", "downstream": tmp_path / "down.parquet"}
    s = Documents(max_documents=20, downstream_share=0.3, seed=0, min_words=5)
    st = build_documents([shard], out, s, log_fn=lambda _: None)
    pre, down = pd.read_parquet(out["pretrain"]), pd.read_parquet(out["downstream"])
    assert len(pre) == 20 and set(pre["row_id"]).isdisjoint(down["row_id"])
    pats = lambda d: set(d["subject_id"].dropna())  # noqa: E731
    assert pats(pre).isdisjoint(pats(down))  # a patient's notes never straddle the partitions
    assert (pre["n_words"] >= 5).all() and not pre["text"].str.contains(r"\s\s|\n|\t").any()
    assert (pre["n_words"] == pre["text"].str.split().str.len()).all()
    w = pre["n_words"].to_numpy()
    for m in MIN_LENGTHS:
        assert st["pretrain"]["min_length_share"][str(m)] == pytest.approx((w >= m).mean())
    assert sum(st["pretrain"]["histogram"]["counts"]) == 20
    again = build_documents(
        [shard], {"pretrain": tmp_path / "p2.parquet", "downstream": tmp_path / "d2.parquet"}, s, log_fn=lambda _: None
    )
    assert again == st and pd.read_parquet(tmp_path / "p2.parquet").equals(pre)  # seeded


def test_icd9_triage_mapping_and_task_split(tmp_path: Path) -> None:
    from clinsent.config.sections import DocTaskEntry
    from clinsent.corpus.doc_tasks import build_doc_task, icd9_team, per_class_needs, read_mapping

    mapping = read_mapping(Path(__file__).resolve().parents[2] / "config" / "icd9_triage.yaml")
    assert icd9_team("41071", mapping) == "Cardiology" and icd9_team("0389", mapping) == "Acute or Internal Medicine"
    assert icd9_team("1629", mapping) == "Oncology" and icd9_team("64891", mapping) == "Obstetrics"
    assert icd9_team("V3000", mapping) is None and icd9_team("E8790", mapping) is None
    assert icd9_team("3659", mapping) is None  # glaucoma: sense organs are left out
    n = 80
    docs = pd.DataFrame(
        {
            "row_id": range(n),
            "subject_id": [i // 2 for i in range(n)],
            "hadm_id": range(500, 500 + n),
            "category": ["Discharge summary"] * n,
            "text": [f"doc {i}" for i in range(n)],
        }
    )
    docs.to_parquet(tmp_path / "down.parquet")
    codes = ["41071", "486", "V3000"]
    pd.DataFrame(
        {
            "ROW_ID": range(2 * n),
            "SUBJECT_ID": 0,
            "HADM_ID": [500 + i // 2 for i in range(2 * n)],
            "SEQ_NUM": [1, 2] * n,
            "ICD9_CODE": [codes[(i // 2) % 3] if i % 2 == 0 else "41071" for i in range(2 * n)],
        }
    ).to_csv(tmp_path / "dx.csv", index=False)
    s = DocTaskEntry(
        label="icd9_triage",
        train_per_class=5,
        test_per_class=4,
        diagnoses=str(tmp_path / "dx.csv"),
        mapping=str(Path(__file__).resolve().parents[2] / "config" / "icd9_triage.yaml"),
    )
    table, report = build_doc_task(tmp_path / "down.parquet", s, "mtri")
    assert report["unmapped_primary_diagnosis"] == len([i for i in range(n) if i % 3 == 2])  # V codes left out
    assert set(table["label"]) == {"Cardiology", "Respiratory Medicine"}
    assert report["classes"]["Cardiology"] == {"train": 5, "test": 4}
    with pytest.raises(InputError, match=r"eval_sets.mtri_fs6.per_class: 6 exceeds the training documents"):
        build_doc_task(tmp_path / "down.parquet", s, "mtri", {"eval_sets.mtri_fs6": 6})
    cfg = {
        "eval_sets": {
            "a": {"path": "t.parquet", "per_class": 4},
            "b": {"path": "t.parquet"},
            "c": {"path": "u.parquet", "per_class": 9},
        },
        "finetune": {"f": {"train": "b", "per_class": 2}, "g": {"train": "c", "per_class": 3}},
    }
    assert per_class_needs(RunConfig.parse(cfg), "t.parquet") == {"eval_sets.a": 4, "finetune.f": 2}
    subj = docs.set_index("row_id")["subject_id"]
    sides = table.assign(subject=table["row_id"].map(subj)).groupby("subject")["split"].nunique()
    assert (sides == 1).all()  # no patient on both sides


def test_a_document_task_category_the_documents_lack_stops_the_job_and_the_dry_run(tmp_path: Path) -> None:
    """A typo in doc_tasks.<name>.categories stops the doc_task job with the closest category
    (before: the class was dropped and the task had one class fewer); a category that
    notes.categories leaves out of the ingest stops the dry run; spaces do not count."""
    from clinsent.config.sections import DocTaskEntry, RunConfig
    from clinsent.corpus.doc_tasks import build_doc_task
    from clinsent.plan.checks import check_doc_task_categories

    n = 40
    cats = ["Radiology", "Physician ", "Nursing"]
    pd.DataFrame(
        {
            "row_id": range(n),
            "subject_id": range(n),
            "hadm_id": range(n),
            "category": [cats[i % 3] for i in range(n)],
            "text": [f"doc {i}" for i in range(n)],
        }
    ).to_parquet(tmp_path / "down.parquet")
    s = DocTaskEntry(label="category", train_per_class=3, test_per_class=2, categories=("Radiologyy", "Physician"))
    with pytest.raises(InputError) as err:
        build_doc_task(tmp_path / "down.parquet", s, "mcat")
    assert str(err.value).startswith(
        "config: doc_tasks.mcat.categories[0]: 'Radiologyy' matches no document category "
        "of the downstream documents (3 values seen; the closest is 'Radiology' (14 rows))"
    )
    table, report = build_doc_task(
        tmp_path / "down.parquet",
        DocTaskEntry(label="category", train_per_class=3, test_per_class=2, categories=("Radiology", "Physician")),
        "mcat",
    )
    assert set(table["label"]) == {"Radiology", "Physician"}  # compared without the trailing space
    check_doc_task_categories(
        RunConfig.parse(
            {
                "notes": {"categories": ["Radiology", "Physician "]},
                "doc_tasks": {"mcat": {"label": "category", "categories": ["Radiology", "Physician"]}},
            }
        )
    )
    with pytest.raises(
        InputError,
        match=r"^config: doc_tasks\.mcat\.categories\[1\]: 'Nursing' is not among "
        r"notes\.categories \['Radiology'\]",
    ):
        check_doc_task_categories(
            RunConfig.parse(
                {
                    "notes": {"categories": ["Radiology"]},
                    "doc_tasks": {"mcat": {"label": "category", "categories": ["Radiology", "Nursing"]}},
                }
            )
        )
    with pytest.raises(InputError, match=r"^config: doc_tasks\.mtri\.note_category: 'Discharge summary' is not among"):
        check_doc_task_categories(
            RunConfig.parse({"notes": {"categories": ["Radiology"]}, "doc_tasks": {"mtri": {"label": "icd9_triage"}}})
        )
