"""The report rules and the targets, as the plan declares them (``workflow/rules/report.smk``,
``benchmark.smk``, ``phi.smk`` and ``all`` in the Snakefile): the summary and tables, the eval-set
statistics, the paper's tables and figures, the benchmark's MTEB results, the PHI guard."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clinsent import paths
from clinsent.plan.rules.base import Declarations, Declared, Files, Folder, Wildcards, files_of
from clinsent.plan.rules.corpus import DECLARED as CORPUS
from clinsent.plan.rules.corpus import shard_files

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

DECLARED = Declarations()
_rule = DECLARED.rule


def _report_outputs(p: Plan) -> Declared:
    t = p.run.tree
    return {
        "summary": t.pattern(paths.SUMMARY),
        "table_md": t.pattern(paths.RESULTS_TABLE, ext="md"),
        "table_csv": t.pattern(paths.RESULTS_TABLE, ext="csv"),
        "table_tex": t.pattern(paths.RESULTS_TABLE, ext="tex"),
        # the curve figure only where a run evaluates a curve set (else not drawn; results.md says why)
        **(
            {
                "figure_png": t.pattern(paths.CURVES_FIGURE, ext="png"),
                "figure_pdf": t.pattern(paths.CURVES_FIGURE, ext="pdf"),
            }
            if p.has_curves()
            else {}
        ),
        "corpus_md": t.pattern(paths.CORPUS_TABLE, ext="md"),
        "corpus_tex": t.pattern(paths.CORPUS_TABLE, ext="tex"),
        "run": t.pattern(paths.RUN_RECORD),  # which config this report is of (`snakemake --report` checks it)
        "replicates": t.pattern(paths.REPLICATES),  # every run's bootstrap replicates (paired comparisons)
    }


@_rule(_report_outputs)
def report(p: Plan, wc: Wildcards) -> Declared:
    t = p.run.tree
    corpus: dict[str, Files] = {}
    if p.run.note_entities:
        corpus = {
            "table1": t.file(paths.TABLE1),
            "table2": t.file(paths.TABLE2),
            "exact_duplicates": t.file(paths.EXACT_DUPLICATES),
            "duplicate_simulation": t.file(paths.DUPLICATE_ENTITIES),
        }
    elif p.run.note_sentences:
        corpus = {"s_all_counts": t.file(paths.S_ALL_COUNTS)}
    return {
        "metrics": p.evaluation_paths(),
        "selections": [p.files.run_file(paths.SELECTION, *job) for job in p.run.trained_jobs()],
        "curves": _curves(p),
        **corpus,
        "sentence_corpora": [p.files.corpus_stats_path(c) for c in p.run.sentence_corpora],
    }


def _curves(p: Plan) -> list[str]:
    return [p.files.run_file(paths.CURVE, *job) for job in p.run.trained_jobs()]


@_rule(lambda p: [p.run.tree.pattern(paths.EVAL_SET_STATS)])
def eval_set_stats(p: Plan, wc: Wildcards) -> Declared:
    return p.files.eval_set_files(wc["eval_set"])


def _paper_outputs(p: Plan) -> Declared:
    t = p.run.tree
    return {
        "tables": [t.file(paths.PAPER_TABLE, table=n, ext=x) for n in p.run.tables for x in ("md", "csv", "tex")],
        "curves": [t.file(paths.PAPER_CURVES, table=n, ext=x) for n in p.run_tables() for x in ("png", "pdf")],
        "figures": [t.file(paths.PAPER_FIGURE, figure=n, ext=x) for n in p.run.figures for x in ("png", "pdf", "csv")],
    }


@_rule(_paper_outputs)
def paper_report(p: Plan, wc: Wildcards) -> Declared:
    t = p.run.tree
    return {
        "summary": t.file(paths.SUMMARY),
        "replicates": t.file(paths.REPLICATES),
        "curves": _curves(p),
        "extras": p.kind_files(),  # what each table's and figure's kind reads besides these
    }


@_rule(lambda p: [Folder(p.run.tree.pattern(paths.MTEB))])
def mteb_results(p: Plan, wc: Wildcards) -> Declared:
    from clinsent.plan.benchmark import benchmark_models, benchmark_tasks, metrics_files, model_cards

    model = benchmark_models(p)[wc["model"]]
    tasks = benchmark_tasks(p)
    return {
        "metrics": [f for fs in metrics_files(p, model, tasks).values() for f in fs],
        "task_files": [f for task in tasks.values() for f in task["files"]],
        "models": [c.rsplit("/", 1)[0] for c in model_cards(p, model)],  # their cards get the results
    }


def bench_models(p: Plan) -> list[str]:
    """The benchmark's models (config ``models``), each one ``mteb_results`` job."""
    from clinsent.plan.benchmark import benchmark_models

    return list(benchmark_models(p)) if p.run.config.models else []


# -- the PHI guard ---------------------------------------------------------------------------------


@_rule(lambda p: [p.run.tree.pattern(paths.PHI_NGRAMS)])
def phi_sample(p: Plan, wc: Wildcards) -> Declared:
    return shard_files(p, paths.NOTES_SHARD)


def _outputs_of(p: Plan, rule: str) -> list[str]:
    """The files of a rule without wildcards (the reports `all` and the PHI scan ask for)."""
    return files_of({**CORPUS, **DECLARED}[rule].outputs(p))


def _reports(p: Plan) -> list[str]:
    """The report's files, the paper's, the corpus tables and manifest, the benchmark's results."""
    return [
        *_outputs_of(p, "report"),
        *(_outputs_of(p, "paper_report") if p.run.tables or p.run.figures else []),
        *(_outputs_of(p, "corpus_stats") if p.run.note_entities else []),
        *(_outputs_of(p, "corpus_manifest") if p.run.note_sentences else []),
        *(p.run.tree.file(paths.MTEB, model=m) for m in bench_models(p)),
    ]


@_rule(lambda p: [p.run.tree.pattern(paths.PHI_SCAN)])
def phi_scan(p: Plan, wc: Wildcards) -> Declared:
    return {
        "sample": p.run.tree.file(paths.PHI_NGRAMS),
        "reports": _reports(p),  # the benchmark's results and model cards among them
        # the train rule's outputs, all scanned
        "models": [f"{p.files.model_dir(*job)}/{f}" for job in p.run.trained_jobs() for f in paths.RUN_FILES],
        "releases": p.release_dirs(),  # the release copies and their cards
    }


# -- the targets -----------------------------------------------------------------------------------


@_rule(lambda p: [], name="all")
def targets(p: Plan, wc: Wildcards) -> Declared:
    """The default target's inputs: what a whole run makes."""
    return [
        *_outputs_of(p, "report"),
        *(_outputs_of(p, "corpus_stats") if p.run.note_entities else []),
        *(_outputs_of(p, "corpus_manifest") if p.run.note_sentences else []),
        *(_outputs_of(p, "paper_report") if p.run.tables or p.run.figures else []),
        *(_outputs_of(p, "phi_scan") if p.run.phi_scan else []),
        *(p.run.tree.file(paths.MTEB, model=m) for m in bench_models(p)),
        *p.release_dirs(),  # each trained run's release copy, its card with the eval metrics
        *p.files.corpus_embedding_files(),
    ]
