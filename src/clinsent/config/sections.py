"""Every key of the config, declared once: its type, default, bounds and one line of meaning.

Each section is a frozen settings dataclass (:func:`clinsent.config.declare.knob`, the machinery
the methods' and tasks' settings use). From these declarations come ``config/schema.yaml`` (what
Snakemake's ``validate`` reads at the door, defaults included: :mod:`clinsent.generate.schema`),
the key tables of ``config/README.md`` (:mod:`clinsent.generate.reference`) and the typed config
every layer below the door receives (:class:`RunConfig`). An entry whose other keys belong to a registry (a
method's knobs, an eval set's task keys, a table's kind keys) is ``OPEN``: the schema lets them
through, the typed entry holds its declared keys typed and the others in one read-only
:class:`~clinsent.config.declare.Open` field, and the registry types and checks those when the
config is read (a plugin's registry is imported only once the config names it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from clinsent.config.declare import SEED_MAX, Open, build, knob


@dataclass(frozen=True)
class ModelEntry:
    """``models.<name>``: a model the benchmark scores as it is (a string is its ``model``)."""

    model: str | None = knob(
        None, "a Hugging Face id, a local folder or pkg:<package>/<folder> (or give run)", null=False, unfilled=True
    )
    run: str | None = knob(
        None, "method@base_model: the model a paper config trained (with results and seed)", null=False, unfilled=True
    )
    results: str | None = knob(None, "with run: that paper config's results folder", null=False, unfilled=True)
    seed: int = knob(0, "with run: which seed's model", minimum=0, maximum=SEED_MAX)
    pooling: str = knob(
        "model", "model (the model's own sentence-transformers pooling) or one of ours (methods' pooling knob)"
    )
    label: str | None = knob(None, "its row label (default the name)", null=False, unfilled=True)
    paper: dict[str, str | float | None] | None = knob(
        None,
        "eval set -> the published figure for this model, shown beside ours",
        null=False,
        unfilled=True,
        additionalProperties={"type": ["string", "number", "null"]},
    )


@dataclass(frozen=True)
class Benchmark:
    """``benchmark``: the benchmark's tasks."""

    tasks: list[str] | None = knob(
        None,
        "the tasks (eval sets or finetune entries), in order, of every table and figure citing "
        "the models that leaves out eval_sets (the leaderboard's columns); default every "
        "evaluated eval set",
        null=False,
        unfilled=True,
    )


@dataclass(frozen=True)
class Notes:
    """the notes pipeline's input; a config without it (plain sentence corpora only, e.g. the
    augmentation paper's) runs no corpus, NER or ontology step
    """

    path: str | list[str] = knob(
        None,
        "the notes: MIMIC-III `NOTEEVENTS.csv` or `.csv.gz`, a folder of `.txt` notes, or a "
        "parquet file (see `notes.format`)",
        required=True,
        minItems=1,
    )
    format: str = knob(
        "noteevents_csv",
        "`noteevents_csv` (ROW_ID, …, CATEGORY, …, ISERROR, TEXT; quoted multi-line TEXT), "
        "`txt_dir` (one note per `*.txt`, searched recursively; row ids 1, 2, … in sorted path "
        "order, the relative path is the note id), `parquet` (an id and a text column; integer "
        "ids are the row ids, other ids are numbered in file order)",
    )
    categories: list[str] | None = knob(
        ["Discharge summary"], "CATEGORY values kept (`noteevents_csv` only; `null` keeps all)"
    )
    drop_errors: bool = knob(True, "drop notes with ISERROR=1 (`noteevents_csv` only)")
    id_column: str = knob("id", "`parquet` only: the note id column")
    text_column: str = knob("text", "`parquet` only: the note text column")
    category_column: str | None = knob(
        None,
        "`parquet` only: the note-category column (note-category pre-training and the `category` "
        "document task need one; `noteevents_csv` has CATEGORY)",
        unfilled=True,
    )
    block_mb: int = knob(
        1,
        "the CSV is read in blocks of this many MB; memory is bounded by a few blocks (pyarrow "
        "reads ahead), not by the file. It must exceed the largest note (MIMIC-III notes are far "
        "smaller; a bigger one stops with an error naming this key)",
        minimum=1,
    )


@dataclass(frozen=True)
class Documents:
    """``documents``: whole notes as documents, split by patient (the healthcare-LM paper)."""

    max_documents: int | None = knob(
        None,
        "the documents stage (the healthcare-LM paper): whole notes of the ingested shards, "
        "whitespace-collapsed, split by patient into `documents/pretrain.parquet` and "
        "`documents/downstream.parquet`; at most this many pre-training documents, drawn with "
        "`documents.seed` (the paper: 250,000; `null`: all). Runs when a document method or task "
        "asks for it. The notes' sentence pipeline (split, NER, sets, ontology) runs only when a "
        "method trains on its sets or a `corpus_stats` table shows them",
        minimum=1,
    )
    downstream_share: float = knob(
        0.2,
        "share of patients (a seeded hash of SUBJECT_ID; a note without one is its own patient) "
        "held out for the downstream tasks: no patient is in both partitions",
        minimum=0,
        maximum=1,
    )
    seed: int = knob(0, "seed of the partition and the sample", minimum=0, maximum=SEED_MAX)
    min_words: int = knob(
        1,
        "notes with fewer whitespace tokens are dropped (counted in `documents/stats.json`, which"
        " also holds the length histogram and the share at or above each of 16 … 2048 tokens: the"
        " paper's Table 12 and Figure 7)",
        minimum=1,
    )


@dataclass(frozen=True)
class DocTaskEntry:
    """``doc_tasks.<name>``: a labelled document task."""

    label: Literal["category", "icd9_triage"] = knob(
        None,
        "`category` (the note category task, M-Cat: NOTEEVENTS' CATEGORY) or `icd9_triage` "
        "(M-Tri: each admission's first discharge summary labelled with the destination team of "
        "its primary diagnosis, DIAGNOSES_ICD SEQ_NUM 1, through `mapping`; V/E codes and "
        "unmapped categories are dropped and counted)",
        required=True,
    )
    train_per_class: int = knob(
        200,
        "documents per class in each split, drawn with `seed`; patients are split first (share "
        "test / (train + test)), so none is on both sides. A class with fewer keeps what it has "
        "(`short_classes` in the report); one left with no train or no test document is an error "
        "naming it; a `per_class` asked by an eval set or fine-tune entry above a class's "
        "training documents stops this job, before any scoring",
        minimum=1,
    )
    test_per_class: int = knob(
        500,
        "documents per class in each split, drawn with `seed`; patients are split first (share "
        "test / (train + test)), so none is on both sides. A class with fewer keeps what it has "
        "(`short_classes` in the report); one left with no train or no test document is an error "
        "naming it; a `per_class` asked by an eval set or fine-tune entry above a class's "
        "training documents stops this job, before any scoring",
        minimum=1,
    )
    seed: int = knob(0, "seed of the draw", minimum=0, maximum=SEED_MAX)
    categories: list[str] | None = knob(None, "`category`: the classes kept (`null`: all)")
    diagnoses: str | None = knob(None, "`icd9_triage`: MIMIC-III's `DIAGNOSES_ICD.csv(.gz)`")
    mapping: str | None = knob(
        None,
        "`icd9_triage`: the team → ICD-9 ranges file (`config/icd9_triage.yaml`: the paper's "
        "seven teams; which chapters go where is our choice, marked OPEN)",
    )
    note_category: str = knob("Discharge summary", "`icd9_triage`: the notes labelled")


@dataclass(frozen=True)
class CorpusMemory:
    """``corpus.mem_mb``: the memory each corpus job declares."""

    ingest: int = knob(
        1000,
        "the `mem_mb` each job declares (for schedulers; `ner` should cover the MedCAT pack's resident size)",
        minimum=100,
    )
    split: int = knob(
        1500,
        "the `mem_mb` each job declares (for schedulers; `ner` should cover the MedCAT pack's resident size)",
        minimum=100,
    )
    ner: int = knob(
        3000,
        "the `mem_mb` each job declares (for schedulers; `ner` should cover the MedCAT pack's resident size)",
        minimum=100,
    )
    gather: int = knob(
        4000,
        "the `mem_mb` each job declares (for schedulers; `ner` should cover the MedCAT pack's resident size)",
        minimum=100,
    )


@dataclass(frozen=True)
class Corpus:
    """``corpus``: the notes' sentence corpus."""

    min_words: int = knob(
        10, "sentences with fewer whitespace-separated words are left out of S_all (MED-SE: 10)", minimum=1
    )
    shards: int = knob(
        1,
        "notes are scattered into this many shards (a note goes to shard `row_id mod N`); "
        "splitting and NER run one single-threaded job per shard. The shard count is part of the "
        "output paths (`corpus/shards{N}/`)",
        minimum=1,
        maximum=999,
    )
    mem_mb: CorpusMemory = knob(CorpusMemory(), "the `mem_mb` each corpus job declares to a scheduler")


@dataclass(frozen=True)
class OntologyRelease:
    """``ontology.release``: the EFO release to download."""

    version: str = knob("3.92.0", "the EFO release to download when `ontology.path` is null")
    url: str = knob(
        "https://github.com/EBISPOT/efo/releases/download/v{version}/efo.obo",
        "where from (`{version}` is filled in; `file://` URLs work). No credentials here: a URL with a user "
        "name, a password or a query string is refused (it would reach the job's params and the logs); a "
        "server that asks for a login reads it from a `~/.netrc` entry for its host, a presigned link goes "
        "in the variable `url_env` names",
    )
    url_env: str | None = knob(
        None,
        "the name of an environment variable holding the whole URL (a presigned link with its token), "
        "read by the download job when it runs: the URL never enters the config, the job's params or a "
        "log line. Set, it replaces `url`",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$",
    )
    sha256: str | None = knob(
        None,
        "the pinned checksum; a download that does not match fails. `null` accepts the file and "
        "logs its sha256 for you to pin",
        pattern="^[0-9a-fA-F]{64}$",
    )
    dir: str = knob(
        "resources/downloads",
        "where downloads are kept (`efo-{version}/efo.obo`; outside `results/`, so `make clean` keeps them)",
    )


@dataclass(frozen=True)
class Ontology:
    """``ontology``: where the entities' definitions come from."""

    path: str | None = knob(
        None, "a local ontology in OBO format (EFO's `efo.obo`); `null` downloads `ontology.release`"
    )
    release: OntologyRelease = knob(OntologyRelease(), "the EFO release downloaded when `ontology.path` is null")
    disease_root: str = knob("EFO:0000408", "terms below it are diseases (UMLS type T047 in the built MedCAT pack)")
    mental_root: str = knob("EFO:0000677", "terms below it are mental or behavioural disorders (T048)")


@dataclass(frozen=True)
class Ner:
    """``ner``: MedCAT's pack and the UMLS types kept."""

    model_pack: str | None = knob(
        None,
        "a MedCAT v2 model pack (folder or .zip); `null` builds one from the ontology. Loaded "
        "offline: v1 packs are refused (convert once with `python -m "
        "medcat.utils.legacy.legacy_converter`), a missing spaCy model is an error, not a "
        "download",
    )
    slim_pack: bool = knob(
        False,
        "with `ner.model_pack`: write a copy restricted to `ner.type_ids` once "
        "(`results/ner/slim_pack`) and load that in every shard job",
    )
    type_ids: list[str] = knob(
        ["T047", "T048"],
        "UMLS semantic types kept from the pack",
        items={"type": "string", "pattern": "^T\\d{3}$"},
        minItems=1,
    )
    branch_types: dict[str, str] = knob(
        {"disease": "T047", "mental": "T048"},
        "for the pack built from the ontology: the UMLS type id given to each ontology branch",
        additionalProperties={"type": "string", "pattern": "^T\\d{3}$"},
    )


@dataclass(frozen=True)
class Linking:
    """``linking``: how an entity finds its ontology term."""

    by: list[Literal["cui", "ontology_id", "name"]] = knob(
        ["cui", "ontology_id", "name"],
        "how an entity finds its ontology term (and so its definition), steps tried in this "
        "order: by UMLS CUI, by ontology id (concepts whose id is the ontology id), by exact "
        "normalised name or EXACT synonym",
        items={"type": "string", "enum": ["cui", "ontology_id", "name"]},
        minItems=1,
        uniqueItems=True,
    )


@dataclass(frozen=True)
class Evaluation:
    """max_length (tokens per text when embedding any eval set: auto, the base model's own length,
    or a number; every row alike), and shared values for the keys of eval_sets entries (e.g.
    positive_share), checked against the task registry
    """

    OPEN = "a shared value for that key of every eval set whose task has it (e.g. `positive_share`)"
    max_length: Any = knob(
        "auto",
        "tokens per text when any eval set is embedded, every row alike: `auto` is the base "
        "model's own length (its `sentence_bert_config.json`'s `max_seq_length`, else its "
        "tokenizer's `model_max_length`, at most its positions: the packaged MiniLM 256); a "
        "number sets it, capped at the model's positions (BioSimCSE: 128; the healthcare-LM "
        "paper: 512). The trained and untrained models are saved with it, so every later `encode`"
        " reads as many tokens; the curve sets are scored at it. `training.max_length` is what a "
        "training batch reads (clinsent.evaluation.length)",
        json={"oneOf": [{"type": "integer", "minimum": 8}, {"const": "auto"}]},
    )
    shared: Open = knob(Open(), "the other keys: shared values of the eval sets' task keys", rest=True)


@dataclass(frozen=True)
class Batching:
    """``batching``: the duplicate-entity statistics of the batch plans."""

    duplicate_sim_batches: int = knob(
        1000000,
        "naive batches simulated on S_ent for the duplicate-entity statistics (MED-SE: 1,000,000;"
        " vectorised, seconds)",
        minimum=0,
    )
    duplicate_sim_batch_size: int = knob(32, "their size", minimum=1)


@dataclass(frozen=True)
class EvalSetConfig:
    """task (default sts), curve, base_models, evaluate, embed_from and text_shareable here; every
    other key is checked against the task's settings (clinsent.tasks) when the config is read
    """

    OPEN = "the task's own keys, checked against its settings when the config is read (Evaluation tasks, below)"
    task: str = knob(
        "sts",
        "the evaluation task (`sts`, `rqe`, `probe`, `retrieval`, `doc_classification`, "
        "`token_classification`, the analyses `class_similarity`, `class_alignment`, "
        "`similarity_graph`, `kmeans_clusters`, or one a plugin registers); its own keys follow",
    )
    curve: bool = knob(
        False,
        "also evaluate this set every `eval_every` steps during training (the curve figure shows "
        "it). Training depends only on the selection set and the curve sets: adding or changing "
        "another set reruns only its embed and evaluate jobs",
    )
    base_models: list[str] | None = knob(
        None,
        "evaluate only runs of these base models (e.g. Chinese probes only for the Chinese "
        "model): the embed and evaluate jobs of other runs are not planned",
        unfilled=True,
        minItems=1,
    )
    evaluate: bool = knob(
        True,
        "`false`: no zero-shot embed and evaluate jobs for this set (a set that only trains or "
        "picks an epoch, e.g. a fine-tune train or validation split)",
    )
    embed_from: str | None = knob(
        None,
        "score the embeddings of this eval set instead of embedding again: its texts must include"
        " this set's (the healthcare-LM analyses and few-shot sets of one document task embed it "
        "once). It may not itself have `embed_from`",
        null=False,
        unfilled=True,
    )
    optional: bool = knob(
        False,
        "when a file it names is missing, the set leaves the config (and the DAG) with one "
        "warning line instead of stopping the run: the benchmark's credentialed tasks "
        "(clinsent.door.expansion)",
    )
    text_shareable: bool = knob(
        False,
        "its texts are public (BIOSSES, ChineseBLUE) and a shared table may show them (a "
        "`retrieval_examples` table may cite only such a set). Leave it false for credentialed "
        "data (MedNLI, ClinicalSTS, RadNLI); a set read from the notes or from a results folder "
        "made from them (`documents`, `doc_tasks`, `sets`, `corpus`, `ner`) can never be shown, "
        "and marking it is refused when the config is read",
    )
    options: Open = knob(Open(), "the other keys: the task's own, typed by its settings", rest=True)


@dataclass(frozen=True)
class TrainingDataEntry:
    """``training_data.<name>``: NLI data a supervised objective trains on."""

    format: str = knob(
        None,
        "a training-data reader: `nli_jsonl` (SNLI / MultiNLI / MedNLI jsonl: `sentence1`, "
        "`sentence2`, `gold_label`; `-` skipped and counted) or `nli_tsv` (header `premise "
        "hypothesis label`). Both build (anchor, entailment, contradiction) triplets and count "
        "the premises dropped for lacking either",
        required=True,
    )
    path: str | list[str] = knob(None, "one file, or a list of files read one after another", required=True)


@dataclass(frozen=True)
class SentenceCorpusEntry:
    """``sentence_corpora.<name>``: a plain sentence corpus (no splitting, no NER)."""

    path: Any = knob(
        None,
        "a plain sentence corpus (no splitting, no NER; any language, UTF-8): a text file with "
        "one sentence per line, a parquet file, or a list of files read one after another. "
        "Methods train on it with `sentences: <name>`",
        required=True,
        json={"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
    )
    format: str | None = knob(None, "`text` or `parquet`")
    column: str = knob("text", "`parquet`: the sentence column")
    sample: int | None = knob(
        None,
        "draw this many sentences without replacement (the augmentation paper: 1,000,000 PubMed "
        "sentences); more than the corpus holds is an error",
        minimum=1,
    )
    sample_seed: int = knob(0, "the seed of that draw", minimum=0, maximum=SEED_MAX)
    split: bool | None = knob(
        None,
        "`true`: each line (or parquet cell) is a document — a PubMed abstract — split into "
        "sentences by the notes pipeline's ScispaCy splitter (rule tokenizer + pysbd, without the"
        " MIMIC normalisation) before sampling; the stats count documents and sentences per file."
        " `epochs` then needs `sample` (the sentence count is known only after splitting)",
        null=False,
        unfilled=True,
    )


@dataclass(frozen=True)
class Training:
    """shared values for the knobs of every method that has them (steps, batch_size, max_length,
    learning_rate, temperature, ...; their defaults live in clinsent.methods); checked against
    the method registry when the config is read. threads, processes and nodes are how each train
    job runs (its threads, its processes per node, its nodes), not what it trains.
    """

    OPEN = (
        "a shared value for that knob of every method that has it and does not set it itself (e.g. `steps`, "
        "`batch_size`, `max_length`, `learning_rate`, `temperature`, `grad_clip`); an unknown key is an error"
    )
    threads: int = knob(
        2,
        "CPU threads of each training job (the rule's `threads`: capped at `--cores` locally, "
        "`--cpus-per-task` on Slurm; torch uses exactly this many, split between its processes). Not a "
        "training setting: changing it reruns nothing",
        minimum=1,
    )
    processes: int = knob(
        1,
        "processes of each training job on each node, one per GPU (`gpu: N` of the train rule), started by "
        "torch's own launcher (torchrun) and wrapped in DDP: each embeds its share of every batch, the "
        "vectors are gathered and the loss and gradient are one device's with the same global batch "
        "(batch_size must divide evenly). Without a GPU the processes share the CPU (gloo). Not a training "
        "setting: changing it reruns nothing; what ran is recorded (selection.json, the card, the table's note)",
        minimum=1,
    )
    nodes: int = knob(
        1,
        "nodes of each training job (Slurm: `srun` starts torchrun on each, c10d rendezvous; the rule asks "
        "for `gres: gpu:<processes>` per node). Not a training setting: changing it reruns nothing",
        minimum=1,
    )
    shared: Open = knob(Open(), "the other keys: shared values of the methods' knobs", rest=True)


@dataclass(frozen=True)
class MethodConfig:
    """objective, seeds, postprocess, whitening_dims, selection_set and init_from here; every other
    key is a knob of the objective, checked against its settings (clinsent.methods) when the
    config is read
    """

    OPEN = "a knob of the objective, checked against its settings when the config is read (Method knobs, below)"
    objective: str = knob(
        None,
        "`none` (the untrained model), `simcse`, `medse`, `ct` (Contrastive Tension), "
        "`sup_simcse`, `mnr` (multiple-negatives ranking, the clinical NLI study), `mixcse` "
        "(MixCSE and instance weighting), `mlm` (masked language modelling on documents), "
        "`declutr` (DeCLUTR), `note_category` (MLM with a note-category head), or one a plugin "
        "registers",
        required=True,
    )
    seeds: list[int] | None = knob(
        None,
        "this method's seeds (e.g. `[0]` for deterministic untrained baselines)",
        null=False,
        unfilled=True,
        items={"type": "integer", "minimum": 0, "maximum": SEED_MAX},
        minItems=1,
    )
    postprocess: Literal["none", "whitening", "flow"] = knob(
        "none",
        "`whitening` or `flow` (BERT-flow), fitted on each eval set's own sentences at evaluation"
        " (not a training setting: changing it reruns only evaluate jobs)",
    )
    whitening_dims: int | None = knob(
        None,
        "`whitening`: keep at most this many whitened dimensions (BERT-whitening's k); `null`: "
        "every direction with variance. With fewer eval sentences than dimensions, the full "
        "whitening maps them to mutually orthogonal vectors (every cosine near 0), so set k below"
        " the sentence count",
        minimum=1,
    )
    selection_set: str | None = knob(
        None,
        "this method's selection set (e.g. `null` for the Chinese runs of the augmentation paper:"
        " no Chinese STS dev set)",
        unfilled=True,
    )
    init_from: str | None = knob(
        None,
        "sequential training: start from the trained model of this method (same base model and "
        "seed) instead of the base model, e.g. MedNLI after SNLI+MultiNLI. The upstream train "
        "job's model is this job's input, so retraining it reruns this one; an untrained or "
        "unknown method, or a cycle, stops the dry run",
        unfilled=True,
    )
    knobs: Open = knob(Open(), "the other keys: the objective's knobs, typed by its settings", rest=True)


@dataclass(frozen=True)
class FinetuneConfig:
    """``finetune.<name>``: every key is the fine-tuned setting's (train, validation, test,
    methods, epochs, ...), typed and checked by clinsent.finetune.config.FinetuneSettings when
    the config is read, with messages of its own"""

    OPEN = "a key of the fine-tuned setting (clinsent.finetune.config), checked when the config is read"
    options: Open = knob(Open(), "every key, typed by the fine-tuned setting", rest=True)


@dataclass(frozen=True)
class TableConfig:
    """``tables.<id>``: the keys every table has (its kind's own follow)."""

    OPEN = "the kind's own keys, checked when the config is read (Table and figure kinds, below)"
    kind: str = knob(
        "runs", "the table's kind: which keys it takes and how it is drawn (Table and figure kinds, below)"
    )
    caption: str = knob(None, "its caption in the report (and the title of its `.tex` table)", required=True)
    options: Open = knob(Open(), "the other keys: the kind's own, typed by it", rest=True)


@dataclass(frozen=True)
class FigureConfig:
    """``figures.<id>``: the keys every figure has (its kind's own follow)."""

    OPEN = "the kind's own keys, checked when the config is read (Table and figure kinds, below)"
    kind: str = knob(
        "alignment_uniformity",
        "the figure's kind: which keys it takes and how it is drawn (Table and figure kinds, below)",
    )
    caption: str = knob(None, "its caption in the report (and the title of its `.tex` table)", required=True)
    options: Open = knob(Open(), "the other keys: the kind's own, typed by it", rest=True)


@dataclass(frozen=True)
class Progress:
    """progress lines in the rules' logs (not params: changing them reruns nothing)"""

    seconds: float = knob(15, "split and NER: at most one line per this many seconds", exclusiveMinimum=0)
    train_seconds: float = knob(
        15, "training: a line after the first step, then at least one per this many seconds (0: none)", minimum=0
    )
    heartbeat_seconds: float = knob(
        15,
        "every job: when it printed no line for this many seconds, a line saying it is still working "
        "(clinsent.process.heartbeat; 0: none)",
        minimum=0,
    )
    train_steps: int = knob(0, "training: also a line every this many steps (0: none)", minimum=0)


@dataclass(frozen=True)
class ModelCard:
    """what the trained models' cards (README.md) say of their data's terms
    (clinsent.release.card). The release copies follow it; the train job's card takes it as it
    stands when the model trains (not a training param)
    """

    data_use: dict[str, Literal["credentialed", "institutional", "open", "demo"]] = knob(
        {},
        "per training source (notes, or a key of training_data or sentence_corpora): credentialed"
        " (the notes' default: MIMIC-III, MedNLI, n2c2), institutional, open, demo; any other "
        "source is unstated",
        additionalProperties={"type": "string", "enum": ["credentialed", "institutional", "open", "demo"]},
    )
    licence: str | None = knob(None, "the weights' licence id in the card's metadata (null: other)")


@dataclass(frozen=True)
class CorpusEmbeddingEntry:
    """``corpus_embeddings.<name>``: a corpus embedded with a trained run (``EmbedOptions``
    of :mod:`clinsent.embedding.corpus` takes its embedding keys' defaults from here)."""

    run: str = knob(
        None, "method@base_model: a trained run of this config (a method and a base model key)", required=True
    )
    seed: int | None = knob(None, "which seed's model (null: the first of seeds)", minimum=0, maximum=SEED_MAX)
    input: str = knob(
        None,
        "notes (the notes' split sentences, S_all; written owner-only) or a file: text (one per "
        "line), .csv, .tsv, .jsonl or .parquet",
        required=True,
    )
    column: str | None = knob(None, "the texts' column or field (csv, tsv, jsonl, parquet)")
    id_column: str | None = knob(None, "the ids' column or field (default: row numbers from 0)")
    keep_text: bool = knob(False, "write the texts beside their vectors")
    batch_size: int = knob(64, "texts per batch of the model", minimum=1)
    chunk: int = knob(10000, "texts read and written at a time (memory stays flat)", minimum=1)
    shards: int = knob(
        1,
        "contiguous parts of the input, one job each (a GPU slot, a cluster job), then one cheap "
        "job joins them; each part resumes after its last finished chunk",
        minimum=1,
        maximum=999,
    )
    backend: str = knob(
        "torch",
        "torch (the model as saved; a GPU where the pool has one); for servers without a GPU, onnx"
        " (ONNX Runtime on the CPU: clinsent.embedding.onnx_backend) or openvino (OpenVINO's "
        "runtime on the same export, the fastest on CPUs: clinsent.embedding.openvino_backend)",
    )
    quantize: str = knob(
        "none",
        "none; int8 (with backend onnx: the MatMul weights in int8, per channel); bf16 (with "
        "backend openvino: bf16 inference where the CPU has bf16 instructions, f32 elsewhere)",
    )
    threads: int = knob(
        1,
        "CPU threads of each of its jobs (the rule's `threads`: capped at `--cores` locally, "
        "`--cpus-per-task` on Slurm; torch, ONNX Runtime and OpenVINO use exactly this many); give"
        " a CPU backend the cores a job may have. Not a param: changing it reruns nothing",
        minimum=1,
    )
    memory: Literal["fast", "flat"] = knob(
        "fast",
        "fast (the C heap as glibc grows it: the torch backend's peak creeps on a CPU, 1.30 times "
        "its 10,000-sentence peak by 300,000; ONNX Runtime and OpenVINO keep buffers in arenas of "
        "their own and stay flat); flat (large blocks mapped and unmapped on their own, a fixed 4 MiB "
        "mmap threshold: torch 1.10 times at a million, at about 18% less rate; Linux with glibc, "
        "elsewhere as fast). Not a param: changing it reruns nothing",
    )
    quantize_tolerance: float = knob(
        0.02,
        "with quantize int8 or bf16: the job embeds a sample of its texts with fp32 too and records "
        "the mean cosine distance in the output's metadata and its log; above this it warns",
        minimum=0,
    )
    quantize_max_distance: float = knob(
        0.0015,
        "with backend openvino and quantize int8, and no quality_set: the int8 graph is made within "
        "this mean cosine distance of fp32's vectors on up to 256 texts of the input its calibration "
        "did not see, its most sensitive matrix products kept in f32 until it holds "
        "(clinsent.embedding.int8_bound; docs/performance.md says how the default was chosen)",
        minimum=0,
        maximum=1,
    )
    quantize_max_drop: float = knob(
        0.0025,
        "with backend openvino and quantize int8 and a quality_set: the int8 graph is made within "
        "this drop of the set's headline metric from fp32's (clinsent.embedding.int8_bound)",
        minimum=0,
        maximum=1,
    )
    quality_set: str | None = knob(
        None,
        "with quantize int8 or bf16: an eval set of this config, scored from embeddings, on which the "
        "job also scores the fp32 and the quantized vectors: the paired difference of its headline "
        "metric and that difference's 95% paired-bootstrap interval go into the output's metadata "
        "and its log line (the set's files become the job's inputs); with backend openvino and "
        "int8, the bound the int8 graph is made within (quantize_max_drop)",
        null=False,
        unfilled=True,
    )
    private: bool = knob(
        False,
        "the input's texts come from notes: the output is owner-only whatever the file's modes "
        "(notes, a file under a notes-derived results folder and a file nobody else can reach are"
        " private in any case)",
    )


@dataclass(frozen=True)
class Phi:
    """the PHI guard (src/clinsent/phi/)"""

    dir_mode: str | None = knob(
        "0700", "mode of the results folders that hold note text; null leaves the umask's", pattern="^0?[0-7]{3}$"
    )
    scan: bool = knob(True, "search the shared files for sampled note n-grams (rule phi_scan)")
    ngram: int = knob(8, "words per sampled n-gram", minimum=4)
    sample: int = knob(20000, "n-grams sampled", minimum=1)
    notes: int = knob(2000, "notes the n-grams are drawn from", minimum=1)
    seed: int = knob(0, "the sample's seed", minimum=0, maximum=SEED_MAX)


@dataclass(frozen=True)
class Report:
    """``report``: the paper report's results table and figure."""

    title: str = knob("Spearman on the evaluation sets", "caption of the results table and figure")
    base_model: str | None = knob(
        None, "the base model of a cited run without `@`; `null`: the first of `base_models`"
    )
    paper_label: str = knob("paper", "the marker of the paper's numbers in table headers")
    reference: str | None = knob(
        None,
        "the method every row is compared with (paired difference and interval in summary.csv, "
        "results.md and the report); null: the first untrained method in config order, none when "
        "there is none",
    )


def placeholders(value: Any) -> bool:
    """``placeholders_ok`` as given: ``true``, or the text ``--config placeholders_ok=true`` gives
    (``"false"`` is false: the one reading of the flag, at the door and in the typed config)."""
    return str(value).lower() == "true"


@dataclass(frozen=True)
class RunConfig:
    """The config, parsed once at the door (:meth:`parse`): every section typed by its
    declaration. The entries a registry completes (methods, eval sets, fine-tune entries, tables,
    figures, the shared ``training`` and ``evaluation`` values) are typed shells: their declared
    keys typed, their other keys an :class:`~clinsent.config.declare.Open` mapping that registry
    types (:mod:`clinsent.methods.config`, :mod:`clinsent.tasks.config`,
    :mod:`clinsent.finetune.config`, :mod:`clinsent.report.kinds`)."""

    base: str | None = knob(
        None,
        "a config file read underneath this one (e.g. `config/paper/medse.yaml`): mappings merge "
        "key by key, any other value replaces the base's; `python -m clinsent new-config` writes "
        "such a config",
        unfilled=True,
    )
    keep: dict[str, list[str]] | None = knob(
        None,
        "with `base`: of the base's entries of each named top-level mapping, only these, e.g. "
        "`keep: {methods: [lm, medse_replace], base_models: []}` (`[]`: none, so this config "
        "states that section whole). Table cells citing a method or base model left out become "
        "empty; a figure item citing one, a row whose cells are all empty, and a table or figure "
        "with no row or item left leave too. A name the base lacks is an error. The demo twins "
        "use it",
        unfilled=True,
    )
    drop: dict[str, list[str]] | None = knob(
        None,
        "with `base`: the base's entries of each named top-level mapping left out (the complement"
        " of `keep`; the same pruning of cells and items), e.g. `drop: {tables: [table8]}`",
        unfilled=True,
    )
    results: str = knob("results", "folder for every output, log and benchmark")
    models: dict[str, ModelEntry | str] | None = knob(
        None,
        "the benchmark's models, scored as they are (clinsent.door.expansion): each becomes a "
        "base model and is cited as as_is_<pooling>@<name> by the leaderboard table and heatmap "
        "written for it",
        unfilled=True,
    )
    benchmark: Benchmark = knob(Benchmark(), "the benchmark's tasks (with `models`: config/benchmark.yaml)")
    gpus: None | list[int] | str | int = knob(
        None,
        "the GPUs the model jobs (train, finetune, cross_encoder, embed) take one each while they"
        " run: device indices among the visible devices (`CUDA_VISIBLE_DEVICES`'s when it is set,"
        " else the driver's), e.g. `[0, 1]`; `[]` for none (the jobs see no GPU). Each job takes "
        "a free one under a lock file in `CLINSENT_GPU_LOCK_DIR` (default "
        "`/tmp/clinsent-gpu-locks`, shared by every workflow on the machine), sets "
        "`CUDA_VISIBLE_DEVICES` to it and logs `gpu slot: <device>`; a job started with one "
        "device already chosen (Slurm) keeps it. Give `--resources gpu=N` with N at most the "
        "pool's size. Override per run: `--config gpus=[2,3]`. Not a param: changing it reruns "
        "nothing (the docs' Running on a cluster page: several GPUs on one machine)",
        items={"type": "integer", "minimum": 0, "maximum": SEED_MAX},
    )
    embed_device: Literal["auto", "cpu"] = knob(
        "auto",
        "the embed jobs: `auto` (a GPU of the pool, counted against `--resources gpu`, when the "
        "pool has one; else the CPU, counted against nothing) or `cpu` (never a GPU)",
    )
    hub_dir: str = knob(
        "downloads/hub",
        "where the local rule `download_model` fetches each model named by a Hugging Face id (one"
        " folder per id, `owner--name`, shared by every results folder), on the host that runs "
        "Snakemake; every job then loads it from there, offline",
    )
    notes: Notes | None = knob(
        None,
        "the notes pipeline's input; a config without it (plain sentence corpora only, e.g. the "
        "augmentation paper's) runs no corpus, NER or ontology step",
        null=False,
        unfilled=True,
        additionalProperties=False,
    )
    documents: Documents = knob(
        Documents(), "whole notes as documents, split by patient (the healthcare-LM paper's pre-training and tasks)"
    )
    doc_tasks: dict[str, DocTaskEntry] = knob(
        {},
        "a labelled document task drawn from `documents/downstream.parquet` into "
        "`doc_tasks/<name>.parquet` (columns `row_id`, `text`, `label`, `split`; point a "
        "`doc_classification` or analysis eval set's `path` at it as `{results}` followed by "
        "`/doc_tasks/<name>.parquet`: `{results}` is this run's results folder, so an overlay "
        "that changes `results` reads its own run's tables; a path into another folder's "
        "`doc_tasks/` for a task of this config is refused) and `doc_tasks/<name>.json` (counts "
        "per class, what was dropped)",
    )
    corpus: Corpus = knob(Corpus(), "the notes' sentence corpus: its length filter, shards and job memory")
    ontology: Ontology = knob(Ontology(), "the ontology the entities' definitions come from (EFO)")
    ner: Ner = knob(Ner(), "named-entity recognition with MedCAT: the pack and the UMLS types kept")
    linking: Linking = knob(Linking(), "how an entity is linked to its ontology term")
    evaluation: Evaluation = knob(
        Evaluation(),
        "max_length (tokens per text when embedding any eval set: auto, the base model's own "
        "length, or a number; every row alike), and shared values for the keys of eval_sets "
        "entries (e.g. positive_share), checked against the task registry",
    )
    batching: Batching = knob(Batching(), "the duplicate-entity statistics of the batch plans")
    base_models: dict[str, str] = knob(
        {},
        "name -> `pkg:<python package>/<folder>` (a model shipped in a package), a local folder, or a "
        "Hugging Face id (downloaded when online)",
        required=True,
        minProperties=1,
    )
    eval_sets: dict[str, EvalSetConfig] = knob(
        {},
        "the sets every run is scored on, each with its task (`sts` by default) and the task's keys",
        required=True,
        minProperties=1,
    )
    plugins: list[str] = knob(
        [],
        "Python files (or importable modules) that register more methods, tasks or readers; the "
        "workflow and every job import them",
    )
    training_data: dict[str, TrainingDataEntry] = knob(
        {}, "NLI training data for the supervised objectives, named by their `train_data` knob"
    )
    finetune: dict[str, FinetuneConfig] = knob(
        {},
        "the fine-tuned setting: train, validation and test eval sets of one task, methods, "
        "cross_encoder, epochs, batch_size, learning_rate, ...; checked against "
        "clinsent.finetune.config when the config is read",
    )
    selection_set: str | None = knob(
        None,
        "the eval set whose headline metric selects the training step (MED-SE: MedSTS train; "
        "BIOSSES: BLURB's dev split); `null` keeps each run's last step. Selecting on a set the "
        "table also reports biases its score upwards: the results table marks such a column `†`",
        required=True,
    )
    sentence_corpora: dict[str, SentenceCorpusEntry] = knob(
        {}, "plain sentence corpora (clinsent.corpus.sentences), named by methods' `sentences` knob"
    )
    seeds: tuple[int, ...] = knob(
        (0,),
        "one training job per seed (MED-SE: five)",
        items={"type": "integer", "minimum": 0, "maximum": SEED_MAX},
        minItems=1,
    )
    training: Training = knob(
        Training(),
        "shared values for the knobs of every method that has them (steps, batch_size, "
        "max_length, learning_rate, temperature, ...; their defaults live in clinsent.methods); "
        "checked against the method registry when the config is read. threads, processes and nodes: how "
        "each train job runs (its threads, its processes per node, its nodes).",
    )
    methods: dict[str, MethodConfig] = knob(
        {},
        "the methods trained (or not: objective `none`) on every base model, each with its objective's knobs",
        required=True,
        minProperties=1,
    )
    tables: dict[str, TableConfig] = knob(
        {},
        "tables.<id>: a table of the paper report; its kind (default runs) says which keys it "
        "takes and checks them when the config is read (src/clinsent/report/kinds/, "
        "config/README.md)",
    )
    figures: dict[str, FigureConfig] = knob(
        {},
        "figures.<id>: a figure of the paper report; its kind (default alignment_uniformity) says"
        " which keys it takes and checks them when the config is read "
        "(src/clinsent/report/kinds/)",
    )
    placeholders_ok: bool = knob(
        False,
        "`true` leaves missing user files out of the DAG, for a dry run of a config whose paths are "
        "placeholders (`--config placeholders_ok=true` gives the text, read as true)",
        json={"enum": [True, False, "true", "false"]},
    )
    progress: Progress = knob(
        Progress(),
        "progress lines in the rules' logs (not params: changing them reruns nothing)",
        additionalProperties=False,
    )
    tracking: list[Literal["tensorboard"]] = knob(
        [],
        "trackers of the training jobs (clinsent.train.tracking): tensorboard writes event files "
        "under each run's folder (tensorboard --logdir results/). Not a param: switching it "
        "retrains nothing",
        uniqueItems=True,
        items={"type": "string", "enum": ["tensorboard"]},
    )
    model_card: ModelCard = knob(
        ModelCard(),
        "what the trained models' cards (README.md) say of their data's terms "
        "(clinsent.release.card). The release copies follow it; the train job's card takes it as "
        "it stands when the model trains (not a training param)",
        additionalProperties=False,
    )
    corpus_embeddings: dict[str, CorpusEmbeddingEntry] = knob(
        {},
        "corpora embedded with a trained run (the corpus_embeddings target; "
        "clinsent.embedding.corpus): name -> entry; results/corpus_embeddings/<name>.parquet "
        "holds (id, vector)",
    )
    phi: Phi = knob(Phi(), "the PHI guard (src/clinsent/phi/)", additionalProperties=False)
    report: Report = knob(
        Report(), "the paper report's results table and figure, and the reference of its differences"
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "placeholders_ok", placeholders(self.placeholders_ok))

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> RunConfig:
        """The typed config of a validated mapping (a key it lacks: its declared default)."""
        return build(cls, config)

    def section(self, name: str) -> Any:
        """A section by its config key (the checks that go over several sections by name)."""
        return getattr(self, name)
