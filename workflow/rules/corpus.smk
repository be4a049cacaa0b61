# Corpus: notes -> sentences -> entities -> sentence sets and their statistics.


rule notes:
    """Read NOTEEVENTS (category filter, ISERROR=1 dropped) into a notes table."""
    input:
        config["notes"]["path"],
    output:
        f"{R}/corpus/notes.parquet",
    params:
        categories=config["notes"]["categories"],
        drop_errors=config["notes"]["drop_errors"],
    log:
        f"{LOGS}/notes.log",
    benchmark:
        f"{BENCH}/notes.tsv"
    conda:
        "../../envs/corpus.yaml"
    resources:
        mem_mb=2000,
    script:
        "../scripts/read_notes.py"


rule split_sentences:
    """Normalise MIMIC text and split it with ScispaCy + pysbd, paragraph by paragraph."""
    input:
        rules.notes.output,
    output:
        f"{R}/corpus/sentences.parquet",
    params:
        min_words=config["corpus"]["min_words"],
    log:
        f"{LOGS}/split_sentences.log",
    benchmark:
        f"{BENCH}/split_sentences.tsv"
    conda:
        "../../envs/corpus.yaml"
    resources:
        mem_mb=2000,
    script:
        "../scripts/split_sentences.py"


rule medcat_pack:
    """Build a MedCAT v2 model pack from the ontology's disease (T047) and mental (T048) terms."""
    input:
        rules.ontology_terms.output,
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


rule ner:
    """Annotate every kept sentence with MedCAT (model loaded once), keeping the configured types."""
    input:
        sentences=rules.split_sentences.output,
        pack=ner_pack,
    output:
        f"{R}/ner/entities.parquet",
    params:
        type_ids=config["ner"]["type_ids"],
    log:
        f"{LOGS}/ner.log",
    benchmark:
        f"{BENCH}/ner.tsv"
    conda:
        "../../envs/corpus.yaml"
    resources:
        mem_mb=4000,
    script:
        "../scripts/run_ner.py"


rule sentence_sets:
    """Link entities to definitions; S_all, S_ent, S_none and the no-definition remainder."""
    input:
        sentences=rules.split_sentences.output,
        entities=rules.ner.output,
        terms=rules.ontology_terms.output,
    output:
        sets=f"{R}/sets/sentences.parquet",
        linked=f"{R}/sets/entities_linked.parquet",
    params:
        link_by=config["linking"]["by"],
    log:
        f"{LOGS}/sentence_sets.log",
    benchmark:
        f"{BENCH}/sentence_sets.tsv"
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/sentence_sets.py"


rule corpus_stats:
    """MED-SE Tables 1 and 2 for this corpus (CSV and Markdown)."""
    input:
        sentences=rules.split_sentences.output,
        sets=rules.sentence_sets.output.sets,
        linked=rules.sentence_sets.output.linked,
    output:
        table1=f"{R}/stats/table1_entities.csv",
        table2=f"{R}/stats/table2_sets.csv",
        markdown=f"{R}/stats/corpus_stats.md",
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
