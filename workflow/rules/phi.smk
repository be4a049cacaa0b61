# The PHI guard (clinsent.phi): note-text folders are owner-only (each job script makes the one it
# writes into so, via setup_logging), and before a run is done the files meant for sharing are
# searched for a sample of note n-grams.


from clinsent.phi import PhiLeak, refuse_report


localrules:
    phi_scan,


PHI = CONF.phi
PHI_SCAN = PLAN.run.phi_scan
if PHI_SCAN:  # `snakemake --report` while the last scan stands failed: refused (clinsent.phi.refuse_report)
    try:
        refuse_report(R, sys.argv)
    except PhiLeak as _exc:
        config_error(_exc)


rule phi_sample:
    """Salted hashes of a seeded sample of the notes' word n-grams (no text is kept)."""
    input:
        IN("phi_sample"),
    output:
        *OUT("phi_sample"),
    params:
        ngram=PHI.ngram,
        sample=PHI.sample,
        notes=PHI.notes,
        seed=PHI.seed,
    log:
        T.log("phi_sample"),
    benchmark:
        T.benchmark("phi_sample")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/phi_sample.py"


rule phi_scan:
    """Search every file meant for sharing (tables, figures and their data, summary.csv, stats,
    logs, benchmarks, every model file but the weights, Snakemake's own logs), and what each
    packs (gzip, base64, PDF streams, PNG text chunks), for the sampled n-grams; fail naming the
    file, the packed piece and the byte offset, with the flagged files moved into the owner-only
    quarantine (clinsent.phi.quarantine). Logs and benchmarks are written by every job but
    are no job's output, so they are listed when this job runs, after the reports and models it
    depends on; every file of a trained run's folder is an input."""
    input:
        IN("phi_scan"),  # the reports, the benchmark's results and cards, every file of a trained run, the release copies
    output:
        # one of the report's items: a report cannot be built before a passing scan
        *OUT("phi_scan", show=SHOWN("../report/phi_scan.rst", "PHI scan")),
    params:
        results=lambda wc, output: os.path.dirname(os.path.dirname(output[0])),  # <results>/stats/phi_scan.json
    log:
        T.log("phi_scan"),
    benchmark:
        T.benchmark("phi_scan")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/phi_scan.py"
