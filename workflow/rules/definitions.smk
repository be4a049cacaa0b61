# Definitions: the ontology (a pinned EFO OBO release, or a local file) -> term table with
# definitions and UMLS CUIs, and its coverage report.


rule ontology_terms:
    """Parse the ontology into a term table (id, label, synonyms, definition, CUIs, branch, obsolete) and its coverage."""
    input:
        IN("ontology_terms"),
    output:
        **OUT("ontology_terms"),
    params:
        disease_root=CONF.ontology.disease_root,
        mental_root=CONF.ontology.mental_root,
    log:
        T.log("ontology_terms"),
    benchmark:
        T.benchmark("ontology_terms")
    resources:
        mem_mb=2000,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/ontology_terms.py"
