# Report: summary.csv (the tidy contract), the results table (md, csv, tex), the curve figure and the
# corpus tables (MED-SE Tables 1 and 2, exact duplicates, the duplicate-entity simulation).


localrules:
    report,
    paper_report,
    corpus_stats,
    corpus_manifest,


rule report:
    """Collect every job's metrics and selection into the summary, the table and the figure."""
    input:
        metrics=[
            f"{R}/metrics/{m}/{b}/seed{s}/{e}.json" for m, b, s in trained_jobs() for e in EVAL_SETS
        ],
        selections=[f"{model_dir(m, b, s)}/selection.json" for m, b, s in trained_jobs()],
        curves=[f"{model_dir(m, b, s)}/curve.csv" for m, b, s in trained_jobs()],
        table1=rules.corpus_stats.output.table1,
        table2=rules.corpus_stats.output.table2,
        exact_duplicates=rules.corpus_stats.output.duplicates,
        duplicate_simulation=rules.duplicate_stats.output[0],
    output:
        summary=f"{R}/summary.csv",
        table_md=f"{R}/tables/results.md",
        table_csv=f"{R}/tables/results.csv",
        table_tex=f"{R}/tables/results.tex",
        figure_png=f"{R}/figures/curves.png",
        figure_pdf=f"{R}/figures/curves.pdf",
        corpus_md=f"{R}/tables/corpus.md",
        corpus_tex=f"{R}/tables/corpus.tex",
    params:
        jobs=[{"method": m, "base_model": b, "seed": s} for m, b, s in trained_jobs()],
        eval_sets={
            n: {"metrics": list(e.task.metrics), "headline": e.task.headline} for n, e in EVAL.items()
        },
        methods=METHODS,
        title=config["report"]["title"],
    log:
        f"{LOGS}/report.log",
    benchmark:
        f"{BENCH}/report.tsv"
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/report.py"


TABLES = config.get("tables") or {}
FIGURES = config.get("figures") or {}


rule paper_report:
    """The paper's tables (md, csv, tex; ours beside the paper's numbers), a training-curve figure
    per table and Figure 2 (alignment against uniformity, labelled with Spearman)."""
    input:
        summary=rules.report.output.summary,
        curves=rules.report.input.curves,
    output:
        tables=[f"{R}/tables/paper/{t}.{ext}" for t in TABLES for ext in ("md", "csv", "tex")],
        curves=[f"{R}/figures/paper/curves_{t}.{ext}" for t in TABLES for ext in ("png", "pdf")],
        figures=[f"{R}/figures/paper/{f}.{ext}" for f in FIGURES for ext in ("png", "pdf", "csv")],
    params:
        jobs=rules.report.params.jobs,
        tables=TABLES,
        figures=FIGURES,
        eval_sets={n: e.task.headline for n, e in EVAL.items()},
        default_base=GRID.default_base,
        paper_label=config["report"]["paper_label"],
        tables_dir=f"{R}/tables/paper",  # where the declared outputs above live
        figures_dir=f"{R}/figures/paper",
    log:
        f"{LOGS}/paper_report.log",
    benchmark:
        f"{BENCH}/paper_report.tsv"
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/paper_report.py"
