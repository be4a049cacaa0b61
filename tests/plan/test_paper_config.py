"""config/paper/medse.yaml (the paper's full grid) and its demo-scale twin: job counts of a dry
run, knob-for-knob agreement, clear errors for a table that cites an unknown run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from clinsent.config.sections import RunConfig
from clinsent.door.open import open_plan
from clinsent.door.overlay import keep_only, resolve_base
from clinsent.plan.experiments import Grid
from clinsent.plan.jobs import job_counts

from testkit.workflow import snakemake

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "config" / "paper" / "medse.yaml"
DEMO = REPO / "config" / "paper" / "medse-demo.yaml"

# docs/papers: "Regenerating MED-SE" derives these from the tables: 55 trained runs x 5 seeds,
# 11 untrained runs x 1 seed, BERT-flow x 5 seeds; 12 distinct batch plans x 5 seeds; embed and
# evaluate run once per model and eval set.
EXPECTED = {
    "train": 291,
    "embed": 582,
    "evaluate": 582,
    "batch_plan": 60,
    "split_sentences": 64,
    "ner": 64,
    "paper_report": 1,
    "report": 1,
}


def _twin(path: Path) -> dict:
    """A config as the workflow reads it: its base (the paper config, for a demo twin) underneath."""
    return resolve_base(yaml.safe_load(path.read_text()), root=REPO)


def _load(path: Path) -> dict:
    cfg = _twin(path)
    cfg.setdefault("training", {}).setdefault("steps", 2000)
    cfg["training"].setdefault("batch_size", 32)
    return cfg


def _planned_counts(configfile: Path) -> dict[str, int]:
    """The job counts of a dry run of ``configfile`` with placeholders_ok: the plan's, which
    tests/plan/test_plan.py::test_job_counts_are_snakemakes_own checks against Snakemake's own dry run
    of every paper config (one Snakemake run per config in the suite, not two)."""
    cwd = os.getcwd()
    os.chdir(REPO)  # paths in the configs are relative to the repository
    try:
        return job_counts(open_plan(str(configfile), {"placeholders_ok": True}))
    finally:
        os.chdir(cwd)


def test_paper_grid_dry_run_matches_the_readme() -> None:
    counts = _planned_counts(PAPER)
    for rule, n in EXPECTED.items():
        assert counts.get(rule) == n, (rule, counts)
    readme = " ".join((REPO / "docs" / "papers" / "medse.md").read_text().split())
    assert f"{EXPECTED['train']} training jobs" in readme and f"{EXPECTED['batch_plan']} batch plans" in readme


def test_paper_grid_without_the_flag_names_the_missing_file() -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    run = snakemake(
        str(REPO),
        "--configfile",
        str(PAPER),
        "-n",
        env=env,
        timeout=600,
    )
    assert run.returncode != 0
    assert "config: notes.path: /path/to/mimic-iii/1.4/NOTEEVENTS.csv.gz does not exist" in run.stderr, run.stderr[
        -2000:
    ]


def test_grid_counts_from_the_tables() -> None:
    grid = Grid.from_config(RunConfig.parse(_load(PAPER)))
    trained = [(m, b) for m, b in grid.runs if _load(PAPER)["methods"][m]["objective"] != "none"]
    assert len(trained) == 55 and len(grid.runs) == 67
    assert len(grid.batch_plans) == 12 and len(grid.jobs) == EXPECTED["train"]


def test_a_table_citing_an_unknown_run_is_a_clear_error() -> None:
    cfg = _load(DEMO)
    cfg["tables"]["table8"]["rows"][0]["cells"] = ["medse_typo"]
    with pytest.raises(
        ValueError,
        match=r"^config: tables\.table8\.rows\[0\] \(Mean\): cites method 'medse_typo', which is not a key of "
        r"methods.*Fix: ",
    ):
        Grid.from_config(RunConfig.parse(cfg))
    cfg = _load(DEMO)
    cfg["figures"]["figure2"]["points"][0]["run"] = "lm@biobert"
    with pytest.raises(ValueError, match=r"^config: figures\.figure2\.points\[0\]: cites base model 'biobert'.*Fix: "):
        Grid.from_config(RunConfig.parse(cfg))


AUGMENT = REPO / "config" / "paper" / "augment.yaml"
AUGMENT_DEMO = REPO / "config" / "paper" / "augment-demo.yaml"
# docs/papers: "Regenerating the augmentation paper": 49 trained runs x 5 seeds + the untrained Chinese
# baseline; 14 batch plans (English and Chinese: the full corpus and 6 fractions) x 5 seeds; an
# English run is embedded on the 2 BIOSSES splits, a Chinese run on the 4 ChineseBLUE probes.
AUGMENT_EXPECTED = {
    "train": 246,
    "batch_plan": 70,
    "embed": 754,
    "evaluate": 754,
    "sentence_corpus": 2,
    "eval_set_stats": 5,
    "paper_report": 1,
}


def test_augment_grid_dry_run_matches_the_readme() -> None:
    counts = _planned_counts(AUGMENT)
    for rule, n in AUGMENT_EXPECTED.items():
        assert counts.get(rule) == n, (rule, counts)
    assert not {"ingest_notes", "ner", "sentence_sets"} & set(counts)  # no notes pipeline without notes
    readme = " ".join((REPO / "docs" / "papers" / "augment.md").read_text().split())
    assert (
        f"{AUGMENT_EXPECTED['train']} training jobs" in readme
        and f"{AUGMENT_EXPECTED['batch_plan']} batch plans" in readme
    )


def test_augment_tables_name_known_sets_and_methods() -> None:
    cfg = _twin(AUGMENT_DEMO)
    cfg["tables"]["table2"]["rows"][0]["method"] = "rc_typo"
    with pytest.raises(ValueError, match=r"^config: tables\.table2\.rows\[0\]\.method: names 'rc_typo'"):
        Grid.from_config(RunConfig.parse(cfg))
    cfg = _twin(AUGMENT_DEMO)
    cfg["tables"]["table3"]["eval_sets"].append("cmedqa")
    with pytest.raises(
        ValueError, match=r"^config: tables\.table3\.eval_sets: names 'cmedqa', which is not a key of eval_sets"
    ):
        Grid.from_config(RunConfig.parse(cfg))


BIOSIMCSE = REPO / "config" / "paper" / "biosimcse.yaml"
BIOSIMCSE_DEMO = REPO / "config" / "paper" / "biosimcse-demo.yaml"
# docs/papers: "Regenerating BioSimCSE": (unsupervised + supervised) x 2 base models x 5 seeds, plus the
# untrained BioLinkBERT of Figure 1 x 5; each trained run fine-tuned on 3 tasks; a cross-encoder
# per base model, task and seed; zero-shot scores on the 3 test sets only.
BIOSIMCSE_EXPECTED = {
    "train": 25,
    "finetune": 60,
    "cross_encoder": 30,
    "embed": 75,
    "evaluate": 75,
    "batch_plan": 5,
    "training_rows": 1,
    "sentence_corpus": 1,
    "paper_report": 1,
}
NLI = REPO / "config" / "paper" / "clinical-nli.yaml"
NLI_DEMO = REPO / "config" / "paper" / "clinical-nli-demo.yaml"
# docs/papers: "Regenerating the clinical NLI study": CTRL0 and the six trained conditions x 3 seeds,
# each scored on MRR, the MedNLI classifier and BIOSSES.
NLI_EXPECTED = {"train": 21, "embed": 63, "evaluate": 63, "training_rows": 2, "paper_report": 1}


@pytest.mark.parametrize(("config", "expected"), [(BIOSIMCSE, BIOSIMCSE_EXPECTED), (NLI, NLI_EXPECTED)])
def test_pair_paper_grids_dry_run_match_the_readme(config: Path, expected: dict[str, int]) -> None:
    counts = _planned_counts(config)
    for rule, n in expected.items():
        assert counts.get(rule) == n, (rule, counts)
    assert not {"ingest_notes", "ner", "sentence_sets"} & set(counts)
    readme = " ".join((REPO / "docs" / "papers" / f"{config.stem}.md").read_text().split())
    assert f"{expected['train']} training jobs" in readme, config.name
    if "finetune" in expected:
        assert (
            f"{expected['finetune']} fine-tune jobs" in readme
            and f"{expected['cross_encoder']} cross-encoder jobs" in readme
        )


HLM = REPO / "config" / "paper" / "healthcare-lm.yaml"
HLM_DEMO = REPO / "config" / "paper" / "healthcare-lm-demo.yaml"
# docs/papers: "Regenerating the healthcare-LM paper": RoBERTa-base untrained, MLM, DeCLUTR and
# note-category x 3 seeds, plus BioLinkBERT and Bio-ClinicalBERT (Table 8, M-Tri only) and
# DeCLUTR-base (Table 10, NER only) untrained x 3; 2 embed jobs per RoBERTa run (M-Cat, M-Tri: the
# few-shot and analysis sets reuse them), 16 scored sets; 23 fine-tune entries per RoBERTa run
# (17 document, 6 NER), M-Tri's fine-tuned entry for the open models, the 6 NER ones for DeCLUTR-base.
HLM_EXPECTED = {
    "train": 21,
    "embed": 30,
    "evaluate": 198,
    "finetune": 300,
    "documents": 1,
    "doc_task": 2,
    "ingest_notes": 1,
    "paper_report": 1,
}


def test_healthcare_lm_grid_dry_runs_without_the_sentence_pipeline() -> None:
    counts = _planned_counts(HLM)
    for rule, n in HLM_EXPECTED.items():
        assert counts.get(rule) == n, (rule, counts)
    # the notes feed the documents stage only: no splitting, NER or ontology download
    assert not {"split_sentences", "ner", "sentence_sets", "download_ontology", "medcat_pack"} & set(counts)
    readme = " ".join((REPO / "docs" / "papers" / "healthcare-lm.md").read_text().split())
    assert (
        f"{HLM_EXPECTED['train']} training jobs" in readme and f"{HLM_EXPECTED['finetune']} fine-tune jobs" in readme
    )


# The knobs of a paper's method that its demo twin may restate (scale only: fewer sentences than
# MiniLM has dimensions; spans for short demo notes); every other knob is the paper's, read through base.
# the method knobs a twin may change: scale, and the memory settings its small batches do not need
SCALED_KNOBS = {
    "medse": {"whitening_dims"},
    "augment": set(),
    "biosimcse": set(),
    "clinical-nli": set(),
    "healthcare-lm": {"min_span", "max_span", "mini_batch", "accumulate"},
}


def _restated(twin: object, under: object, path: str = "") -> list[str]:
    """Paths where an overlay states a value equal to what it is read on top of (nothing to state)."""
    if isinstance(twin, dict) and isinstance(under, dict):
        return [p for k, v in twin.items() if k in under for p in _restated(v, under[k], f"{path}.{k}")]
    return [path] if twin == under else []


@pytest.mark.parametrize("paper", sorted(SCALED_KNOBS))
def test_each_demo_twin_states_only_what_differs_from_its_paper_config(paper: str) -> None:
    """A demo twin is its paper config read underneath (base:), less the entries keep/drop leave
    out, with only what differs on top: no value restated, no method knob changed beyond scale."""
    path = REPO / "config" / "paper" / f"{paper}-demo.yaml"
    twin = yaml.safe_load(path.read_text())
    assert twin["base"] == f"config/paper/{paper}.yaml"
    under = keep_only(
        yaml.safe_load((REPO / twin["base"]).read_text()),
        twin.get("keep") or {},
        twin["base"],
        (twin.get("report") or {}).get("base_model"),
        twin.get("drop") or {},
    )
    overlay = {k: v for k, v in twin.items() if k not in ("base", "keep", "drop")}
    assert _restated(overlay, under) == [], paper
    for name, knobs in (twin.get("methods") or {}).items():
        assert set(knobs) <= SCALED_KNOBS[paper], (paper, name)
    resolved = _twin(path)
    assert set(resolved["methods"]) <= set(under["methods"]) and len(resolved["seeds"]) == 2
    assert set(resolved["tables"]) - set(under["tables"]) == set(overlay.get("tables") or {}) - set(under["tables"])
    Grid.from_config(RunConfig.parse(resolved))  # every cell the pruning kept cites a run the twin has
