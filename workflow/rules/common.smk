# The plan of the run (clinsent.plan: the grid, every job's inputs and params, the report's
# inputs, tested without Snakemake); every rule's inputs and outputs as the plan declares them
# (clinsent.plan.rules: IN and OUT below) and the thin params functions the rules call.
import os
import sys

from clinsent import paths as P
from clinsent.config.declare import to_params
from clinsent.errors import InputError
from clinsent.plan.jobs import job_counts
from clinsent.plan.rules import RULES as DECLARED, Folder, Raw, Scratch
from clinsent.runner.smk import config_error, set_up_run
from clinsent.runner.untracked import Untracked

# The plan comes through the Snakefile's door (PLAN). Its typed config (clinsent.config.sections) is
# `config` in Python; here, where `config` is Snakemake's own mapping, it is CONF: every rule below
# reads its settings there, never the mapping; an entry a job reads whole goes into its params
# through to_params. set_up_run: the results folder writable, the raw inputs' key files (main
# process), offline switches, the hub folder, the GPU pool (clinsent.runner.smk).
CONF = PLAN.run.config
try:
    EMBED_GPU = set_up_run(PLAN, workflow.is_main_process)  # 1: embed jobs take a GPU slot of the pool
except (InputError, OSError) as _exc:
    config_error(_exc)

R = PLAN.run.results
T = PLAN.run.tree  # every rule's input, output, log and benchmark pattern (clinsent.paths)
NOTE_SENTENCES = PLAN.run.note_sentences
NOTE_ENTITIES = PLAN.run.note_entities  # ontology, pack, NER, S_ent / S_none and their statistics
TABLES, FIGURES = PLAN.run.tables, PLAN.run.figures

wildcard_constraints:
    **PLAN.run.wildcard_constraints(),


def IN(rule):
    """A rule's inputs as the plan declares them (clinsent.plan.rules), for each job's wildcards: a
    raw input as ancient(), its key file beside it (clinsent.runner.staleness)."""
    declared = DECLARED[rule]

    def flagged(f):
        return ancient(str(f)) if isinstance(f, Raw) else f

    def inputs(wildcards):
        found = declared.inputs(PLAN, wildcards)
        if isinstance(found, dict):
            return {k: flagged(v) if isinstance(v, str) else [flagged(f) for f in v] for k, v in found.items()}
        return [flagged(f) for f in found]

    return unpack(inputs)


def OUT(rule, show=None, **shown):
    """A rule's outputs as the plan declares them (clinsent.plan.rules), a folder as directory()
    and a scratch file as temp(); how `snakemake --report` shows them: `shown`, an output's name ->
    a function of each of its files (SHOWN), or `show` for every file of a rule's unnamed outputs."""

    def flagged(f, show):
        f = directory(str(f)) if isinstance(f, Folder) else temp(str(f)) if isinstance(f, Scratch) else str(f)
        return show(f) if show else f

    declared = DECLARED[rule].outputs(PLAN)
    if isinstance(declared, list):
        return [flagged(f, show) for f in declared]
    return {k: [flagged(f, shown.get(k)) for f in v] if isinstance(v, list) else flagged(v, shown.get(k))
            for k, v in declared.items()}


def SHOWN(caption, category, subcategory=None, ext=None):
    """An output's files as `snakemake --report` shows them (those ending in `ext` only, if given);
    `subcategory` may be a function of the file's name without its extension."""

    def show(f):
        if ext and not f.endswith(ext):
            return f
        stem = os.path.basename(f).rsplit(".", 1)[0]
        sub = subcategory(stem) if callable(subcategory) else subcategory
        return report(f, caption=caption, category=category, **({"subcategory": sub} if sub else {}))

    return show


def train_param(key):
    return lambda wc: PLAN.train_params(wc.method, wc.base_model, wc.seed)[key]
