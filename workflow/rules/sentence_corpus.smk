# Plain sentence corpora (config `sentence_corpora`): a text file with one sentence per line or a
# parquet column, sampled; no splitting, no NER. They feed the same batch_plan rule as the notes.


rule sentence_corpus:
    """Read (and sample) one sentence corpus into the sentence-set layout, with its statistics."""
    input:
        IN("sentence_corpus"),
    output:
        **OUT("sentence_corpus"),
    params:
        entry=lambda wc: to_params(CONF.sentence_corpora[wc.sentence_corpus]),
    log:
        T.log("sentence_corpus"),
    benchmark:
        T.benchmark("sentence_corpus")
    resources:
        mem_mb=4000,  # a million sentences held in memory while sampling
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/sentence_corpus.py"
