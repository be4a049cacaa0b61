# The plan of the run (clinsent.plan: the grid, every job's inputs and params, the report's
# inputs, tested without Snakemake); every rule's inputs and outputs as the plan declares them
# (clinsent.plan.rules: IN and OUT below) and the thin params functions the rules call.
import os
import sys

from clinsent import paths as P
from clinsent.errors import InputError
from clinsent.gpu.pool import export_pool, resolve_pool
from clinsent.gpu.slots import LOCK_DIR_ENV, check_lock_dir
from clinsent.safety.places import check_writable
from clinsent.models.base import HUB_DIR_ENV
from clinsent.workflow.offline import set_network_switches
from clinsent.plan.checks import build_plan
from clinsent.plan.jobs import job_counts
from clinsent.plan.rules import RULES as DECLARED, Folder, Raw, Scratch
from clinsent.workflow.staleness import record_input_keys
from clinsent.config.settings import to_params
from clinsent.workflow.smk import Untracked, config_error

# A misspelt or foreign knob, an invalid combination or a bad reference stops a dry run before
# any job starts, with the key, the allowed keys and the closest match as the first line.
try:  # the main process (a run, a dry run) reads every input's first block and the eval sets; a job does not
    PLAN = build_plan(config, read_inputs=workflow.is_main_process)
except (InputError, ValueError) as _exc:
    config_error(_exc)
# The typed config (clinsent.config.sections): every rule below reads its settings here, never the
# mapping Snakemake holds; an entry a job reads whole goes into its params through to_params.
C = PLAN.run.parts
try:
    check_writable(PLAN.run.results)  # a results folder that cannot be written stops the dry run, not a job
except InputError as _exc:
    config_error(_exc)
# Stale by content (clinsent.workflow.staleness): the main process of a run or dry run brings each raw
# input's key file up to date (hashing only an input whose stat changed) and says which inputs changed;
# the jobs declare a raw input ancient(), beside its key file, so its content, not its clock, reruns them.
if workflow.is_main_process:
    try:
        record_input_keys(PLAN, lambda line: print(line, file=sys.stderr))
    except (InputError, OSError) as _exc:  # an input that cannot be read, a key that cannot be written
        config_error(_exc)
for _line in PLAN.run.derived:  # steps derived from epochs: shown in every dry run
    print(_line, file=sys.stderr)

# Offline by construction: every job inherits these switches, whatever the config. A model named
# by a Hugging Face id is fetched by the local rule download_model (workflow/rules/downloads.smk),
# the one job that turns the network on for itself; every job loads it from hub_dir.
set_network_switches(())
os.environ[HUB_DIR_ENV] = os.path.abspath(PLAN.files.hub_dir)
if PLAN.run.hub_models:
    print(f"models named by Hugging Face id, fetched by the local rule download_model into {PLAN.files.hub_dir}/ "
          f"unless already there: {', '.join(PLAN.run.hub_models)} (a local folder needs no download)", file=sys.stderr)

# One GPU per model job on this machine (clinsent.gpu.pool, clinsent.gpu.slots): the pool goes to every job in the
# environment, not in params (it changes no output). embed counts against `gpu` only where it
# can use one, so a CPU-only run keeps its parallelism.
try:
    GPU_POOL = resolve_pool(C.gpus)
    if GPU_POOL or os.environ.get(LOCK_DIR_ENV):  # the jobs' lock folder: outside results, writable
        check_lock_dir(PLAN.run.results)
except InputError as _exc:
    config_error(_exc)
export_pool(GPU_POOL, explicit=C.gpus is not None)
EMBED_GPU = 1 if GPU_POOL and C.embed_device != "cpu" else 0

R = PLAN.run.results
T = PLAN.run.tree  # every rule's input, output, log and benchmark pattern (clinsent.paths)
NOTE_SENTENCES = PLAN.run.note_sentences
NOTE_ENTITIES = PLAN.run.note_entities  # ontology, pack, NER, S_ent / S_none and their statistics
TABLES, FIGURES = PLAN.run.tables, PLAN.run.figures

wildcard_constraints:
    **PLAN.run.wildcard_constraints(),


def IN(rule):
    """A rule's inputs as the plan declares them (clinsent.plan.rules), for each job's wildcards: a
    raw input as ancient(), its key file beside it (clinsent.workflow.staleness)."""
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
