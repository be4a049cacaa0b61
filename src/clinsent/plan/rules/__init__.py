"""The DAG's rules as the plan declares them: each rule's outputs (the path grammar's patterns,
:mod:`clinsent.paths`) and its inputs (a function of the job's wildcards), written once.

The Snakefile's rules take both from here (``IN`` and ``OUT`` in ``workflow/rules/common.smk``):
what a rule adds is how it runs (params, log, benchmark, resources, its script) and how
``snakemake --report`` shows an output. :func:`clinsent.plan.jobs.jobs` walks the same
declarations from ``all``'s inputs, as Snakemake builds its DAG, so the plan's jobs and job
counts are the DAG's without a table of rule names (``tests/plan/test_plan.py`` checks them
against Snakemake's own DAG for every paper config).

A rule's inputs (and outputs) are a list (positional) or a mapping (named): a name holds one
file (a ``str``) or a list of them, as the rule's script reads it. An output that is a folder is
a :class:`Folder`, one removed once its readers are done a :class:`Scratch`. One module per
stage, each holding the rules of several ``.smk`` files: :mod:`.corpus` (the notes to the sets,
the downloads, documents and sentence corpora), :mod:`.training` (batch plans, training rows,
train, release), :mod:`.scoring` (embed, corpus embeddings, evaluate, finetune) and
:mod:`.reports` (report, paper report, benchmark, PHI scan, ``all``).
"""

from __future__ import annotations

from clinsent.plan.rules import corpus, reports, scoring, training
from clinsent.plan.rules.base import Declared, Folder, Raw, Rule, Scratch, Wildcards, files_of

__all__ = ["RULES", "Declared", "Folder", "Raw", "Rule", "Scratch", "Wildcards", "files_of"]

RULES: dict[str, Rule] = {}
for _stage in (corpus, training, scoring, reports):
    _twice = RULES.keys() & _stage.DECLARED.keys()
    if _twice:
        raise ValueError(f"rules declared in two modules: {', '.join(sorted(_twice))}")
    RULES |= _stage.DECLARED
