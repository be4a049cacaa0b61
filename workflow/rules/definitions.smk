# Definitions: the ontology (EFO OBO release) -> term table with definitions and UMLS CUIs.


rule ontology_terms:
    """Parse the ontology into a term table (id, label, synonyms, definition, CUIs, branch, obsolete)."""
    input:
        config["ontology"]["path"],
    output:
        f"{R}/ontology/terms.parquet",
    params:
        disease_root=config["ontology"]["disease_root"],
        mental_root=config["ontology"]["mental_root"],
    log:
        f"{LOGS}/ontology_terms.log",
    benchmark:
        f"{BENCH}/ontology_terms.tsv"
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/ontology_terms.py"
