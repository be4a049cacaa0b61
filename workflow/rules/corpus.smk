# Corpus: notes -> N shards -> sentences (per shard) -> entities (per shard) -> sentence sets
# (gathered) and their statistics; the entity stage only where a method needs it (PLAN.run.note_entities),
# else S_all straight from the split sentences. Shard jobs are single-threaded with declared memory, so
# Snakemake (or Slurm) runs as many side by side as cores allow; one failed shard reruns alone.


rule ingest_notes:
    """Stream the notes (NOTEEVENTS csv/csv.gz, MIMIC-IV-Note, .txt folder or parquet) into N shards by row_id mod N."""
    input:
        IN("ingest_notes"),
    output:
        **OUT("ingest_notes"),
    params:
        notes=to_params(CONF.notes) if CONF.notes else {},
    log:
        T.log("ingest_notes"),
    benchmark:
        T.benchmark("ingest_notes")
    threads: 1
    resources:
        mem_mb=CONF.corpus.mem_mb.ingest,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/ingest_notes.py"


rule split_sentences:
    """Normalise MIMIC text and split one shard with ScispaCy + pysbd, paragraph by paragraph."""
    input:
        IN("split_sentences"),
    output:
        *OUT("split_sentences"),
    params:
        min_words=CONF.corpus.min_words,
        progress=Untracked(CONF.progress),  # progress lines in the log: change no output
    log:
        T.log("split_sentences"),
    benchmark:
        T.benchmark("split_sentences")
    threads: 1
    resources:
        mem_mb=CONF.corpus.mem_mb.split,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/split_sentences.py"


rule medcat_pack:
    """Build a MedCAT v2 model pack from the ontology's disease (T047) and mental (T048) terms."""
    input:
        IN("medcat_pack"),
    output:
        *OUT("medcat_pack"),
    params:
        branch_types=CONF.ner.branch_types,
    log:
        T.log("medcat_pack"),
    benchmark:
        T.benchmark("medcat_pack")
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/build_medcat_pack.py"


rule slim_pack:
    """Restrict the user's MedCAT pack to the kept types once, so every shard job loads less."""
    input:
        IN("slim_pack"),
    output:
        **OUT("slim_pack"),
    params:
        type_ids=CONF.ner.type_ids,
    log:
        T.log("slim_pack"),
    benchmark:
        T.benchmark("slim_pack")
    resources:
        mem_mb=CONF.corpus.mem_mb.ner,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/slim_pack.py"


rule ner:
    """Annotate the kept sentences of one shard with MedCAT (pack loaded once), keeping the configured types."""
    input:
        IN("ner"),
    output:
        *OUT("ner"),
    params:
        type_ids=CONF.ner.type_ids,
        progress=Untracked(CONF.progress),
    log:
        T.log("ner"),
    benchmark:
        T.benchmark("ner")
    threads: 1
    resources:
        mem_mb=CONF.corpus.mem_mb.ner,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/run_ner.py"


rule sentence_sets:
    """Gather the shards: link entities to definitions; S_all, S_ent, S_none and the no-definition remainder."""
    input:
        IN("sentence_sets"),
    output:
        **OUT("sentence_sets"),
    params:
        link_by=CONF.linking.by,
    log:
        T.log("sentence_sets"),
    benchmark:
        T.benchmark("sentence_sets")
    resources:
        mem_mb=CONF.corpus.mem_mb.gather,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/sentence_sets.py"


rule sentence_set_all:
    """Gather the shards' kept sentences into S_all when no method needs entities: the sentences,
    ids and order of the sets `sentence_sets` writes, without the ontology, the pack or NER."""
    input:
        IN("sentence_set_all"),
    output:
        **OUT("sentence_set_all"),
    log:
        T.log("sentence_set_all"),
    benchmark:
        T.benchmark("sentence_set_all")
    resources:
        mem_mb=CONF.corpus.mem_mb.gather,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/sentence_set_all.py"


rule corpus_stats:
    """MED-SE Tables 1 and 2 for this corpus, and the exact-duplicate (copy-paste) counts."""
    input:
        IN("corpus_stats"),
    output:
        **OUT("corpus_stats", **dict.fromkeys(("table1", "table2", "duplicates"), SHOWN("../report/corpus.rst", "Corpus"))),
    params:
        top_fraction=0.1,  # MED-SE Table 1: the top 10% most frequent entities
    log:
        T.log("corpus_stats"),
    benchmark:
        T.benchmark("corpus_stats")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/corpus_stats.py"


rule corpus_manifest:
    """Per-stage counts, tool versions, normalisation version, ontology version and hash, pack hash."""
    input:
        IN("corpus_manifest"),
    output:
        *OUT("corpus_manifest"),
    params:
        shards=PLAN.run.n_shards,
        type_ids=CONF.ner.type_ids if NOTE_ENTITIES else None,
        notes=to_params(CONF.notes) if CONF.notes else {},
    log:
        T.log("corpus_manifest"),
    benchmark:
        T.benchmark("corpus_manifest")
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/corpus_manifest.py"
