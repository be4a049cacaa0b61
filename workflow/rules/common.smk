# Shared helpers: paths, the method x base model x seed grid, input functions.
import os
import re
from pathlib import Path

from clinsent.corpus.shards import shard_names
from clinsent.data.readers import entry_paths
from clinsent.experiments import Grid
from clinsent.methods.config import resolve_methods
from clinsent.ontology.download import release_url
from clinsent.registry import load_plugins
from clinsent.tasks.config import resolve_eval_sets

R = config["results"]
LOGS = f"{R}/logs"
BENCH = f"{R}/benchmarks"

METHODS = list(config["methods"])
BASE_MODELS = list(config["base_models"])
SEEDS = [int(s) for s in config["seeds"]]
EVAL_SETS = list(config["eval_sets"])
TRAINING_DATA = list(config.get("training_data") or {})

if config["selection_set"] not in config["eval_sets"]:
    raise ValueError(
        f"config: selection_set {config['selection_set']!r} is not a key of eval_sets "
        f"{EVAL_SETS}. Fix: name one of the eval sets."
    )

# Methods and eval sets are read through their registries here, so a misspelt or foreign knob
# or an invalid combination stops a dry run before any job starts. `plugins` (Python files or
# modules) may register more methods and tasks; every job script imports them too.
load_plugins(config.get("plugins"))
METHOD_ENTRIES = resolve_methods(config)
EVAL = resolve_eval_sets(config)
# Training depends only on the sets it evaluates: the selection set and those marked curve: true.
CURVE_SETS = [config["selection_set"]] + [
    n for n, e in EVAL.items() if e.curve and n != config["selection_set"]
]

# The job grid: every (method, base model) a table or figure cites, or, without tables, every
# method x base model; each over the method's seeds (default: `seeds`).
GRID = Grid.from_config(config, METHOD_ENTRIES)
PLANS = GRID.plans  # batch plans, shared by every method with the same corpus, strategy and size
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


def method_entry(method):
    return METHOD_ENTRIES[method]


def external(paths):
    """Input files the user supplies; with placeholders_ok, missing ones are left out (dry runs)."""
    return [p for p in paths if not PLACEHOLDERS_OK or os.path.exists(p)]


def external_file(path):
    """One user-supplied input file (a string), or none when it is a placeholder of a dry run."""
    return path if not PLACEHOLDERS_OK or os.path.exists(path) else []


def local_models(specs):
    """The local model folders among model specs (hub ids and packaged models are not files here)."""
    return [s for s in specs if not s.startswith("pkg:") and os.path.exists(s)]


def local_model_input(wildcards):
    """Declare a local base-model folder as an input."""
    return local_models([config["base_models"][wildcards.base_model]])


def eval_set_files(name):
    """The input files of one eval set (its task says which)."""
    return external(EVAL[name].task.files())


def curve_eval_files(wildcards=None):
    return [f for name in CURVE_SETS for f in eval_set_files(name)]


def trained_jobs():
    return GRID.jobs


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
        "eval_files": curve_eval_files(),
        "base_model": local_model_input(wildcards),
        "extra_models": local_models(method.extra_models()),  # e.g. MED-SE's definition_model
    }
    if method.trains:
        paths = {"results": R, "sets": rules.sentence_sets.output.sets, "linked": rules.sentence_sets.output.linked}
        inputs.update(method.data_need().inputs(paths, int(wildcards.seed)))
    return inputs


def training_data_files(wildcards):
    return external(entry_paths(config["training_data"][wildcards.source]))
