"""The workflow's plan as plain data: what a config asks the DAG to run, without Snakemake.

:func:`build_plan` reads a validated config once (methods, eval sets and fine-tune entries
through their registries, the job grid, the batch plans, the report's extra inputs) and the
:class:`Plan` answers every question the rules ask: a job's inputs and params, the jobs of each
rule, the targets of ``all``, the report's inputs. ``workflow/rules/common.smk`` builds one plan
and the rules call it through thin input functions, so the planning is tested here
(``tests/test_plan.py``) instead of only through dry runs, and parsing the Snakefile imports
neither torch nor transformers.

``python -m clinsent.plan --summary config/paper/medse.yaml`` prints the job counts by rule.

Tables and figures are planned through their kinds (:mod:`clinsent.report.kinds`): the runs
they cite, the files they read, their checks; nothing here names a kind.

Two checks still read a user's file while a config is read, as they did in ``common.smk``: a
sentence corpus's size when a method gives ``epochs`` over it (the steps, and so the batch plan's
name, depend on it) and the queries of a ``retrieval_examples`` table (checked against its eval
set's texts before any training). Both read only when the file exists.
"""

from clinsent.plan.checks import (
    build_plan,
    check_corpus_embeddings,
    check_doc_task_categories,
    check_eval_headers,
    check_formats,
    check_model_folders,
    check_names,
    check_shown_texts,
    check_user_files,
)
from clinsent.plan.cli import main
from clinsent.plan.config import load_config, prepare_config
from clinsent.plan.layout import NOTES_INPUT, Job, Plan

_load_config = load_config  # the name the tests and newconfig used before the package
