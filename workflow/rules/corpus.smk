# Corpus: notes -> N shards -> sentences (per shard) -> entities (per shard) -> sentence sets
# (gathered) and their statistics; the entity stage only where a method needs it (PLAN.note_entities),
# else S_all straight from the split sentences. Shard jobs are single-threaded with declared memory, so
# Snakemake (or Slurm) runs as many side by side as cores allow; one failed shard reruns alone.


rule ingest_notes:
    """Stream the notes (NOTEEVENTS csv/csv.gz, MIMIC-IV-Note, .txt folder or parquet) into N shards by row_id mod N."""
    input:
        PLAN.external(PLAN.notes_paths) if PLAN.notes else [],
    output:
        shards=expand(f"{SHARD_DIR}/notes/{{shard}}.parquet", shard=SHARDS),
        stats=f"{SHARD_DIR}/ingest.json",
    params:
        notes=config["notes"],
    log:
        f"{LOGS}/ingest_notes.log",
    benchmark:
        f"{BENCH}/ingest_notes.tsv"
    threads: 1
    resources:
        mem_mb=config["corpus"]["mem_mb"]["ingest"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/ingest_notes.py"


rule split_sentences:
    """Normalise MIMIC text and split one shard with ScispaCy + pysbd, paragraph by paragraph."""
    input:
        f"{SHARD_DIR}/notes/{{shard}}.parquet",
    output:
        f"{SHARD_DIR}/sentences/{{shard}}.parquet",
    params:
        min_words=config["corpus"]["min_words"],
    log:
        f"{LOGS}/split_sentences/{{shard}}.log",
    benchmark:
        f"{BENCH}/split_sentences/{{shard}}.tsv"
    threads: 1
    resources:
        mem_mb=config["corpus"]["mem_mb"]["split"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/split_sentences.py"


rule medcat_pack:
    """Build a MedCAT v2 model pack from the ontology's disease (T047) and mental (T048) terms."""
    input:
        rules.ontology_terms.output.terms,
    output:
        directory(f"{R}/ner/medcat_pack"),
    params:
        branch_types=config["ner"]["branch_types"],
    log:
        f"{LOGS}/medcat_pack.log",
    benchmark:
        f"{BENCH}/medcat_pack.tsv"
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/build_medcat_pack.py"


rule slim_pack:
    """Restrict the user's MedCAT pack to the kept types once, so every shard job loads less."""
    input:
        lambda wc: PLAN.external_file(config["ner"]["model_pack"]),
    output:
        pack=directory(f"{R}/ner/slim_pack"),
        stats=f"{R}/ner/slim_pack.json",
    params:
        type_ids=config["ner"]["type_ids"],
    log:
        f"{LOGS}/slim_pack.log",
    benchmark:
        f"{BENCH}/slim_pack.tsv"
    resources:
        mem_mb=config["corpus"]["mem_mb"]["ner"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/slim_pack.py"


rule ner:
    """Annotate the kept sentences of one shard with MedCAT (pack loaded once), keeping the configured types."""
    input:
        sentences=f"{SHARD_DIR}/sentences/{{shard}}.parquet",
        pack=ner_pack,
    output:
        f"{SHARD_DIR}/entities/{{shard}}.parquet",
    params:
        type_ids=config["ner"]["type_ids"],
    log:
        f"{LOGS}/ner/{{shard}}.log",
    benchmark:
        f"{BENCH}/ner/{{shard}}.tsv"
    threads: 1
    resources:
        mem_mb=config["corpus"]["mem_mb"]["ner"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/run_ner.py"


rule sentence_sets:
    """Gather the shards: link entities to definitions; S_all, S_ent, S_none and the no-definition remainder."""
    input:
        sentences=expand(f"{SHARD_DIR}/sentences/{{shard}}.parquet", shard=SHARDS),
        entities=expand(f"{SHARD_DIR}/entities/{{shard}}.parquet", shard=SHARDS),
        terms=rules.ontology_terms.output.terms,
    output:
        sets=PLAN.entity_sets_path(),
        linked=PLAN.linked_path(),
        counts=f"{R}/sets/counts.json",
    params:
        link_by=config["linking"]["by"],
    log:
        f"{LOGS}/sentence_sets.log",
    benchmark:
        f"{BENCH}/sentence_sets.tsv"
    resources:
        mem_mb=config["corpus"]["mem_mb"]["gather"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/sentence_sets.py"


rule sentence_set_all:
    """Gather the shards' kept sentences into S_all when no method needs entities: the sentences,
    ids and order of the sets `sentence_sets` writes, without the ontology, the pack or NER."""
    input:
        sentences=expand(f"{SHARD_DIR}/sentences/{{shard}}.parquet", shard=SHARDS),
    output:
        sets=PLAN.s_all_path(),
        counts=f"{R}/sets/s_all.json",
    log:
        f"{LOGS}/sentence_set_all.log",
    benchmark:
        f"{BENCH}/sentence_set_all.tsv"
    resources:
        mem_mb=config["corpus"]["mem_mb"]["gather"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/sentence_set_all.py"


rule corpus_stats:
    """MED-SE Tables 1 and 2 for this corpus, and the exact-duplicate (copy-paste) counts."""
    input:
        sets=rules.sentence_sets.output.sets,
        linked=rules.sentence_sets.output.linked,
        counts=rules.sentence_sets.output.counts,
    output:
        table1=report(f"{R}/stats/table1_entities.csv", caption="../report/corpus.rst", category="Corpus"),
        table2=report(f"{R}/stats/table2_sets.csv", caption="../report/corpus.rst", category="Corpus"),
        duplicates=report(f"{R}/stats/exact_duplicates.csv", caption="../report/corpus.rst", category="Corpus"),
    params:
        top_fraction=0.1,  # MED-SE Table 1: the top 10% most frequent entities
    log:
        f"{LOGS}/corpus_stats.log",
    benchmark:
        f"{BENCH}/corpus_stats.tsv"
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/corpus_stats.py"


rule corpus_manifest:
    """Per-stage counts, tool versions, normalisation version, ontology version and hash, pack hash."""
    input:
        ingest=rules.ingest_notes.output.stats,
        sentences=rules.sentence_sets.input.sentences,
        counts=PLAN.sets_counts_path(),
        **({"entities": rules.sentence_sets.input.entities, "terms": rules.ontology_terms.output.terms,
            "coverage": rules.ontology_terms.output.coverage, "ontology": ontology_file, "pack": ner_pack}
           if NOTE_ENTITIES else {}),
    output:
        f"{R}/stats/manifest.json",
    params:
        shards=PLAN.n_shards,
        type_ids=config["ner"]["type_ids"] if NOTE_ENTITIES else None,
        notes=config["notes"],
    log:
        f"{LOGS}/corpus_manifest.log",
    benchmark:
        f"{BENCH}/corpus_manifest.tsv"
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/corpus_manifest.py"
