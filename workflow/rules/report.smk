# Report: summary.csv (the tidy contract), the results table (md, csv, tex) and the curve figure.


localrules:
    report,
    corpus_stats,


rule report:
    """Collect every job's metrics and selection into the summary, the table and the figure."""
    input:
        metrics=[
            f"{R}/metrics/{m}/{b}/seed{s}/{e}.json" for m, b, s in trained_jobs() for e in EVAL_SETS
        ],
        selections=[f"{model_dir(m, b, s)}/selection.json" for m, b, s in trained_jobs()],
        curves=[f"{model_dir(m, b, s)}/curve.csv" for m, b, s in trained_jobs()],
    output:
        summary=f"{R}/summary.csv",
        table_md=f"{R}/tables/results.md",
        table_csv=f"{R}/tables/results.csv",
        table_tex=f"{R}/tables/results.tex",
        figure_png=f"{R}/figures/curves.png",
        figure_pdf=f"{R}/figures/curves.pdf",
    params:
        jobs=[{"method": m, "base_model": b, "seed": s} for m, b, s in trained_jobs()],
        eval_sets=EVAL_SETS,
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
