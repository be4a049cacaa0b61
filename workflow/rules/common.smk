# Shared helpers: paths, the method x base model x seed grid, input functions.
import os
import re
from pathlib import Path

from clinsent.corpus.shards import shard_names
from clinsent.experiments import Grid
from clinsent.ontology.download import release_url
from clinsent.train.settings import TrainSettings

R = config["results"]
LOGS = f"{R}/logs"
BENCH = f"{R}/benchmarks"

METHODS = list(config["methods"])
BASE_MODELS = list(config["base_models"])
SEEDS = [int(s) for s in config["seeds"]]
EVAL_SETS = list(config["eval_sets"])

# The job grid: every (method, base model) a table or figure cites, or, without tables, every
# method x base model; each over the method's seeds (default: `seeds`).
GRID = Grid.from_config(config)
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

if config["selection_set"] not in config["eval_sets"]:
    raise ValueError(
        f"config: selection_set {config['selection_set']!r} is not a key of eval_sets "
        f"{EVAL_SETS}. Fix: name one of the eval sets."
    )


wildcard_constraints:
    method="|".join(map(re.escape, METHODS)) if METHODS else "x^",
    base_model="|".join(map(re.escape, BASE_MODELS)),
    seed=r"\d+",
    shard=r"\d{3}",
    eval_set="|".join(map(re.escape, EVAL_SETS)),
    plan="|".join(map(re.escape, PLANS)) if PLANS else "x^",


def method_cfg(method):
    return config["methods"][method]


def objective(method):
    return method_cfg(method)["objective"]


def train_settings(wildcards):
    """The training settings of one job: only this method's training knobs and the shared block."""
    m = {k: v for k, v in method_cfg(wildcards.method).items() if k in TrainSettings.names()}
    if m["objective"] == "none":
        # nothing is trained: keep only what changes the untrained model's embeddings
        m = {k: v for k, v in m.items() if k in ("objective", "pooling", "first_layer")}
        return {**m, "max_length": config["training"]["max_length"],
                "eval_batch_size": config["training"]["eval_batch_size"]}
    shared = {k: v for k, v in config["training"].items() if k in TrainSettings.names()}
    return {**shared, **m}


def external(paths):
    """Input files the user supplies; with placeholders_ok, missing ones are left out (dry runs)."""
    return [p for p in paths if not PLACEHOLDERS_OK or os.path.exists(p)]


def external_file(path):
    """One user-supplied input file (a string), or none when it is a placeholder of a dry run."""
    return path if not PLACEHOLDERS_OK or os.path.exists(path) else []


def local_model_input(wildcards):
    """Declare a local base-model folder as an input (hub ids and packaged models are not files here)."""
    spec = config["base_models"][wildcards.base_model]
    if spec.startswith("pkg:") or not os.path.exists(spec):
        return []
    return [spec]


def eval_set_files(name):
    entry = config["eval_sets"][name]
    return [entry["path"]] + ([entry["gold"]] if entry.get("gold") else [])


def all_eval_files(wildcards=None):
    return external([f for name in EVAL_SETS for f in eval_set_files(name)])


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
    inputs = {"eval_files": all_eval_files(), "base_model": local_model_input(wildcards)}
    if objective(wildcards.method) != "none":
        inputs["plan"] = f"{R}/batches/{GRID.plan_of[wildcards.method]}/seed{wildcards.seed}.parquet"
        inputs["sets"] = rules.sentence_sets.output.sets
        inputs["linked"] = rules.sentence_sets.output.linked
    return inputs
