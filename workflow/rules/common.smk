# Shared helpers: paths, the method x base model x seed grid, input functions.
import os
import re
import sys
from pathlib import Path

from clinsent.corpus.sentences import RESERVED, corpus_paths
from clinsent.corpus.shards import shard_names
from clinsent.data.readers import entry_paths
from clinsent.data.plan import sentence_corpus_path
from clinsent.errors import InputError
from clinsent.experiments import Grid, split_run
from clinsent.finetune.config import CROSS_ENCODER, resolve_finetunes
from clinsent.methods.config import resolve_methods
from clinsent.models.base import is_hub_id
from clinsent.offline import set_network_switches
from clinsent.ontology.download import release_url
from clinsent.registry import load_plugins
from clinsent.report.extras import check_queries
from clinsent.smk import config_error
from clinsent.tasks.config import resolve_eval_sets

R = config["results"]
LOGS = f"{R}/logs"
BENCH = f"{R}/benchmarks"

METHODS = list(config["methods"])
BASE_MODELS = list(config["base_models"])
SEEDS = [int(s) for s in config["seeds"]]
EVAL_SETS = list(config["eval_sets"])
TRAINING_DATA = list(config.get("training_data") or {})
SENTENCE_CORPORA = list(config.get("sentence_corpora") or {})
# The notes pipeline (ingest -> sentences -> NER -> sets) runs only for a config with `notes`;
# a config of plain sentence corpora (e.g. the augmentation paper's) has none.
NOTES = bool(config.get("notes"))
config.setdefault("notes", {})

# Methods and eval sets are read through their registries here, so a misspelt or foreign knob
# or an invalid combination stops a dry run before any job starts, with the key, the allowed
# keys and the closest match as the first line. `plugins` (Python files or modules) may
# register more methods and tasks; every job script imports them too.
try:
    if config["selection_set"] is not None and config["selection_set"] not in config["eval_sets"]:
        raise InputError("config: selection_set", f"{config['selection_set']!r} is not a key of eval_sets {EVAL_SETS}",
                         "name one of the eval sets, or null to keep each run's last step")
    for _name in SENTENCE_CORPORA:
        if _name in RESERVED:
            raise InputError(f"config: sentence_corpora.{_name}", "the name is taken by the notes pipeline's sets",
                             "rename the corpus")
    load_plugins(config.get("plugins"))
    METHOD_ENTRIES = resolve_methods(config)
    EVAL = resolve_eval_sets(config)
    FINETUNE = resolve_finetunes(config, EVAL)  # the fine-tuned setting (finetune.smk)
except InputError as _exc:
    config_error(_exc)
for _entry in METHOD_ENTRIES.values():
    if _entry.derived:  # steps derived from epochs: shown in every dry run
        print(_entry.derived, file=sys.stderr)

# Offline by construction: every job inherits these switches. Only a config that names a Hugging
# Face id as a model asks for a download (clinsent.offline).
HUB_MODELS = sorted({m for m in [*config["base_models"].values(),
                                 *(x for e in METHOD_ENTRIES.values() for x in e.method.extra_models())]
                     if isinstance(m, str) and is_hub_id(m)})
set_network_switches(HUB_MODELS)
if HUB_MODELS:
    print(f"models named by Hugging Face id, downloaded by the jobs that load them unless cached: "
          f"{', '.join(HUB_MODELS)} (a local folder keeps the run offline)", file=sys.stderr)


def curve_sets(method):
    """The sets a train job evaluates: its selection set (if any) and those marked curve: true."""
    selection = METHOD_ENTRIES[method].selection_set
    return ([selection] if selection else []) + [n for n, e in EVAL.items() if e.curve and n != selection]


# The job grid: every (method, base model) a table or figure cites, or, without tables, every
# method x base model; each over the method's seeds (default: `seeds`).
GRID = Grid.from_config(config, METHOD_ENTRIES)
PLANS = GRID.plans  # batch plans, shared by every method with the same corpus, strategy and size
if not NOTES:
    for _m, _plan in GRID.plan_of.items():
        if PLANS[_plan]["source"] == "notes":
            raise ValueError(f"config: methods.{_m} trains on the notes pipeline's sets (sentences: notes), and the "
                             "config has no `notes`. Fix: add a `notes` block, or set `sentences` to a key of "
                             "sentence_corpora.")
# The notes' sentence pipeline (split -> NER -> sets, the MED-SE corpus tables) runs when a method
# trains on its sets or a table shows them; a config whose notes feed only the documents stage
# (the healthcare-LM paper) leaves it, and its ontology download, out of the DAG.
NOTE_SENTENCES = NOTES and (any(p["source"] == "notes" for p in PLANS.values())
                            or any(t.get("kind") == "corpus_stats" for t in (config.get("tables") or {}).values()))
# Dry runs of a config with placeholder paths (e.g. config/paper/medse.yaml before the data is
# there): `--config placeholders_ok=true` leaves missing external inputs out of the DAG.
PLACEHOLDERS_OK = str(config.get("placeholders_ok", False)).lower() == "true"

# Corpus shards: a note goes to shard row_id mod N. The shard count is part of the path, so
# changing it never mixes shards of two layouts.
N_SHARDS = int(config["corpus"]["shards"])
SHARDS = shard_names(N_SHARDS)
SHARD_DIR = f"{R}/corpus/shards{N_SHARDS}"

_release = config["ontology"]["release"]
ONTOLOGY_DOWNLOAD = f"{_release['dir']}/efo-{_release['version']}/efo.obo"
ONTOLOGY_URL = release_url(_release["url"], _release["version"])

wildcard_constraints:
    method="|".join(map(re.escape, METHODS)) if METHODS else "x^",
    base_model="|".join(map(re.escape, BASE_MODELS)),
    seed=r"\d+",
    shard=r"\d{3}",
    eval_set="|".join(map(re.escape, EVAL_SETS)),
    plan="|".join(map(re.escape, PLANS)) if PLANS else "x^",
    source="|".join(map(re.escape, TRAINING_DATA)) if TRAINING_DATA else "x^",
    sentence_corpus="|".join(map(re.escape, SENTENCE_CORPORA)) if SENTENCE_CORPORA else "x^",
    finetune="|".join(map(re.escape, FINETUNE)) if FINETUNE else "x^",
    task="|".join(map(re.escape, config["doc_tasks"])) if config["doc_tasks"] else "x^",


def method_entry(method):
    return METHOD_ENTRIES[method]


def external(paths):
    """Input files the user supplies; with placeholders_ok, missing ones are left out (dry runs).
    Files under results/ (e.g. a doc_task's table as an eval set's path) are the DAG's own."""
    return [p for p in paths if not PLACEHOLDERS_OK or os.path.exists(p) or str(p).startswith(f"{R}/")]


def doc_task_files(name):
    """The user files an ICD-9 triage task reads besides the documents (diagnoses, mapping)."""
    entry = config["doc_tasks"][name]
    return external([p for p in (entry.get("diagnoses"), entry.get("mapping")) if p])


def external_file(path):
    """One user-supplied input file (a string), or none when it is a placeholder of a dry run."""
    return path if not PLACEHOLDERS_OK or os.path.exists(path) else []


def local_models(specs):
    """The local model folders among model specs (hub ids and packaged models are not files here)."""
    return [s for s in specs if not s.startswith("pkg:") and os.path.exists(s)]


def start_model(method, base_model, seed):
    """The model a train job starts from: the base model, or with `init_from` the trained model of
    that method (same base model and seed): an edge of the DAG, so retraining it reruns this job."""
    upstream = METHOD_ENTRIES[method].init_from
    if upstream:
        return f"{model_dir(upstream, base_model, seed)}/model"
    return config["base_models"][base_model]


def local_model_input(wildcards):
    """Declare a local base-model folder (or the upstream trained model) as an input."""
    start = start_model(wildcards.method, wildcards.base_model, wildcards.seed)
    if METHOD_ENTRIES[wildcards.method].init_from:
        return [start]
    return local_models([start])


def eval_set_files(name):
    """The input files of one eval set (its task says which)."""
    return external(EVAL[name].task.files())


def curve_eval_files(method):
    return [f for name in curve_sets(method) for f in eval_set_files(name)]


def trained_jobs():
    return GRID.jobs


def finetune_jobs():
    """(method, base model, seed, entry): each trained run of an entry's methods whose base model
    the entry's test set evaluates."""
    return [(m, b, s, f) for m, b, s in trained_jobs() for f, e in FINETUNE.items()
            if e.runs(m, b) and EVAL[e.settings.test].evaluates(b)]


def cross_encoder_jobs():
    """(base model, seed, entry): the cross-encoder baseline for every base model of the grid."""
    bases = list(dict.fromkeys(b for _, b, _ in trained_jobs()))
    return [(b, s, f) for f, e in FINETUNE.items() if e.settings.cross_encoder for b in bases
            if EVAL[e.settings.test].evaluates(b) and e.on_base(b) for s in SEEDS]


def finetune_files(name):
    s = FINETUNE[name].settings
    return list(dict.fromkeys(f for role in (s.train, s.validation, s.test) for f in eval_set_files(role)))


def finetune_params(name):
    s = FINETUNE[name].settings
    return {"settings": FINETUNE[name].params(),
            "eval_sets": {role: EVAL[getattr(s, role)].params() for role in ("train", "validation", "test")}}


def model_dir(method, base_model, seed):
    return f"{R}/models/{method}/{base_model}/seed{seed}"


def ner_pack(wildcards):
    """The user's MedCAT pack (slimmed to the kept types if asked), or the one built from the ontology."""
    if not config["ner"]["model_pack"]:
        return rules.medcat_pack.output[0]
    if config["ner"]["slim_pack"]:
        return rules.slim_pack.output.pack
    return external_file(config["ner"]["model_pack"])


def ontology_file(wildcards):
    """The local ontology file, or the pinned release downloaded by `download_ontology`."""
    return external_file(config["ontology"]["path"]) if config["ontology"]["path"] else ONTOLOGY_DOWNLOAD


def train_inputs(wildcards):
    """The curve sets, local model folders, and the training data the method declares."""
    method = method_entry(wildcards.method).method
    inputs = {
        "eval_files": curve_eval_files(wildcards.method),
        "base_model": local_model_input(wildcards),
        "extra_models": local_models(method.extra_models()),  # e.g. MED-SE's definition_model
    }
    if method.trains:
        inputs.update(method.data_need().inputs(data_paths(), int(wildcards.seed)))
    return inputs


def data_paths():
    """Where the training data of the DAG lives (the notes pipeline's sets; sentence corpora under R)."""
    if not NOTES:
        return {"results": R, "sets": "", "linked": ""}
    return {"results": R, "sets": rules.sentence_sets.output.sets, "linked": rules.sentence_sets.output.linked}


def plan_inputs(wildcards):
    """The sentences (and, for the notes' sets, the linked entities) a batch plan draws from."""
    plan = PLANS[wildcards.plan]
    paths = data_paths()
    if plan["source"] != "notes":
        return {"sets": sentence_corpus_path(R, plan["source"])}
    return {"sets": paths["sets"], "linked": paths["linked"]}


def training_data_files(wildcards):
    return external(entry_paths(config["training_data"][wildcards.source]))


# Paper tables and figures (report.smk): which runs, corpora, eval sets and methods they read.
TABLES = config.get("tables") or {}
FIGURES = config.get("figures") or {}
RUN_TABLES = [t for t, table in TABLES.items() if table.get("kind", "runs") == "runs"]


def first_seed_embeddings(table):
    """run -> the embeddings of its first seed on a retrieval_examples table's eval set."""
    out = {}
    for ref in table["runs"]:
        m, b = split_run(ref, GRID.default_base)
        out[ref] = f"{R}/embeddings/{m}/{b}/seed{GRID.seeds_of[m][0]}/{table['eval_set']}.parquet"
    return out


def tsne_embeddings(figure):
    """before/after -> the embeddings of that run's first seed on a tsne figure's eval set."""
    out = {}
    for role in ("before", "after"):
        m, b = split_run(figure[role], GRID.default_base)
        out[role] = f"{R}/embeddings/{m}/{b}/seed{GRID.seeds_of[m][0]}/{figure['eval_set']}.parquet"
    return out


TSNE = {f: {"embeddings": tsne_embeddings(fig), "eval_set": EVAL[fig["eval_set"]].params()}
        for f, fig in FIGURES.items() if fig.get("kind") == "tsne"}
RETRIEVAL = {t: first_seed_embeddings(table) for t, table in TABLES.items() if table.get("kind") == "retrieval_examples"}
for _tid in RETRIEVAL:  # queries must be texts of the eval set: checked now, not after training
    if all(os.path.exists(f) for f in EVAL[TABLES[_tid]["eval_set"]].task.files()):
        check_queries(_tid, TABLES[_tid], EVAL[TABLES[_tid]["eval_set"]].task.texts())
# the document-length table and figure (the healthcare-LM paper's Table 12, Figure 7) read the documents stage's statistics
DOC_LENGTHS = any(x.get("kind") == "doc_lengths" for x in [*TABLES.values(), *FIGURES.values()])
STATS_CORPORA = sorted({c for t in TABLES.values() if t.get("kind") == "corpus_stats" for c in t["corpora"]})
STATS_SETS = sorted({e for t in TABLES.values() if t.get("kind") == "eval_stats" for e in t["eval_sets"]})
EXAMPLE_METHODS = sorted({r["method"] for t in TABLES.values() if t.get("kind") == "augmentations" for r in t["rows"]})
