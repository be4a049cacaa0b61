# Batch plans: dedup-aware batches per trained method and seed, and duplicate statistics.


rule batch_plan:
    """Fix the batches (and each sentence's chosen entity) of every training step."""
    input:
        IN("batch_plan"),
    output:
        *OUT("batch_plan"),
    params:
        plan=lambda wc: PLAN.run.batch_plans[wc.plan].params(),
    log:
        T.log("batch_plan"),
    benchmark:
        T.benchmark("batch_plan")
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/batch_plan.py"


rule duplicate_stats:
    """Simulate naive batches on S_ent: share with a duplicate entity, mean unique share."""
    input:
        IN("duplicate_stats"),
    output:
        *OUT("duplicate_stats"),
    params:
        batches=CONF.batching.duplicate_sim_batches,
        batch_size=CONF.batching.duplicate_sim_batch_size,
    log:
        T.log("duplicate_stats"),
    benchmark:
        T.benchmark("duplicate_stats")
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/duplicate_stats.py"
