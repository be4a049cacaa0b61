"""What the report says of a run (issue 52): paired differences against a reference row, captions
from the run's own facts, curve bands from the plotted data."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from clinsent.evaluation.bootstrap import SEED, interval_record
from clinsent.evaluation.metrics import spearman
from clinsent.evaluation.sts_data import StsSet
from clinsent.report.captions import RunFacts, captions, has_paper_numbers
from clinsent.report.paired import Paired, default_reference, replicate_rows, with_differences
from clinsent.report.summary import summary_rows
from clinsent.report.tables import results_table
from clinsent.tasks.sts import Sts


def _records(rng: np.random.Generator) -> tuple[list[dict], np.ndarray, dict[str, np.ndarray]]:
    """An STS set of 60 pairs scored by an untrained run and a trained run (two seeds)."""
    gold = rng.uniform(0, 5, 60)
    preds = {
        ("untrained", 0): gold + rng.normal(0, 2.0, 60),
        ("simcse", 0): gold + rng.normal(0, 1.2, 60),
        ("simcse", 1): gold + rng.normal(0, 1.3, 60),
    }
    task = Sts.from_data("sts", StsSet("sts", [f"a{i}" for i in range(60)], [f"b{i}" for i in range(60)], gold))
    records = []
    for (method, seed), pred in preds.items():
        items = task.pair_items([pred])
        metrics = {**items.full(), **interval_record(items)}
        records.append(
            {"method": method, "base_model": "minilm", "seed": seed, "eval_set": "sts", "step": 0, "metrics": metrics}
        )
    return records, gold, {f"{m}{s}": p for (m, s), p in preds.items()}


def test_the_paired_interval_is_scipy_s_paired_bootstrap_on_the_same_resamples() -> None:
    """summary.csv's diff and its interval, for one seed, equal scipy.stats.bootstrap of the
    difference of the two runs' Spearman on the same resamples of the pairs (same seed)."""
    records, gold, preds = _records(np.random.default_rng(3))
    summary = summary_rows(records, {"sts": ["spearman", "pearson"]})
    paired = Paired(replicate_rows(records))
    out = with_differences(summary, paired, default_reference(["untrained", "simcse"], {"untrained"}, None))
    row = out[(out["method"] == "simcse") & (out["seed"] == 0) & (out["metric"] == "spearman")].iloc[0]
    ref = out[(out["method"] == "untrained") & (out["metric"] == "spearman")].iloc[0]
    assert row["reference"] == "untrained" and ref["reference"] == "" and np.isnan(ref["diff"])
    assert row["diff"] == pytest.approx(spearman(preds["simcse0"], gold) - spearman(preds["untrained0"], gold))

    def diff(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.array(
            [
                spearman(preds["simcse0"][i], gold[i]) - spearman(preds["untrained0"][i], gold[i])
                for i in np.atleast_2d(idx)
            ]
        )

    scipy = stats.bootstrap(
        (np.arange(60),), diff, vectorized=True, n_resamples=1000, method="percentile", rng=np.random.default_rng(SEED)
    )
    assert row["diff_ci_low"] == pytest.approx(scipy.confidence_interval.low, abs=2e-6)
    assert row["diff_ci_high"] == pytest.approx(scipy.confidence_interval.high, abs=2e-6)
    # the table: the means over seeds, the interval of the seeds' mean replicates, marked where it excludes 0
    table = results_table(out, {"sts": "spearman"}, ["untrained", "simcse"], paired, "untrained")
    cell = table.loc[table["method"] == "simcse", "sts Δ vs untrained"].iloc[0]
    mean_diff = np.mean([spearman(preds[f"simcse{s}"], gold) for s in (0, 1)]) - spearman(preds["untrained0"], gold)
    assert cell.startswith(f"{mean_diff:+.3f}".replace("-", "−"))
    low, high = paired.interval(("simcse", "minilm"), ("untrained", "minilm"), "sts", "spearman")
    assert cell.endswith(" *") == (low > 0 or high < 0)
    assert table.loc[table["method"] == "untrained", "sts Δ vs untrained"].iloc[0] == "–"
    # without replicates for a metric (alignment has none): a difference, untested
    untested = with_differences(
        summary[summary["metric"] == "spearman"].assign(metric="alignment"), paired, "untrained"
    )
    assert untested["diff"].notna().sum() == 2 and untested["diff_ci_low"].isna().all()
    # the status column says why each empty numeric cell is empty
    assert set(untested["status"]) == {"reference", "diff untested"}
    no_ci = with_differences(untested.drop(columns=["status"]).assign(ci_low=np.nan), paired, "untrained")
    assert set(no_ci["status"]) == {"ci untested; reference", "ci untested; diff untested"}
    assert set(out["status"]) == {"reference", ""}
    # a metric a difference means nothing for (a p-value): no difference, and the status says so
    p_value = with_differences(summary.assign(metric="pearson_p"), paired, "untrained", {"sts": ["pearson_p"]})
    assert p_value["diff"].isna().all() and p_value["reference"].eq("").all()
    assert set(p_value["status"]) == {"reference", "diff not applicable"}
    # no untrained method and no report.reference: no reference, every cell empty
    assert default_reference(["simcse"], set(), None) is None
    assert (with_differences(summary, paired, None)["reference"] == "").all()
    assert set(with_differences(summary, paired, None)["status"]) == {"no reference"}


def test_captions_of_a_one_seed_no_paper_no_ner_run_claim_nothing_it_did_not_do() -> None:
    facts = RunFacts(
        seeds=1,
        reference="untrained",
        selection={"simcse": None},
        reported=["mine"],
        curve_sets=["mine"],
        corpus_stages=["the notes split into sentences (ScispaCy)"],
        paper_tables={},
        eval_length="auto",
    )
    text = " ".join(captions(facts).values())
    for claim in (
        "± std over seeds",
        "beside the paper's numbers",
        "entities per type",
        "was selected",
        "MedCAT",
        "A star marks",
    ):
        assert claim not in text, claim
    assert "One seed" in text and "95% bootstrap interval" in text and "No selection set" in text
    assert "Δ vs untrained" in text and "own length" in text
    biased = RunFacts(seeds=3, reference=None, selection={"simcse": "mine"}, reported=["mine"], curve_sets=["mine"])
    words = captions(biased)["results"]
    assert "mean ± std (sample std) over 3 seeds" in words and "† `mine` both selects the step" in words
    assert "No reference row" in words
    assert has_paper_numbers({"rows": [{"cells": ["a"], "paper": [None, ["0.6"]]}]})
    assert not has_paper_numbers({"rows": [{"cells": ["a"]}]})
    assert RunFacts.from_params(biased.params()) == RunFacts(
        seeds=3, reference=None, selection={"simcse": "mine"}, reported=("mine",), curve_sets=("mine",)
    )


def test_the_curve_figure_draws_each_run_s_band_and_no_star_without_a_selection(tmp_path: Path) -> None:
    """The band is the mean over seeds of each step's interval bounds, read back from the
    plotted polygon; one legend entry per run; no star where no step was selected."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from clinsent.report import figures

    steps = [0, 10, 20]
    rows = []
    for seed, shift in ((0, 0.0), (1, 0.02)):
        for step in steps:
            score = 0.80 + step / 1000 + shift
            rows.append(
                {
                    "method": "simcse",
                    "base_model": "minilm",
                    "seed": seed,
                    "step": step,
                    "eval_set": "mine",
                    "metric": "spearman",
                    "score": score,
                    "score_low": score - 0.05,
                    "score_high": score + 0.04,
                    "selected_step": np.nan,
                }
            )
    rows.append(
        {
            "method": "untrained",
            "base_model": "minilm",
            "seed": 0,
            "step": 0,
            "eval_set": "mine",
            "metric": "spearman",
            "score": 0.81,
            "score_low": 0.75,
            "score_high": 0.86,
            "selected_step": np.nan,
        }
    )
    seen = {}
    real_save = figures.save_figure

    def keep(fig, paths):  # read the axes before the figure is closed
        seen["ax"] = fig.axes[0]
        real_save(fig, paths)

    figures.save_figure = keep
    try:
        figures.curve_figure(pd.DataFrame(rows), [tmp_path / "c.png"], "t")
    finally:
        figures.save_figure = real_save
    ax = seen["ax"]
    band = [c for c in ax.collections if c.get_paths()][0].get_paths()[0].vertices
    expected_low = [0.80 + s / 1000 + 0.01 - 0.05 for s in steps]
    assert np.allclose(sorted(band[:, 1])[:3], sorted(expected_low))
    assert pytest.approx(max(band[:, 1])) == 0.80 + 20 / 1000 + 0.01 + 0.04
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["simcse (minilm)", "untrained (minilm)"]  # no "selected step", no "untrained" twice
    assert not any(line.get_marker() == "*" for line in ax.lines)
    plt.close("all")


def _configs() -> list[Path]:
    repo = Path(__file__).resolve().parents[2]
    found = [*sorted((repo / "config").glob("*.yaml")), *sorted((repo / "config" / "paper").glob("*.yaml"))]
    return [p for p in found if p.name not in ("schema.yaml", "icd9_triage.yaml")]


GARBLED = [
    re.compile(r"up to [A-Za-z_][\w.\-]* \d+ tokens"),  # "up to minilm 256 tokens"
    re.compile(r"\bNone\b|\bnan\b|[{}]|\[\]|  | [,.;:]|,,|\.\.(?!\.)"),
]


def _reads_as_sentences(text: str) -> None:
    """Every sentence starts as one and ends with a full stop; no Python value shows through."""
    for pattern in GARBLED:
        assert not pattern.search(text), (pattern.pattern, text)
    for sentence in re.split(r"(?<=[.])\s+(?=[A-Z†Δ`*])", text.strip()):
        assert sentence[0].isupper() or sentence[0] in "†Δ`*", sentence
        assert sentence.endswith("."), sentence


@pytest.mark.parametrize("config", _configs(), ids=lambda p: p.name)
def test_every_caption_of_every_config_reads_as_sentences(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every caption and table note each config's report writes, for one base model and for
    several, with the same evaluation length and with different ones, and the note of what ran on
    records of every trained method: each a run of sentences (issue 74: "up to minilm 256
    tokens" was not one)."""
    from clinsent.door.open import open_plan
    from clinsent.report.captions import results_caption
    from clinsent.report.what_ran import Trained, note

    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # paths in the configs are from the repository
    plan = open_plan(config, {"placeholders_ok": True}, read_inputs=False)
    facts = plan.run_facts()
    bases = list(plan.run.config.base_models)
    texts = list(captions(facts, plan.run.config.report.paper_label).values())
    for lengths in (None, dict.fromkeys(bases, 512), {b: 128 * (i + 1) for i, b in enumerate(bases)}, {bases[0]: 64}):
        texts.append(results_caption(facts, lengths))
    trained = [
        Trained(m, b, 1000, 32, 900, 12000, "distinct sentences", "notes") for m in facts.selection for b in bases
    ]
    untrained = [m for m in plan.run.methods if m not in facts.selection]
    sets = {n: e["files"] for n, e in plan.report_eval_sets().items()}
    texts.append(note(trained, untrained, sets, dict.fromkeys(sets, (130, "pairs"))))
    texts.append(note(trained[:1], [], sets, {}))
    for text in texts:
        _reads_as_sentences(text)


def test_the_note_of_what_ran_counts_each_run_from_its_record() -> None:
    """clinsent.report.what_ran: steps, batch and the sentences drawn of the set's, from a
    train job's selection.json; seeds of one run together (a range where they differ); each eval
    set's size and file name."""
    from clinsent.report.what_ran import Trained, note

    record = {
        "settings": {"steps": 40, "batch_size": 16},
        "training_data": {"rows": 637, "of_rows": 7534, "unit": "distinct sentences", "source": "notes"},
    }
    other_seed = {**record, "training_data": {**record["training_data"], "rows": 640}}
    rows = {
        "settings": {"steps": 40, "batch_size": 16},
        "training_data": {"rows": 284, "unit": "rows", "source": "nli"},
    }
    trained = [
        Trained.from_record("simcse", "minilm", record),
        Trained.from_record("simcse", "minilm", other_seed),
        Trained.from_record("sup_simcse", "minilm", rows),
    ]
    text = note(trained, ["none"], {"mine": ["mine.tsv"], "rqe": []}, {"mine": (100, "pairs")})
    assert text == (
        "What ran: simcse on minilm: 40 steps of batch 16, drawing 637 to 640 of the 7,534 distinct sentences in "
        "its training set (notes); sup_simcse on minilm: 40 steps of batch 16, on 284 rows of its training "
        "set (nli). Untrained (the model as given): none. Eval sets: mine: 100 pairs (mine.tsv); rqe."
    )
    _reads_as_sentences(text)
