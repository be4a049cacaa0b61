"""config/paper/medse.yaml (the paper's full grid) and its demo-scale twin: job counts of a dry
run, knob-for-knob agreement, clear errors for a table that cites an unknown run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clinsent.experiments import Grid

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO / "config" / "paper" / "medse.yaml"
DEMO = REPO / "config" / "paper" / "medse-demo.yaml"

# docs/papers: "Regenerating MED-SE" derives these from the tables: 55 trained runs x 5 seeds,
# 11 untrained runs x 1 seed, BERT-flow x 5 seeds; 12 distinct batch plans x 5 seeds; embed and
# evaluate run once per model and eval set.
EXPECTED = {"train": 291, "embed": 582, "evaluate": 582, "batch_plan": 60, "split_sentences": 64, "ner": 64,
            "paper_report": 1, "report": 1}


def _load(path: Path) -> dict:
    cfg = yaml.safe_load(path.read_text())
    cfg.setdefault("training", {}).setdefault("steps", 2000)
    cfg["training"].setdefault("batch_size", 32)
    return cfg


def _dry_run(configfile: Path, *extra: str) -> dict[str, int]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(REPO),
                          "--configfile", str(configfile), "-n", "--quiet", "rules", *extra],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    counts = {}
    for line in (run.stdout + run.stderr).splitlines():
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if m:
            counts[m.group(1)] = int(m.group(2))
    return counts


def test_paper_grid_dry_run_matches_the_readme() -> None:
    counts = _dry_run(PAPER, "--config", "placeholders_ok=true")
    for rule, n in EXPECTED.items():
        assert counts.get(rule) == n, (rule, counts)
    readme = " ".join((REPO / "docs" / "papers" / "medse.md").read_text().split())
    assert f"{EXPECTED['train']} training jobs" in readme and f"{EXPECTED['batch_plan']} batch plans" in readme


def test_paper_grid_without_the_flag_names_the_missing_file() -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(REPO),
                          "--configfile", str(PAPER), "-n"], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode != 0
    assert "config: notes.path: /path/to/mimic-iii/1.4/NOTEEVENTS.csv.gz does not exist" in run.stderr, run.stderr[-2000:]


def test_grid_counts_from_the_tables() -> None:
    grid = Grid.from_config(_load(PAPER))
    trained = [(m, b) for m, b in grid.runs if _load(PAPER)["methods"][m]["objective"] != "none"]
    assert len(trained) == 55 and len(grid.runs) == 67
    assert len(grid.plans) == 12 and len(grid.jobs) == EXPECTED["train"]


def test_demo_config_is_a_subset_of_the_paper_config() -> None:
    paper, demo = _load(PAPER), _load(DEMO)
    for name, knobs in demo["methods"].items():
        # the one allowed difference: demo eval sets have fewer sentences than MiniLM has dimensions
        knobs = {k: v for k, v in knobs.items() if not (name == "lm_whitening" and k == "whitening_dims")}
        assert paper["methods"].get(name) == knobs, name
    assert set(demo["tables"]) == set(paper["tables"]) and set(demo["figures"]) == set(paper["figures"])
    for tid, table in demo["tables"].items():
        paper_cells = {c for r in paper["tables"][tid]["rows"] for c in r["cells"] if c}
        demo_cells = {c for r in table["rows"] for c in r["cells"] if c}
        assert demo_cells <= paper_cells | {"lm_whitening"}, (tid, demo_cells - paper_cells)
        assert table.get("columns") == paper["tables"][tid].get("columns")
    assert len(demo["seeds"]) == 2 and list(demo["base_models"]) == ["minilm"]


def test_a_table_citing_an_unknown_run_is_a_clear_error() -> None:
    cfg = _load(DEMO)
    cfg["tables"]["table8"]["rows"][0]["cells"] = ["medse_typo"]
    with pytest.raises(ValueError, match=r"^config: tables\.table8\.rows\[0\] \(Mean\): cites method 'medse_typo', which is not a key of methods.*Fix: "):
        Grid.from_config(cfg)
    cfg = _load(DEMO)
    cfg["figures"]["figure2"]["points"][0]["run"] = "lm@biobert"
    with pytest.raises(ValueError, match=r"^config: figures\.figure2\.points\[0\]: cites base model 'biobert'.*Fix: "):
        Grid.from_config(cfg)


AUGMENT = REPO / "config" / "paper" / "augment.yaml"
AUGMENT_DEMO = REPO / "config" / "paper" / "augment-demo.yaml"
# docs/papers: "Regenerating the augmentation paper": 49 trained runs x 5 seeds + the untrained Chinese
# baseline; 14 batch plans (English and Chinese: the full corpus and 6 fractions) x 5 seeds; an
# English run is embedded on the 2 BIOSSES splits, a Chinese run on the 4 ChineseBLUE probes.
AUGMENT_EXPECTED = {"train": 246, "batch_plan": 70, "embed": 754, "evaluate": 754, "sentence_corpus": 2,
                    "eval_set_stats": 5, "paper_report": 1}


def test_augment_grid_dry_run_matches_the_readme() -> None:
    counts = _dry_run(AUGMENT, "--config", "placeholders_ok=true")
    for rule, n in AUGMENT_EXPECTED.items():
        assert counts.get(rule) == n, (rule, counts)
    assert not {"ingest_notes", "ner", "sentence_sets"} & set(counts)  # no notes pipeline without notes
    readme = " ".join((REPO / "docs" / "papers" / "augment.md").read_text().split())
    assert f"{AUGMENT_EXPECTED['train']} training jobs" in readme and f"{AUGMENT_EXPECTED['batch_plan']} batch plans" in readme


def test_augment_demo_is_a_subset_of_the_paper_config() -> None:
    paper, demo = yaml.safe_load(AUGMENT.read_text()), yaml.safe_load(AUGMENT_DEMO.read_text())
    for name, knobs in demo["methods"].items():
        assert paper["methods"].get(name) == knobs, name
    assert set(demo["tables"]) == set(paper["tables"]) and set(demo["figures"]) == set(paper["figures"])
    assert set(demo["eval_sets"]) <= set(paper["eval_sets"])
    for name, entry in demo["eval_sets"].items():
        keep = ("task", "split", "scale_max", "inputs", "headline", "base_models")  # formats: the demo uses both readers
        assert {k: entry.get(k) for k in keep} == {k: paper["eval_sets"][name].get(k) for k in keep}, name
    steps = {k: v for k, v in paper["training"].items() if k not in ("batch_size", "eval_every", "checkpoint_every",
                                                                        "threads", "max_length")}
    assert {k: demo["training"][k] for k in steps} == steps  # epochs, learning rate and pooling as in the paper


def test_augment_tables_name_known_sets_and_methods() -> None:
    cfg = yaml.safe_load(AUGMENT_DEMO.read_text())
    cfg["tables"]["table2"]["rows"][0]["method"] = "rc_typo"
    with pytest.raises(ValueError, match=r"^config: tables\.table2\.rows\[0\]\.method: names 'rc_typo'"):
        Grid.from_config(cfg)
    cfg = yaml.safe_load(AUGMENT_DEMO.read_text())
    cfg["tables"]["table3"]["eval_sets"].append("cmedqa")
    with pytest.raises(ValueError, match=r"^config: tables\.table3\.eval_sets: names 'cmedqa', which is not a key of eval_sets"):
        Grid.from_config(cfg)


BIOSIMCSE = REPO / "config" / "paper" / "biosimcse.yaml"
BIOSIMCSE_DEMO = REPO / "config" / "paper" / "biosimcse-demo.yaml"
# docs/papers: "Regenerating BioSimCSE": (unsupervised + supervised) x 2 base models x 5 seeds, plus the
# untrained BioLinkBERT of Figure 1 x 5; each trained run fine-tuned on 3 tasks; a cross-encoder
# per base model, task and seed; zero-shot scores on the 3 test sets only.
BIOSIMCSE_EXPECTED = {"train": 25, "finetune": 60, "cross_encoder": 30, "embed": 75, "evaluate": 75,
                      "batch_plan": 5, "training_rows": 1, "sentence_corpus": 1, "paper_report": 1}
NLI = REPO / "config" / "paper" / "clinical-nli.yaml"
NLI_DEMO = REPO / "config" / "paper" / "clinical-nli-demo.yaml"
# docs/papers: "Regenerating the clinical NLI study": CTRL0 and the six trained conditions x 3 seeds,
# each scored on MRR, the MedNLI classifier and BIOSSES.
NLI_EXPECTED = {"train": 21, "embed": 63, "evaluate": 63, "training_rows": 2, "paper_report": 1}


@pytest.mark.parametrize(("config", "expected"), [(BIOSIMCSE, BIOSIMCSE_EXPECTED), (NLI, NLI_EXPECTED)])
def test_pair_paper_grids_dry_run_match_the_readme(config: Path, expected: dict[str, int]) -> None:
    counts = _dry_run(config, "--config", "placeholders_ok=true")
    for rule, n in expected.items():
        assert counts.get(rule) == n, (rule, counts)
    assert not {"ingest_notes", "ner", "sentence_sets"} & set(counts)
    readme = " ".join((REPO / "docs" / "papers" / f"{config.stem}.md").read_text().split())
    assert f"{expected['train']} training jobs" in readme, config.name
    if "finetune" in expected:
        assert f"{expected['finetune']} fine-tune jobs" in readme and f"{expected['cross_encoder']} cross-encoder jobs" in readme


@pytest.mark.parametrize(("paper_path", "demo_path"), [(BIOSIMCSE, BIOSIMCSE_DEMO), (NLI, NLI_DEMO)])
def test_pair_paper_demos_are_the_paper_configs_at_demo_scale(paper_path: Path, demo_path: Path) -> None:
    paper, demo = yaml.safe_load(paper_path.read_text()), yaml.safe_load(demo_path.read_text())
    assert demo["methods"] == paper["methods"]
    assert demo["tables"].keys() == paper["tables"].keys() and demo["figures"].keys() == paper["figures"].keys()
    for tid, table in demo["tables"].items():
        assert table["rows"] == paper["tables"][tid]["rows"] and table.get("eval_sets") == paper["tables"][tid].get("eval_sets")
        assert table.get("metrics") == paper["tables"][tid].get("metrics")
    assert demo["eval_sets"].keys() == paper["eval_sets"].keys()
    for name, entry in demo["eval_sets"].items():
        keep = ("task", "split", "scale_max", "inputs", "headline", "validation_share", "validation_seed", "evaluate",
                "candidates", "classifier", "pair_features", "classes", "format")
        assert {k: entry.get(k) for k in keep} == {k: paper["eval_sets"][name].get(k) for k in keep}, name
    for name, entry in (demo.get("finetune") or {}).items():
        assert {k: v for k, v in entry.items() if k != "max_length"} == \
            {k: v for k, v in paper["finetune"][name].items() if k != "max_length"}, name
    scale = ("batch_size", "eval_every", "checkpoint_every", "threads", "max_length")
    assert {k: v for k, v in demo["training"].items() if k not in scale} == \
        {k: v for k, v in paper["training"].items() if k not in scale}
    assert demo["training_data"].keys() == paper["training_data"].keys()
    assert len(demo["seeds"]) == 2 and demo["base_models"].keys() == paper["base_models"].keys()


HLM = REPO / "config" / "paper" / "healthcare-lm.yaml"
HLM_DEMO = REPO / "config" / "paper" / "healthcare-lm-demo.yaml"
# docs/papers: "Regenerating the healthcare-LM paper": RoBERTa-base untrained, MLM, DeCLUTR and
# note-category x 3 seeds, plus BioLinkBERT and Bio-ClinicalBERT (Table 8, M-Tri only) and
# DeCLUTR-base (Table 10, NER only) untrained x 3; 2 embed jobs per RoBERTa run (M-Cat, M-Tri: the
# few-shot and analysis sets reuse them), 16 scored sets; 23 fine-tune entries per RoBERTa run
# (17 document, 6 NER), M-Tri's fine-tuned entry for the open models, the 6 NER ones for DeCLUTR-base.
HLM_EXPECTED = {"train": 21, "embed": 30, "evaluate": 198, "finetune": 300, "documents": 1, "doc_task": 2,
                "ingest_notes": 1, "paper_report": 1}


def test_healthcare_lm_grid_dry_runs_without_the_sentence_pipeline() -> None:
    counts = _dry_run(HLM, "--config", "placeholders_ok=true")
    for rule, n in HLM_EXPECTED.items():
        assert counts.get(rule) == n, (rule, counts)
    # the notes feed the documents stage only: no splitting, NER or ontology download
    assert not {"split_sentences", "ner", "sentence_sets", "download_ontology", "medcat_pack"} & set(counts)
    readme = " ".join((REPO / "docs" / "papers" / "healthcare-lm.md").read_text().split())
    assert f"{HLM_EXPECTED['train']} training jobs" in readme and f"{HLM_EXPECTED['finetune']} fine-tune jobs" in readme


def test_healthcare_lm_demo_is_the_paper_config_at_demo_scale() -> None:
    paper, demo = yaml.safe_load(HLM.read_text()), yaml.safe_load(HLM_DEMO.read_text())
    assert {m: e["objective"] for m, e in demo["methods"].items()} == {m: e["objective"] for m, e in paper["methods"].items()}
    assert {k: v for k, v in demo["methods"]["note"].items()} == paper["methods"]["note"]
    assert set(demo["figures"]) == set(paper["figures"])
    # the demo's few-shot tables are the paper's M-Tri ones at demo n; Table 8 needs two more base models
    assert set(paper["tables"]) - set(demo["tables"]) == {"table15_mcat", "table15_mtri", "table16_mcat", "table16_mtri",
                                                           "table8"}
    for tid in set(demo["tables"]) & set(paper["tables"]):  # Table 10's DeCLUTR-base row is the full config's alone
        assert all(row in paper["tables"][tid]["rows"] for row in demo["tables"][tid]["rows"]) or tid == "table10", tid
        assert demo["tables"][tid].get("metrics") == paper["tables"][tid].get("metrics"), tid
    for name, task in demo["doc_tasks"].items():
        assert task["label"] == paper["doc_tasks"][name]["label"]
    for name in demo["eval_sets"]:
        if not name.startswith("mtri_fs"):
            assert demo["eval_sets"][name]["task"] == paper["eval_sets"][name]["task"], name
