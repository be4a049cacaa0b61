# The benchmark's results in MTEB's format (config `models:`; clinsent.benchmark): per model, one
# JSON per task and seed's revision, from its own jobs' metrics files (scores and times), and
# the model's card with them as model-index metadata (a copy beside them: the model folder is the
# train job's output and stays as it wrote it).
from clinsent.plan.benchmark import benchmark_models, benchmark_tasks, metrics_files, model_cards

BENCH_MODELS = benchmark_models(PLAN) if CONF.models else {}
BENCH_TASKS = benchmark_tasks(PLAN) if BENCH_MODELS else {}


localrules:
    mteb_results,


rule mteb_results:
    """One model's results, MTEB TaskResult files (mteb/<model>/<revision>/<task>.json)."""
    input:
        IN("mteb_results"),  # its runs' metrics, the tasks' files, its models (their cards get the results)
    output:
        *OUT("mteb_results"),
    params:
        model=lambda wc: BENCH_MODELS[wc.model],
        tasks=BENCH_TASKS,
        metrics=lambda wc: metrics_files(PLAN, BENCH_MODELS[wc.model], BENCH_TASKS),
        cards=lambda wc: model_cards(PLAN, BENCH_MODELS[wc.model]),
    log:
        T.log("mteb_results"),
    benchmark:
        T.benchmark("mteb_results")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/mteb_results.py"
