# Downloads, where the network is: the only rules that may touch it, both local rules, so on a
# cluster they run on the host that runs Snakemake (a login node) before any job needs them;
# every cluster job then reads local paths and runs offline (clinsent.process.offline).


localrules:
    download_ontology,
    download_model,


rule download_ontology:
    """Download the pinned ontology release (URL, version, sha256 from `ontology.release`)."""
    output:
        *OUT("download_ontology"),
    params:
        url=PLAN.run.ontology_url,
        sha256=CONF.ontology.release.sha256,
    log:
        T.log("download_ontology"),
    benchmark:
        T.benchmark("download_ontology")
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/download_ontology.py"


rule download_model:
    """Fetch one model named by a Hugging Face id (base_models, or a method's extra model) into
    `hub_dir`/<owner--name>: a complete snapshot, moved into place only when whole."""
    output:
        *OUT("download_model"),  # outside the results folder: every config shares it
    params:
        repo_id=lambda wc: wc.hub.replace("--", "/"),
    log:
        T.log("download_model"),
    benchmark:
        T.benchmark("download_model")
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/download_model.py"


# Snakemake's dry run does not say which jobs are local ("we don't know how the user wants to
# execute"): say it here, from Snakemake's own record, for the downloads this run plans.
if (PLAN.run.hub_models or not CONF.ontology.path) and not workflow.remote_exec:
    _downloads = {k: v for k, v in job_counts(PLAN).items() if k in ("download_model", "download_ontology")}
    _local = [f"{name} ({n})" for name, n in _downloads.items() if n and workflow.is_local(getattr(rules, name).rule)]
    if _local:
        print(f"downloads as local rules, on this host before any job that needs them: {', '.join(_local)}",
              file=sys.stderr)
