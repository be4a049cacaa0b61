"""The workflow's plan as plain data: what a config asks the DAG to run, without Snakemake.

:func:`clinsent.plan.checks.build_plan` reads a validated config once (methods, eval sets and
fine-tune entries through their registries, the job grid, the batch plans, the report's extra
inputs) and the :class:`clinsent.plan.layout.Plan` answers every question the rules ask: a job's
inputs and params, the jobs of each rule, the targets of ``all``, the report's inputs. A plan is
composed of three parts, one idea each: ``plan.run`` (:mod:`clinsent.plan.run`: what the config
asks, read through the registries), ``plan.files`` (:mod:`clinsent.plan.files`: where each file
lives) and the plan's own methods (:mod:`clinsent.plan.layout`: every job's inputs and params).
Each rule's outputs and inputs are declared once (:mod:`clinsent.plan.rules`) and
:mod:`clinsent.plan.jobs` walks them from ``all`` as Snakemake builds its DAG: the plan's jobs and
their counts. ``workflow/rules/common.smk`` builds one plan and every rule takes its inputs and
outputs from it, so the planning is tested (``tests/plan/test_plan.py``, job by job against
Snakemake's own DAG) instead of only through dry runs, and parsing the Snakefile imports neither
torch nor transformers. Where files live is :mod:`clinsent.paths`' grammar.

``python -m clinsent plan config/paper/medse.yaml`` prints the job counts by rule.

Tables and figures are planned through their kinds (:mod:`clinsent.report.kinds`), which see the
plan through :class:`clinsent.report.kinds.base.PlanView` and never import it: the runs they
cite, the files they read, their checks; nothing here names a kind.

Two checks still read a user's file while a config is read, as they did in ``common.smk``: a
sentence corpus's size when a method gives ``epochs`` over it (the steps, and so the batch plan's
name, depend on it) and the queries of a ``retrieval_examples`` table (checked against its eval
set's texts before any training). Both read only when the file exists.

This package's modules are imported by name (``clinsent.plan.checks``, ``.input_checks``,
``.config``, ``.layout``, ``.run``, ``.files``, ``.rules``, ``.jobs``, ``.benchmark``); importing
one imports only what it needs.
"""
