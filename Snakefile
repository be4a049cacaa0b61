# clinsent: notes -> sentences -> entities -> definitions -> batch plans -> models
#           -> embeddings -> metrics -> tables and figures.
# Run: snakemake --cores 1 --resources gpu=1 all   (see README.md)
from snakemake.utils import min_version

from clinsent.door.open import open_plan
from clinsent.errors import InputError
from clinsent.safety.exclusive import hold_results
from clinsent.runner.report import refuse_report_over_pending
from clinsent.runner.smk import cache_signatures, check_executor, check_scripts_once, config_error
from clinsent.runner.staleness import add_content_params

min_version("9.0")


# The demo config, unless --configfile names another one: that one then stands alone (merged
# into the demo's, the demo's methods and eval sets would leak into its grid).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"



# The door (clinsent.door.open.open_plan, the plan command's and new-config's too): the config files
# read again safely (Snakemake's own reading keeps a repeated key's last value), the base underneath
# (a user's config states only their files), optional eval sets whose files are missing left out (one
# warning line), the benchmark's models expanded, Snakemake's `config` validated against
# config/schema.yaml with its defaults filled in, then the plan: every rule's inputs, outputs and
# params. The main process (a run, a dry run) also reads every input's first block; a job's re-parse
# does not. A config error stops here with one line (the key, the problem, the fix).
try:
    PLAN = open_plan(
        config,
        files=workflow.overwrite_configfiles or ["config/config.yaml"],
        read_inputs=workflow.is_main_process,
    )
except (InputError, ValueError) as exc:
    config_error(exc)


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/downloads.smk"
include: "workflow/rules/definitions.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/documents.smk"
include: "workflow/rules/sentence_corpus.smk"
include: "workflow/rules/batching.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/finetune.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/phi.smk"


# One run per results folder (clinsent.safety.exclusive.hold_results): when this run starts executing
# (a dry run, --unlock, --summary and --report never do), its main process takes the results
# folder's lock and keeps it to the end; a second run on the same folder stops here, whatever
# working folder or checkout it comes from. Snakemake's own lock is per working folder.
onstart:
    try:
        check_executor(workflow)  # a cluster profile where its scheduler is not installed: one line, nothing submitted
        hold_results(PLAN.run.results)
    except InputError as _exc:
        config_error(_exc)


rule all:
    input:
        # the report, the corpus tables and manifest, the paper's tables and figures, the PHI scan, the
        # benchmark's results, each trained run's release copy (its card with the eval metrics), the
        # corpus embeddings: clinsent.plan.rules
        IN("all"),
    default_target: True

# Every job's params name the content of the raw inputs it reads, as this run recorded them: an input
# edited while the job ran makes its outputs stale, whatever dry runs recorded meanwhile
# (clinsent.runner.staleness.add_content_params). Then `snakemake --report` over pending work is
# refused in one line (clinsent.runner.report), and Snakemake reads each input function's signature
# once (dry runs and every cluster job's re-parse).
add_content_params(workflow.rules, PLAN, DECLARED)
refuse_report_over_pending(workflow)
cache_signatures(workflow.rules)
check_scripts_once()
