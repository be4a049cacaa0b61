"""Training data of the sentence-level methods: a batch plan over the sentence sets.

The ``batch_plan`` rule fixes every step's sentences and each sentence's chosen entity in
advance (corpus, S_none share, duplicate strategy; :mod:`clinsent.data.batching`); methods whose
plan settings agree share one plan per seed. The sentences come from the notes pipeline's sets
(``source`` notes) or from a plain sentence corpus (``source``: a key of ``sentence_corpora``,
:mod:`clinsent.corpus.sentences`); ``fraction`` < 1 plans over a fixed subset of the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from clinsent.data import DataNeed, TrainingData
from clinsent.data.positions import StepRows
from clinsent.data.tokens import Tables, TokenFile, TokenTable
from clinsent.paths import BATCH_PLAN, SENTENCE_CORPUS, Tree, tokenizer_key


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
    # the token files (clinsent.data.tokens): the sentences' length (0: tokenized in the step), and
    # the definitions' length and model (""; the base model's tokenizer); none shapes the plan
    max_length: int = 0
    definition_length: int = 0
    definition_model: str = ""

    def shape(self) -> SentencePlan:
        """The batch plan itself: what shapes it, the rest at its defaults (methods whose shapes
        agree share one batch plan per seed); drawn from S_none alone, corpus and strategy play
        no part."""
        plan = replace(self, entities=False, max_length=0, definition_length=0, definition_model="")
        if plan.none_share >= 1.0:
            plan = replace(plan, corpus="s_none", duplicates="naive", none_share=0.0)
        return plan

    def params(self) -> dict[str, Any]:
        """The ``batch_plan`` job's params: what shapes the plan (:meth:`shape`), read back in the
        job by :func:`clinsent.config.declare.build` (``build(SentencePlan, params)``)."""
        return {k: v for k, v in asdict(self.shape()).items() if k not in _NOT_THE_PLANS}

    def note_entities(self) -> bool:
        """The notes' entities are read for the definitions (``entities``), to draw from S_ent or
        S_none, or to keep a chosen entity once per batch; SimCSE-style S_all with ``naive``
        batches needs the split sentences alone."""
        s = self.shape()
        return self.source == "notes" and (
            self.entities or s.corpus != "s_all" or s.duplicates != "naive" or s.none_share > 0
        )

    def key(self) -> str:
        s = self.shape()
        corpus = s.corpus if s.source == "notes" else s.source
        fraction = f"-f{s.fraction:g}" if s.fraction < 1.0 else ""
        return f"{corpus}-{s.duplicates}-none{s.none_share:g}-b{s.batch_size}-n{s.steps}{fraction}"

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
        out.update({name: f.path(paths["results"]) for name, f in self.token_files(paths).items()})
        return out

    def token_files(self, paths: Mapping[str, str]) -> dict[str, TokenFile]:
        """The sentences' tokens (with the linked entities' spans where the notes have entities),
        and MED-SE's definitions' (their model's tokenizer, their length)."""
        if not self.max_length or "tokenizer" not in paths:  # no tokenizer given: tokenized in the step
            return {}
        source = "notes" if self.source == "notes" else f"corpus-{self.source}"
        out = {"tokens": TokenFile(source, paths["tokenizer"], self.max_length)}
        if self.entities and self.definition_length:
            model = tokenizer_key(self.definition_model) if self.definition_model else paths["tokenizer"]
            out["definition_tokens"] = TokenFile("definitions", model, self.definition_length, ("definition",))
        return out

    def load(self, inputs: Mapping[str, Any], seed: int) -> TrainingData:
        import pyarrow.parquet as pq

        from clinsent.data.tokens import read_tables

        has_notes = "row_id" in pq.read_schema(inputs["sets"]).names  # the notes' sets: each sentence's note
        sentences = pd.read_parquet(inputs["sets"], columns=["sent_id", "text", *(["row_id"] if has_notes else [])])
        entities = pd.read_parquet(inputs["linked"]) if self.entities else None
        tokens = read_tables(inputs["tokens"]) if "tokens" in inputs else None
        definitions = read_tables(inputs["definition_tokens"]) if "definition_tokens" in inputs else None
        plan = pd.read_parquet(inputs["plan"])
        return PlanData(plan, sentences, entities, about=self.about(), tokens=tokens, definitions=definitions)

    def about(self) -> dict[str, str]:
        """The card's words for these sentences (:meth:`PlanData.summary`)."""
        s = self.shape()
        if s.source != "notes":
            return {"description": f"sentences of the sentence corpus `{s.source}`", "source": s.source}
        sets = CORPUS_WORDS[s.corpus]
        if 0 < s.none_share < 1:
            sets += f", {s.none_share:g} of each batch from S_none"
        return {"description": f"{sets} of the notes", "source": "notes"}


_NOT_THE_PLANS = ("entities", "max_length", "definition_length", "definition_model")  # a plan is shared across them

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
        tokens: Tables | None = None,
        definitions: Tables | None = None,
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
        self.tables: dict[str, TokenTable] = {}
        if tokens is not None:
            self._token_positions(df, tokens, definitions if entities is not None else None)

    def _token_positions(self, df: pd.DataFrame, tokens: Tables, definitions: Tables | None) -> None:
        """Every plan row as positions in the token tables, in step order (each step's rows a
        slice): its sentence's row, and (entities) its chosen entity's token span and its
        definition's row (-1: none)."""
        steps = df["step"].to_numpy()
        order = np.argsort(steps, kind="stable")  # each step's rows in their plan order
        self._starts = np.searchsorted(steps[order], np.arange(int(steps.max(initial=-1)) + 2))
        rows = tokens.rows_of(df["sent_id"].to_numpy()[order], "the batch plan's sentences")
        self.tables = {"text": tokens.columns["text"]}
        self._index: dict[str, np.ndarray] = {"text": rows}
        self._values: dict[str, np.ndarray] = {}
        if definitions is not None:
            if tokens.spans is None:
                raise ValueError("the sentences' token file has no entity spans; rerun the tokens rule")
            start, end = tokens.spans.lookup(rows, df["ent_idx"].to_numpy()[order])
            self._values = {"span_start": start, "span_end": end}
            self.tables["definition"] = definitions.columns["definition"]
            self._index["definition"] = definitions.find(df["term_id"].to_numpy()[order])

    def has_tokens(self) -> bool:
        return bool(self.tables)

    def positions(self, step: int) -> StepRows:
        a, b = int(self._starts[step - 1]), int(self._starts[step])
        return StepRows(
            b - a,
            self.tables,
            {k: v[a:b] for k, v in self._index.items()},
            {k: v[a:b] for k, v in self._values.items()},
            frame=lambda: self.batch(step),
        )

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
