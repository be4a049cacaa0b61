# Report: summary.csv (the tidy contract), the results table (md, csv, tex), the curve figure and the
# corpus tables (MED-SE Tables 1 and 2, exact duplicates, the duplicate-entity simulation; or, where no
# method needs entities, S_all's size and exact duplicates).


from clinsent import eval_length
from clinsent.report.captions import RunFacts, captions, has_paper_numbers
from clinsent.report.run_record import fingerprint, refuse_other_config


localrules:
    report,
    paper_report,
    eval_set_stats,
    corpus_stats,
    corpus_manifest,


# `snakemake --report` over results reported for another config: refused (clinsent.report.run_record)
REPORT_FINGERPRINT = fingerprint(
    PLAN.run.trained_jobs(), PLAN.evaluations(), TABLES, FIGURES, config["report"]["title"]
)
try:
    refuse_other_config(R, REPORT_FINGERPRINT, [str(c) for c in workflow.overwrite_configfiles], sys.argv)
except InputError as _exc:
    config_error(_exc)


# what this run does, as every caption and table note states it (clinsent.report.captions)
RUN_FACTS = RunFacts(
    seeds=max((len(e.seeds) for e in PLAN.run.methods.values()), default=1),
    reference=PLAN.reference(),
    selection={m: e.selection_set for m, e in PLAN.run.methods.items() if e.method.trains},
    reported=list(PLAN.scored_tasks()),
    curve_sets=list(dict.fromkeys(n for m in PLAN.run.methods if PLAN.run.methods[m].method.trains for n in PLAN.curve_sets(m))),
    corpus_stages=(["the notes split into sentences (ScispaCy)", "S_all (the length filter)"] if NOTE_SENTENCES else [])
    + (["MedCAT NER (T047, T048)", "ontology definitions", "S_ent and S_none"] if NOTE_ENTITIES else [])
    + [f"sentence corpus {c}" for c in PLAN.run.sentence_corpora],
    paper_tables={t: has_paper_numbers(e) for t, e in TABLES.items()},
    eval_length=eval_length.configured(PLAN.run.parts),
)
CAPTIONS = captions(RUN_FACTS, config["report"]["paper_label"])


# every (job, eval set) that is scored: an eval set with `base_models` only for runs of those;
# then the fine-tuned runs and cross-encoders, under their `finetune` entry's name as eval set
CORPUS_INPUTS = {
    **({"table1": rules.corpus_stats.output.table1, "table2": rules.corpus_stats.output.table2,
        "exact_duplicates": rules.corpus_stats.output.duplicates,
        "duplicate_simulation": rules.duplicate_stats.output[0]} if NOTE_ENTITIES else {}),
    **({"s_all_counts": rules.sentence_set_all.output.counts} if NOTE_SENTENCES and not NOTE_ENTITIES else {}),
    "sentence_corpora": [PLAN.files.corpus_stats_path(c) for c in PLAN.run.sentence_corpora],
}


rule report:
    """Collect every job's metrics and selection into the summary, the table and the figure."""
    input:
        metrics=PLAN.evaluation_paths(),
        selections=[PLAN.files.run_file(P.SELECTION, m, b, s) for m, b, s in PLAN.run.trained_jobs()],
        curves=[PLAN.files.run_file(P.CURVE, m, b, s) for m, b, s in PLAN.run.trained_jobs()],
        **CORPUS_INPUTS,
    output:
        summary=report(T.pattern(P.SUMMARY), caption="../report/summary.rst", category="Results"),
        table_md=T.pattern(P.RESULTS_TABLE, ext="md"),
        table_csv=report(T.pattern(P.RESULTS_TABLE, ext="csv"), caption="../report/results_table.rst", category="Results"),
        table_tex=T.pattern(P.RESULTS_TABLE, ext="tex"),
        # the curve figure only where a run evaluates a curve set (else not drawn; results.md says why)
        **({"figure_png": report(T.pattern(P.CURVES_FIGURE, ext="png"), caption="../report/curves.rst", category="Training curves"),
            "figure_pdf": T.pattern(P.CURVES_FIGURE, ext="pdf")} if PLAN.has_curves() else {}),
        corpus_md=report(T.pattern(P.CORPUS_TABLE, ext="md"), caption="../report/run_corpus.rst", category="Corpus"),
        corpus_tex=T.pattern(P.CORPUS_TABLE, ext="tex"),
        run=T.pattern(P.RUN_RECORD),  # which config this report is of (`snakemake --report` checks it)
        replicates=T.pattern(P.REPLICATES),  # every run's bootstrap replicates (paired comparisons)
    params:
        fingerprint=REPORT_FINGERPRINT,
        configfiles=[str(c) for c in workflow.overwrite_configfiles or ["config/config.yaml"]],
        jobs=[{"method": m, "base_model": b, "seed": s} for m, b, s in PLAN.run.trained_jobs()],
        evaluations=[{"method": m, "base_model": b, "seed": s, "eval_set": e} for m, b, s, e in PLAN.evaluations()],
        sentence_corpora=PLAN.run.sentence_corpora,
        eval_sets={n: {"metrics": list(t.metrics), "headline": t.headline} for n, t in PLAN.scored_tasks().items()},
        methods=PLAN.scoring_methods(),
        title=config["report"]["title"],
        facts=RUN_FACTS.params(),  # the reference row, the selection, the seeds: the table's notes
        captions=CAPTIONS,  # what the .rst captions print in `snakemake --report`
    log:
        T.log("report"),
    benchmark:
        T.benchmark("report")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/report.py"




rule eval_set_stats:
    """Size of one eval set per split, its task and metric (the augmentation paper's Table 3)."""
    input:
        lambda wc: eval_set_files(wc.eval_set),
    output:
        T.pattern(P.EVAL_SET_STATS),
    params:
        eval_set=lambda wc: PLAN.eval_params(wc.eval_set),
    log:
        T.log("eval_set_stats"),
    benchmark:
        T.benchmark("eval_set_stats")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/eval_set_stats.py"


rule paper_report:
    """The paper's tables (md, csv, tex; ours beside the paper's numbers), a training-curve figure
    per runs table, and the figures; each built by its kind (clinsent.report.kinds)."""
    input:
        summary=rules.report.output.summary,
        replicates=rules.report.output.replicates,
        curves=rules.report.input.curves,
        extras=PLAN.kind_files(),  # what each table's and figure's kind reads besides these
    output:
        # in `snakemake --report`: each table (csv) and figure (png) under the paper's label
        tables=[report(T.file(P.PAPER_TABLE, table=t, ext=ext), caption="../report/paper_table.rst",
                       category=f"Tables: {config['report']['paper_label']}", subcategory=t) if ext == "csv"
                else T.file(P.PAPER_TABLE, table=t, ext=ext) for t in TABLES for ext in ("md", "csv", "tex")],
        curves=[report(T.file(P.PAPER_CURVES, table=t, ext=ext), caption="../report/curves.rst", category="Training curves",
                       subcategory=t) if ext == "png" else T.file(P.PAPER_CURVES, table=t, ext=ext)
                for t in PLAN.run_tables() for ext in ("png", "pdf")],
        figures=[report(T.file(P.PAPER_FIGURE, figure=f, ext=ext), caption="../report/paper_figure.rst",
                        category=f"Figures: {config['report']['paper_label']}", subcategory=f) if ext == "png"
                 else T.file(P.PAPER_FIGURE, figure=f, ext=ext) for f in FIGURES for ext in ("png", "pdf", "csv")],
    params:
        jobs=rules.report.params.jobs,
        tables=TABLES,
        curve_tables=PLAN.run_tables(),  # the tables whose curve figure is drawn (declared above)
        figures=FIGURES,
        eval_sets={n: t.headline for n, t in PLAN.scored_tasks().items()},
        default_base=PLAN.run.grid.default_base,
        paper_label=config["report"]["paper_label"],
        tables_dir=T.file(P.PAPER_TABLES),  # where the declared outputs above live
        figures_dir=T.file(P.PAPER_FIGURES),
        extras=PLAN.kind_extras(),  # per table and figure: its kind's inputs and params
        facts=RUN_FACTS.params(),
        captions=CAPTIONS,
    log:
        T.log("paper_report"),
    benchmark:
        T.benchmark("paper_report")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/paper_report.py"
