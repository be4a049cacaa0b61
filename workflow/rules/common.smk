# Shared helpers: paths, the method x base model x seed grid, input functions.
import os
import re
from pathlib import Path

from clinsent.corpus.shards import shard_names
from clinsent.ontology.download import release_url

R = config["results"]
LOGS = f"{R}/logs"
BENCH = f"{R}/benchmarks"

METHODS = list(config["methods"])
BASE_MODELS = list(config["base_models"])
SEEDS = [int(s) for s in config["seeds"]]
EVAL_SETS = list(config["eval_sets"])

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


def method_cfg(method):
    return config["methods"][method]


def objective(method):
    return method_cfg(method)["objective"]


def train_settings(wildcards):
    """The training settings of one job: only this method's knobs and the shared training block."""
    m = dict(method_cfg(wildcards.method))
    if m["objective"] == "none":
        # nothing is trained: keep only what changes the untrained model's embeddings
        m = {k: v for k, v in m.items() if k in ("objective", "pooling", "first_layer")}
        return {**m, "max_length": config["training"]["max_length"],
                "eval_batch_size": config["training"]["eval_batch_size"]}
    shared = {k: v for k, v in config["training"].items() if k != "threads"}  # threads: a resource, not a setting
    return {**shared, **m}


def plan_settings(wildcards):
    m = method_cfg(wildcards.method)
    t = config["training"]
    return {
        "corpus": m["corpus"],
        "duplicates": m["duplicates"],
        "batch_size": m.get("batch_size", t["batch_size"]),
        "steps": m.get("steps", t["steps"]),
    }


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
    return [f for name in EVAL_SETS for f in eval_set_files(name)]


def trained_jobs():
    return [(m, b, s) for m in METHODS for b in BASE_MODELS for s in SEEDS]


def model_dir(method, base_model, seed):
    return f"{R}/models/{method}/{base_model}/seed{seed}"


def ner_pack(wildcards):
    """The user's MedCAT pack (slimmed to the kept types if asked), or the one built from the ontology."""
    if not config["ner"]["model_pack"]:
        return rules.medcat_pack.output[0]
    if config["ner"]["slim_pack"]:
        return rules.slim_pack.output.pack
    return config["ner"]["model_pack"]


def ontology_file(wildcards):
    """The local ontology file, or the pinned release downloaded by `download_ontology`."""
    return config["ontology"]["path"] or ONTOLOGY_DOWNLOAD


def train_inputs(wildcards):
    inputs = {"eval_files": all_eval_files(), "base_model": local_model_input(wildcards)}
    if objective(wildcards.method) != "none":
        inputs["plan"] = f"{R}/batches/{wildcards.method}/seed{wildcards.seed}.parquet"
        inputs["sets"] = rules.sentence_sets.output.sets
        inputs["linked"] = rules.sentence_sets.output.linked
    return inputs
