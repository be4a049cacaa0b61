"""The fine-tuned setting (BioSimCSE): the seeded 80/20 validation split, the task's pair targets
and scorers, a fine-tune job on a tiny BERT (the epoch picked on validation, the pairs recorded),
the sentence-transformers losses it uses, and the config's bad-input checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr, spearmanr

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.evaluation.metrics import pearson_p
from clinsent.finetune.config import FinetuneSettings, resolve_finetunes
from clinsent.finetune.job import run_finetune
from clinsent.tasks.config import resolve_eval_sets
from clinsent.tasks.rqe import Rqe, RqeSettings
from clinsent.tasks.sts import Sts, StsSettings, holdout_mask

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo"
STS_TRAIN = str(DEMO / "clinical_sts.demo.select.tsv")


def _sts(split: str | None = None, share: float = 0.2, seed: int = 0) -> Sts:
    return Sts(
        "s",
        StsSettings(
            path=STS_TRAIN,
            format="n2c2_sts",
            split=split,
            validation_share=share if split else 0.0,
            validation_seed=seed,
        ),
    )


def test_pearson_p_value_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    for n in (5, 20, 100):
        x, y = rng.normal(size=n), rng.normal(size=n)
        y = y + 0.5 * x
        r, p = pearsonr(x, y)
        assert pearson_p(float(r), n) == pytest.approx(float(p), rel=1e-9)
    assert np.isnan(pearson_p(0.5, 2))


def test_validation_split_is_seeded_disjoint_and_eighty_twenty() -> None:
    full, train, val = _sts(), _sts("train"), _sts("validation")
    n = len(full.data)
    assert len(val.data) == round(0.2 * n) and len(train.data) + len(val.data) == n
    tr_rows, va_rows = train.training_pairs().rows, val.training_pairs().rows
    assert not set(tr_rows) & set(va_rows) and sorted(tr_rows + va_rows) == list(range(1, n + 1))
    # the rows are pairs of the file: the recorded numbers point at the same pair
    k = tr_rows[3]
    assert train.data.sentences1[3] == full.data.sentences1[k - 1]
    assert np.array_equal(holdout_mask(n, 0.2, 0), holdout_mask(n, 0.2, 0))
    assert not np.array_equal(holdout_mask(n, 0.2, 0), holdout_mask(n, 0.2, 1))
    assert _sts("validation", seed=1).training_pairs().rows != va_rows
    assert val.statistics()["splits"] == {"train": n - len(va_rows), "validation": len(va_rows)}


def test_split_settings_are_checked() -> None:
    with pytest.raises(InputError, match="give both"):
        Sts("s", StsSettings(path=STS_TRAIN, format="n2c2_sts", validation_share=0.2))
    with pytest.raises(InputError, match="is not train or validation"):
        Sts("s", StsSettings(path=STS_TRAIN, format="n2c2_sts", validation_share=0.2, split="test"))
    with pytest.raises(InputError, match="own split column"):
        Sts("s", StsSettings(path=STS_TRAIN, format="table", validation_share=0.2, split="dev"))


def test_sts_pair_targets_and_cross_encoder_scores() -> None:
    task = _sts()
    pairs = task.training_pairs()
    assert pairs.kind == "similarity" and np.allclose(pairs.targets, task.data.scores / 5.0)
    assert pairs.targets.min() >= 0 and pairs.targets.max() <= 1
    predicted = np.random.default_rng(1).normal(size=len(task.data))
    got = task.score_pairs([predicted])
    assert got["spearman"] == pytest.approx(spearmanr(predicted, task.data.scores)[0], abs=1e-12)
    r, p = pearsonr(predicted, task.data.scores)
    assert got["pearson"] == pytest.approx(r, abs=1e-12) and got["pearson_p"] == pytest.approx(p, rel=1e-9)


def test_rqe_pair_targets_and_scores_use_the_dev_threshold() -> None:
    task = Rqe("r", RqeSettings(path=str(DEMO / "rqe.demo.train.xml"), dev_path=str(DEMO / "rqe.demo.dev.xml")))
    pairs = task.training_pairs()
    test, dev = task.data
    assert pairs.kind == "binary" and set(np.unique(pairs.targets)) == {0.0, 1.0}
    assert np.array_equal(pairs.targets, test.labels.astype(float))
    rng = np.random.default_rng(2)
    s_test, s_dev = rng.normal(size=len(test.labels)), rng.normal(size=len(dev.labels))
    got = task.score_pairs([s_test, s_dev])
    accuracy = float(np.mean((s_test >= got["threshold"]) == test.labels))
    assert got["accuracy"] == pytest.approx(accuracy)
    # the threshold is the best one on dev: no threshold among the dev scores beats it
    best = max(float(np.mean((s_dev >= t) == dev.labels)) for t in np.concatenate([s_dev, [np.inf]]))
    assert got["dev_accuracy"] == pytest.approx(best)


def test_cosine_similarity_loss_is_mse_on_cosine() -> None:
    """The STS fine-tuning loss (sentence-transformers' CosineSimilarityLoss) by hand."""
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    g = torch.Generator().manual_seed(0)
    u, v = torch.randn(6, 8, generator=g), torch.randn(6, 8, generator=g)
    y = torch.rand(6, generator=g)
    loss = CosineSimilarityLoss(model=torch.nn.Identity())  # type: ignore[arg-type]
    theirs = loss.compute_loss_from_embeddings([u, v], y)
    cos = (u * v).sum(1) / u.norm(dim=1) / v.norm(dim=1)
    assert theirs.item() == pytest.approx(float(((cos - y) ** 2).mean()), rel=1e-6)


@pytest.mark.parametrize("kind", ["bi_encoder", "cross_encoder"])
def test_finetune_job_picks_the_best_validation_epoch(kind: str, tiny_bert: Path, tmp_path: Path) -> None:
    from clinsent.models.base import load_transformer, sentence_transformer

    path = str(tiny_bert)
    if kind == "bi_encoder":  # a trained run is a saved SentenceTransformer
        sentence_transformer(load_transformer(path, 32), "mean").save(str(tmp_path / "st"))
        path = str(tmp_path / "st")
    tasks = {
        "train": _sts("train"),
        "validation": _sts("validation"),
        "test": Sts("t", StsSettings(path=str(DEMO / "clinical_sts.demo.test.tsv"), format="n2c2_sts")),
    }
    s = FinetuneSettings(
        train="a", validation="b", test="c", epochs=3, batch_size=16, learning_rate=1e-3, max_length=32
    )
    out = run_finetune(kind, path, tasks, s, seed=0, log=lambda *_: None)
    scores = [e["validation"]["spearman"] for e in out["epochs"]]
    assert len(out["epochs"]) == 3 and out["best_epoch"] == int(np.argmax(scores)) + 1
    best = out["epochs"][out["best_epoch"] - 1]["test"]
    assert {k: v for k, v in out["metrics"].items() if not k.startswith("ci")} == best
    # the reported epoch's intervals over the test pairs: they hold its figures
    assert set(out["metrics"]["ci"]) == {"spearman", "pearson"} and out["metrics"]["ci_method"]["items"] == len(
        tasks["test"].data
    )
    for metric, (low, high) in out["metrics"]["ci"].items():
        assert low <= best[metric] <= high and len(out["metrics"]["ci_replicates"][metric]) == 1000
    assert out["train_pairs"] == len(tasks["train"].data) and out["sentences_per_s"] > 0
    assert out["pairs_used"]["validation"] == tasks["validation"].training_pairs().rows
    assert out["epochs"][-1]["loss"] < out["epochs"][0]["loss"]  # it learns
    again = run_finetune(kind, path, tasks, s, seed=0, log=lambda *_: None)
    assert again["metrics"] == out["metrics"]  # seeded: the same figures


def _config(**finetune: object) -> dict:
    return {
        "methods": {"simcse": {"objective": "simcse"}},
        "base_models": {"b": "x"},
        "eval_sets": {
            "tr": {"format": "n2c2_sts", "path": STS_TRAIN, "validation_share": 0.2, "split": "train"},
            "va": {"format": "n2c2_sts", "path": STS_TRAIN, "validation_share": 0.2, "split": "validation"},
            "te": {"format": "n2c2_sts", "path": STS_TRAIN},
            "mrr": {"task": "retrieval", "path": str(DEMO / "mednli.demo.dev.jsonl")},
            "rq": {"task": "rqe", "path": "a.xml", "dev_path": "b.xml"},
        },
        "finetune": {"ft": {"train": "tr", "validation": "va", "test": "te", **finetune}},
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"train": "mrr"}, r"different tasks"),
        ({"train": "trr"}, r"finetune\.ft\.train: 'trr' is not a key of eval_sets \(closest: 'tr'\)"),
        ({"train": "te"}, r"both trains and is scored"),
        ({"methods": ["simcs"]}, r"'simcs' is not a key of methods"),
        ({"epoch": 3}, r"epoch"),
        ({"test": "rq"}, r"different tasks"),
        ({"draw_seed": 0}, r"finetune\.ft\.draw_seed: applies to document and token classification entries only"),
    ],
)
def test_bad_finetune_entries_stop_the_config(change: dict, message: str) -> None:
    cfg = _config(**change)
    with pytest.raises(InputError, match=message):
        resolve_finetunes(RunConfig.parse(cfg), resolve_eval_sets(RunConfig.parse(cfg)))


def test_a_task_without_pairs_cannot_be_fine_tuned() -> None:
    cfg = _config(train="mrr", validation="mrr2", test="mrr3")
    cfg["eval_sets"] |= {"mrr2": cfg["eval_sets"]["mrr"], "mrr3": cfg["eval_sets"]["mrr"]}
    with pytest.raises(InputError, match=r"task retrieval\) has no training pairs"):
        resolve_finetunes(RunConfig.parse(cfg), resolve_eval_sets(RunConfig.parse(cfg)))
    cfg = _config()
    cfg["finetune"] = {"te": {"train": "tr", "validation": "va", "test": "te"}}
    with pytest.raises(InputError, match="also an eval set"):
        resolve_finetunes(RunConfig.parse(cfg), resolve_eval_sets(RunConfig.parse(cfg)))


def test_job_params_leave_out_which_runs_are_fine_tuned() -> None:
    """Adding a method to an entry or switching its cross-encoders on plans or drops jobs; it
    changes no existing fine-tune job's params (so none reruns)."""
    from clinsent.config.declare import build

    cfg = _config()
    base = resolve_finetunes(RunConfig.parse(cfg), resolve_eval_sets(RunConfig.parse(cfg)))["ft"].params()
    cfg = _config(methods=["simcse"], cross_encoder=True)
    changed = resolve_finetunes(RunConfig.parse(cfg), resolve_eval_sets(RunConfig.parse(cfg)))["ft"].params()
    assert changed == base and "methods" not in base
    assert build(FinetuneSettings, base).epochs == 4  # a job rebuilds its settings from them
    cfg = _config(epochs=5)
    assert resolve_finetunes(RunConfig.parse(cfg), resolve_eval_sets(RunConfig.parse(cfg)))["ft"].params() != base
