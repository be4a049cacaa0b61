"""Training data of the sentence-level methods: a batch plan over the sentence sets.

The ``batch_plan`` rule fixes every step's sentences and each sentence's chosen entity in
advance (corpus, S_none share, duplicate strategy; :mod:`clinsent.data.batching`); methods whose
plan settings agree share one plan per seed. The sentences come from the notes pipeline's sets
(``source`` notes) or from a plain sentence corpus (``source``: a key of ``sentence_corpora``,
:mod:`clinsent.corpus.sentences`); ``fraction`` < 1 plans over a fixed subset of the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from clinsent.data import DataNeed, TrainingData
from clinsent.paths import BATCH_PLAN, SENTENCE_CORPUS, Tree


@dataclass(frozen=True)
class SentencePlan(DataNeed):
    corpus: str
    duplicates: str
    none_share: float
    batch_size: int
    steps: int
    entities: bool = False  # also read the linked entities (spans and definitions)
    source: str = "notes"  # or a key of sentence_corpora
    fraction: float = 1.0

    def settings(self) -> dict[str, Any]:
        """What shapes the plan (the ``batch_plan`` rule's params)."""
        out = {k: v for k, v in asdict(self).items() if k != "entities"}
        if self.none_share >= 1.0:  # S_none only: corpus and strategy play no part
            out.update(corpus="s_none", duplicates="naive", none_share=0.0)
        return out

    def note_entities(self) -> bool:
        """The notes' entities are read for the definitions (``entities``), to draw from S_ent or
        S_none, or to keep a chosen entity once per batch; SimCSE-style S_all with ``naive``
        batches needs the split sentences alone."""
        s = self.settings()
        return self.source == "notes" and (
            self.entities or s["corpus"] != "s_all" or s["duplicates"] != "naive" or s["none_share"] > 0
        )

    def key(self) -> str:
        s = self.settings()
        corpus = s["corpus"] if s["source"] == "notes" else s["source"]
        fraction = f"-f{s['fraction']:g}" if s["fraction"] < 1.0 else ""
        return f"{corpus}-{s['duplicates']}-none{s['none_share']:g}-b{s['batch_size']}-n{s['steps']}{fraction}"

    def sets_path(self, paths: Mapping[str, str]) -> str:
        """The sentences this plan draws from: the notes pipeline's sets or a sentence corpus."""
        if self.source == "notes":
            return paths["sets"]
        return sentence_corpus_path(paths["results"], self.source)

    def inputs(self, paths: Mapping[str, str], seed: int) -> dict[str, str]:
        plan = Tree(paths["results"]).file(BATCH_PLAN, plan=self.key(), seed=seed)
        out = {"plan": plan, "sets": self.sets_path(paths)}
        if self.entities:
            out["linked"] = paths["linked"]
        return out

    def load(self, inputs: Mapping[str, Any], seed: int) -> TrainingData:
        import pyarrow.parquet as pq

        has_notes = "row_id" in pq.read_schema(inputs["sets"]).names  # the notes' sets: each sentence's note
        sentences = pd.read_parquet(inputs["sets"], columns=["sent_id", "text", *(["row_id"] if has_notes else [])])
        entities = pd.read_parquet(inputs["linked"]) if self.entities else None
        return PlanData(pd.read_parquet(inputs["plan"]), sentences, entities, about=self.about())

    def about(self) -> dict[str, str]:
        """The card's words for these sentences (:meth:`PlanData.summary`)."""
        s = self.settings()
        if s["source"] != "notes":
            return {"description": f"sentences of the sentence corpus `{s['source']}`", "source": s["source"]}
        sets = CORPUS_WORDS[str(s["corpus"])]
        if 0 < float(s["none_share"]) < 1:
            sets += f", {float(s['none_share']):g} of each batch from S_none"
        return {"description": f"{sets} of the notes", "source": "notes"}


CORPUS_WORDS = {  # each set by its definition (clinsent.corpus.sets; MED-SE section 3.2)
    "s_all": "S_all sentences (those kept by the length filter, corpus.min_words)",
    "s_ent": "S_ent sentences (S_all sentences with a disease or mental-disorder entity, UMLS T047 or T048, "
    "that has an ontology definition)",
    "s_none": "S_none sentences (S_all sentences without any such entity)",
}


def sentence_corpus_path(results: str, name: str) -> str:
    """Where the ``sentence_corpus`` rule writes corpus ``name``."""
    return Tree(results).file(SENTENCE_CORPUS, sentence_corpus=name)


class PlanData(TrainingData):
    """Plan rows joined with their text (and the chosen entity's span and definition, where
    the entity has one)."""

    def __init__(
        self,
        plan: pd.DataFrame,
        sentences: pd.DataFrame,
        entities: pd.DataFrame | None = None,
        about: dict[str, str] | None = None,
    ) -> None:
        self.plan = plan
        self.about = about or {"description": "sentences", "source": ""}
        df = plan.merge(
            sentences[["sent_id", "text"]].drop_duplicates("sent_id"), on="sent_id", how="left", validate="many_to_one"
        )
        if df["text"].isna().any():
            missing = df.loc[df["text"].isna(), "sent_id"].head(3).tolist()
            raise ValueError(
                f"the batch plan cites sentence ids without a sentence, e.g. {missing}; "
                "rebuild the plan from the current sentence sets"
            )
        if entities is not None:
            defined = entities[entities["definition"].map(lambda d: isinstance(d, str))]
            spans = defined[["sent_id", "ent_idx", "start", "end", "definition"]].drop_duplicates(
                ["sent_id", "ent_idx"]
            )
            df = df.merge(spans, on=["sent_id", "ent_idx"], how="left", validate="many_to_one")
        self.steps = {int(s): g.reset_index(drop=True) for s, g in df.groupby("step", sort=True)}
        self.distinct_texts = int(df["text"].nunique())  # ids of the same text count once
        self.notes = int(
            sentences.loc[sentences["sent_id"].isin(df["sent_id"]), "row_id"].nunique() if "row_id" in sentences else 0
        )  # the notes the trained sentences come from (0: not the notes' sets)
        # what training drew from: the set's distinct sentences and the notes they come from
        self.corpus_texts = int(sentences["text"].nunique())
        self.corpus_notes = int(sentences["row_id"].nunique()) if "row_id" in sentences else 0

    def batch(self, step: int) -> pd.DataFrame:
        return self.steps[step - 1]

    def identity(self) -> pd.DataFrame:
        return self.plan

    def summary(self) -> dict[str, Any]:
        return {
            **self.about,
            "rows": self.distinct_texts,
            "unit": "distinct sentences",
            "of_rows": self.corpus_texts,
            **({"notes": self.notes, "of_notes": self.corpus_notes} if self.notes else {}),
        }

    def check(self, steps: int) -> None:
        missing = [s for s in range(steps) if s not in self.steps]
        if missing:
            raise ValueError(f"the batch plan has no rows for step(s) {missing[:5]} (plan steps < training steps)")
