# Report: summary.csv (the tidy contract), the results table (md, csv, tex), the curve figure and the
# corpus tables (MED-SE Tables 1 and 2, exact duplicates, the duplicate-entity simulation; or, where no
# method needs entities, S_all's size and exact duplicates).


from clinsent.report.captions import captions
from clinsent.report.run_record import fingerprint, refuse_other_config


localrules:
    report,
    paper_report,
    eval_set_stats,
    corpus_stats,
    corpus_manifest,


# `snakemake --report` over results reported for another config: refused (clinsent.report.run_record)
REPORT_FINGERPRINT = fingerprint(
    PLAN.run.trained_jobs(), PLAN.evaluations(), TABLES, FIGURES, CONF.report.title
)
try:
    refuse_other_config(R, REPORT_FINGERPRINT, [str(c) for c in workflow.overwrite_configfiles], sys.argv)
except InputError as _exc:
    config_error(_exc)


# what this run does, as every caption and table note states it (clinsent.report.captions)
RUN_FACTS = PLAN.run_facts()
CAPTIONS = captions(RUN_FACTS, CONF.report.paper_label)


rule report:
    """Collect every job's metrics and selection into the summary, the table and the figure."""
    input:
        # every (job, eval set) that is scored (an eval set with `base_models` only for runs of those;
        # then the fine-tuned runs and cross-encoders), every run's selection and curve, the corpus tables
        IN("report"),
    output:
        # the table (md, csv, tex), the curve figure where a run evaluates a curve set, the corpus table,
        # which config this report is of (`snakemake --report` checks it), the bootstrap replicates
        **OUT("report",
              summary=SHOWN("../report/summary.rst", "Results"),
              table_csv=SHOWN("../report/results_table.rst", "Results"),
              figure_png=SHOWN("../report/curves.rst", "Training curves"),
              corpus_md=SHOWN("../report/run_corpus.rst", "Corpus")),
    params:
        fingerprint=REPORT_FINGERPRINT,
        configfiles=[str(c) for c in workflow.overwrite_configfiles or ["config/config.yaml"]],
        jobs=[{"method": m, "base_model": b, "seed": s} for m, b, s in PLAN.run.trained_jobs()],
        evaluations=[{"method": m, "base_model": b, "seed": s, "eval_set": e} for m, b, s, e in PLAN.evaluations()],
        sentence_corpora=PLAN.run.sentence_corpora,
        eval_sets=PLAN.report_eval_sets(),  # each scored set's metrics, headline and file names
        methods=PLAN.scoring_methods(),
        title=CONF.report.title,
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
        IN("eval_set_stats"),
    output:
        *OUT("eval_set_stats"),
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
        IN("paper_report"),  # the summary, the replicates, the curves, what each kind reads besides
    output:
        # in `snakemake --report`: each table (csv) and figure (png) under the paper's label
        **OUT("paper_report",
              tables=SHOWN("../report/paper_table.rst", f"Tables: {CONF.report.paper_label}", str, ext=".csv"),
              curves=SHOWN("../report/curves.rst", "Training curves", lambda stem: stem.removeprefix("curves_"), ext=".png"),
              figures=SHOWN("../report/paper_figure.rst", f"Figures: {CONF.report.paper_label}", str, ext=".png")),
    params:
        jobs=rules.report.params.jobs,
        tables=TABLES,
        curve_tables=PLAN.run_tables(),  # the tables whose curve figure is drawn (declared above)
        figures=FIGURES,
        eval_sets={n: t.headline for n, t in PLAN.scored_tasks().items()},
        default_base=PLAN.run.grid.default_base,
        paper_label=CONF.report.paper_label,
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
