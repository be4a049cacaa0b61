"""NER as token classification (the healthcare-LM paper's Table 10): entity-level micro F1
against seqeval on the same tags, CoNLL reading and its errors, first-sub-token label alignment,
and the fine-tune job frozen and fully fine-tuned on a tiny BERT."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clinsent.errors import InputError
from clinsent.evaluation.conll import entities, entity_scores, read_conll

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo"


def test_entity_scores_match_seqeval_on_random_tags() -> None:
    from seqeval.metrics import f1_score, precision_score, recall_score

    rng = np.random.default_rng(0)
    tags = ["O", "B-problem", "I-problem", "B-test", "I-test", "B-treatment", "I-treatment"]
    gold = [
        [str(t) for t in rng.choice(tags, rng.integers(1, 15), p=[0.4, 0.15, 0.15, 0.1, 0.05, 0.1, 0.05])]
        for _ in range(300)
    ]
    pred = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in g] for g in gold]
    got = entity_scores(gold, pred)
    assert got["f1_micro"] == pytest.approx(f1_score(gold, pred))
    assert got["precision_micro"] == pytest.approx(precision_score(gold, pred))
    assert got["recall_micro"] == pytest.approx(recall_score(gold, pred))


def test_entities_by_hand() -> None:
    assert entities(["B-a", "I-a", "O", "I-b", "I-b", "B-b", "I-a"]) == {
        ("a", 0, 2),
        ("b", 3, 5),
        ("b", 5, 6),
        ("a", 6, 7),
    }
    s = entity_scores([["B-a", "I-a", "O", "B-b"]], [["B-a", "O", "O", "B-b"]])
    assert (s["precision_micro"], s["recall_micro"], s["entities"]) == (0.5, 0.5, 2.0)  # a truncated span misses


def test_read_conll_and_its_errors(tmp_path: Path) -> None:
    sentences = read_conll(DEMO / "i2b2_2010.demo.train.conll")
    assert len(sentences) == 160 and all(len(s.tokens) == len(s.tags) for s in sentences)
    bad = tmp_path / "bad.conll"
    bad.write_text("-DOCSTART- O\n\nPatient O\nsecretword B_problem\n\nfever B-problem\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"1 line\(s\) without a token and a BIO tag .*lines \[4\]") as err:
        read_conll(bad)
    assert "secretword" not in str(err.value)


def test_labels_sit_on_first_sub_tokens(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    from clinsent.evaluation.conll import TaggedSentence
    from clinsent.finetune.token_classifier import encode_words

    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    s = TaggedSentence(["echocardiogram", "showed", "cardiomyopathy"], ["B-test", "O", "B-problem"], 1)
    features, firsts = encode_words(tok, [s], {"O": 0, "B-problem": 1, "B-test": 2}, 64)
    labels = features["labels"][0].tolist()
    assert [labels[t] for t in firsts[0]] == [2, 0, 1]
    assert sum(v != -100 for v in labels) == 3  # other sub-tokens, [CLS], [SEP] are not scored
    _, cut = encode_words(tok, [s], None, 4)  # [CLS] + 2 tokens + [SEP]: the third word is cut
    assert cut[0][-1] == -1


def test_token_finetune_frozen_and_full(tmp_path: Path, tiny_bert: Path) -> None:
    from transformers import AutoModel

    from clinsent.config.declare import build
    from clinsent.finetune.config import FinetuneSettings
    from clinsent.finetune.token_classifier import finetune_token_classifier
    from clinsent.tasks import TASKS

    cls = TASKS.get("token_classification")
    task = cls(
        "ner",
        build(
            cls.settings_class,
            {"path": str(DEMO / "i2b2_2010.demo.train.conll"), "test_path": str(DEMO / "i2b2_2010.demo.test.conll")},
        ),
    )
    encoder = sum(p.numel() for p in AutoModel.from_pretrained(str(tiny_bert), add_pooling_layer=False).parameters())
    for frozen in (True, False):
        s = FinetuneSettings(train="ner", epochs=2, batch_size=16, learning_rate=5e-3, frozen=frozen)
        result, record = finetune_token_classifier(str(tiny_bert), task, s, seed=0, device="cpu", log=lambda _: None)
        assert record["labels"][0] == "O" and set(record["labels"]) >= {"B-problem", "I-test", "B-treatment"}
        head = len(record["labels"]) * 32 + len(record["labels"])  # the linear layer over the tags
        assert record["trainable_parameters"] == (head if frozen else head + encoder)
        assert len(result.epochs) == 2 and 0.0 <= result.best()["test"]["f1_micro"] <= 1.0
        assert result.best()["test"]["entities"] > 0
        ci = result.best_metrics()["ci"]  # over the test sentences, the tagger of the reported epoch
        assert set(ci) == {"f1_micro", "precision_micro", "recall_micro"}
        assert all(low <= result.best()["test"][m] <= high for m, (low, high) in ci.items())
