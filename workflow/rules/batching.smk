# Batch plans: dedup-aware batches per trained method and seed, and duplicate statistics.


rule batch_plan:
    """Fix the batches (and each sentence's chosen entity) of every training step."""
    input:
        unpack(plan_inputs),
    output:
        f"{R}/batches/{{plan}}/seed{{seed}}.parquet",
    params:
        plan=lambda wc: PLAN.plans[wc.plan],
    log:
        f"{LOGS}/batch_plan/{{plan}}_seed{{seed}}.log",
    benchmark:
        f"{BENCH}/batch_plan/{{plan}}_seed{{seed}}.tsv"
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/batch_plan.py"


rule duplicate_stats:
    """Simulate naive batches on S_ent: share with a duplicate entity, mean unique share."""
    input:
        sets=rules.sentence_sets.output.sets,
        linked=rules.sentence_sets.output.linked,
    output:
        f"{R}/stats/duplicate_entities.json",
    params:
        batches=config["batching"]["duplicate_sim_batches"],
        batch_size=config["batching"]["duplicate_sim_batch_size"],
    log:
        f"{LOGS}/duplicate_stats.log",
    benchmark:
        f"{BENCH}/duplicate_stats.tsv"
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/duplicate_stats.py"
