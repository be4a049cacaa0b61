# Corpus: notes -> N shards -> sentences (per shard) -> entities (per shard) -> sentence sets
# (gathered) and their statistics; the entity stage only where a method needs it (PLAN.run.note_entities),
# else S_all straight from the split sentences. Shard jobs are single-threaded with declared memory, so
# Snakemake (or Slurm) runs as many side by side as cores allow; one failed shard reruns alone.


rule ingest_notes:
    """Stream the notes (NOTEEVENTS csv/csv.gz, MIMIC-IV-Note, .txt folder or parquet) into N shards by row_id mod N."""
    input:
        PLAN.files.external(PLAN.files.notes_paths) if PLAN.run.notes else [],
    output:
        shards=expand(NOTES_SHARD, shard=SHARDS),
        stats=INGEST_STATS,
    params:
        notes=config["notes"],
    log:
        T.log("ingest_notes"),
    benchmark:
        T.benchmark("ingest_notes")
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
        NOTES_SHARD,
    output:
        SENTENCES_SHARD,
    params:
        min_words=config["corpus"]["min_words"],
    log:
        T.log("split_sentences"),
    benchmark:
        T.benchmark("split_sentences")
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
        directory(T.pattern(P.MEDCAT_PACK)),
    params:
        branch_types=config["ner"]["branch_types"],
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
        lambda wc: PLAN.files.external_file(config["ner"]["model_pack"]),
    output:
        pack=directory(T.pattern(P.SLIM_PACK)),
        stats=T.pattern(P.SLIM_PACK_STATS),
    params:
        type_ids=config["ner"]["type_ids"],
    log:
        T.log("slim_pack"),
    benchmark:
        T.benchmark("slim_pack")
    resources:
        mem_mb=config["corpus"]["mem_mb"]["ner"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/slim_pack.py"


rule ner:
    """Annotate the kept sentences of one shard with MedCAT (pack loaded once), keeping the configured types."""
    input:
        sentences=SENTENCES_SHARD,
        pack=ner_pack,
    output:
        ENTITIES_SHARD,
    params:
        type_ids=config["ner"]["type_ids"],
    log:
        T.log("ner"),
    benchmark:
        T.benchmark("ner")
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
        sentences=expand(SENTENCES_SHARD, shard=SHARDS),
        entities=expand(ENTITIES_SHARD, shard=SHARDS),
        terms=rules.ontology_terms.output.terms,
    output:
        sets=T.pattern(P.ENTITY_SETS),
        linked=T.pattern(P.LINKED),
        counts=T.pattern(P.ENTITY_SETS_COUNTS),
    params:
        link_by=config["linking"]["by"],
    log:
        T.log("sentence_sets"),
    benchmark:
        T.benchmark("sentence_sets")
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
        sentences=expand(SENTENCES_SHARD, shard=SHARDS),
    output:
        sets=T.pattern(P.S_ALL),
        counts=T.pattern(P.S_ALL_COUNTS),
    log:
        T.log("sentence_set_all"),
    benchmark:
        T.benchmark("sentence_set_all")
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
        table1=report(T.pattern(P.TABLE1), caption="../report/corpus.rst", category="Corpus"),
        table2=report(T.pattern(P.TABLE2), caption="../report/corpus.rst", category="Corpus"),
        duplicates=report(T.pattern(P.EXACT_DUPLICATES), caption="../report/corpus.rst", category="Corpus"),
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
        ingest=rules.ingest_notes.output.stats,
        sentences=rules.sentence_sets.input.sentences,
        counts=PLAN.files.sets_counts_path(),
        **({"entities": rules.sentence_sets.input.entities, "terms": rules.ontology_terms.output.terms,
            "coverage": rules.ontology_terms.output.coverage, "ontology": ontology_file, "pack": ner_pack}
           if NOTE_ENTITIES else {}),
    output:
        T.pattern(P.MANIFEST),
    params:
        shards=PLAN.run.n_shards,
        type_ids=config["ner"]["type_ids"] if NOTE_ENTITIES else None,
        notes=config["notes"],
    log:
        T.log("corpus_manifest"),
    benchmark:
        T.benchmark("corpus_manifest")
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/corpus_manifest.py"
