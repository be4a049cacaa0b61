"""Snakemake script: sentence sets -> one batch plan (corpus, mix, duplicate strategy) and seed."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import pandas as pd

    from clinsent.config.declare import build
    from clinsent.corpus.sentences import fraction_subset
    from clinsent.data.batching import candidates, no_entities, none_slots, plan_batches, set_columns
    from clinsent.data.plan import SentencePlan
    from clinsent.io.files import write_parquet

    p = build(SentencePlan, smk.params.plan)  # the batch plan, typed (SentencePlan.params wrote it)
    sets = pd.read_parquet(smk.input.sets, columns=set_columns(p.corpus, p.none_share))  # S_all alone: no `set`
    linked = pd.read_parquet(smk.input.linked) if "linked" in smk.input.keys() else no_entities()  # a sentence corpus
    sets = sets[sets["sent_id"].isin(fraction_subset(sets["sent_id"].to_numpy(), p.fraction))]
    cands = candidates(sets, linked, p.corpus)
    none_cands = candidates(sets, linked, "s_none") if p.none_share > 0 else None
    plan = plan_batches(
        cands,
        p.duplicates,
        p.batch_size,
        p.steps,
        int(smk.wildcards.seed),
        none_cands=none_cands,
        none_share=p.none_share,
    )
    k = none_slots(p.batch_size, p.none_share)
    log.info(
        "batch plan %s: %d steps, %d rows from %d candidate sentences; %d S_none per batch (share %.4f)",
        smk.wildcards.plan,
        p.steps,
        len(plan),
        len(cands),
        k,
        k / p.batch_size,
    )
    write_parquet(plan, smk.output[0])


run(snakemake, main)
