"""Hypothesis retrieval on an NLI validation file (the clinical sentence-transformers NLI
study's MRR evaluation): for each premise with an entailment hypothesis, every distinct
hypothesis of the file is a candidate (``candidates: all``), or, as the study does ("all other
entailment hypothesis sentences"), every distinct entailment hypothesis (``candidates:
entailment``), ranked by the cosine of its embedding to the premise's.

The rank of a premise is 1 + the number of candidates scoring strictly above its best
entailment hypothesis (ties count in the premise's favour; a premise with several entailment
hypotheses counts the best-ranked one). ``mrr`` is the mean of 1 / rank, ``recall@k`` the share
of premises whose rank is at most k. Files: the NLI readers of :mod:`clinsent.data.nli`
(``nli_jsonl``: SNLI / MultiNLI / MedNLI jsonl; ``nli_tsv``: ``premise, hypothesis, label``);
SNLI's ``-`` labels are skipped, an unknown label stops with the file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from clinsent.config.declare import knob
from clinsent.data.nli import NLI_FORMATS
from clinsent.errors import InputError
from clinsent.evaluation.bootstrap import Items
from clinsent.tasks.base import TASKS, Task


@dataclass(frozen=True)
class RetrievalSettings:
    path: str = knob("", "the NLI file whose premises query its hypotheses", required=True)
    format: str = knob(
        "nli_jsonl",
        "a registered NLI format (clinsent.data.nli.NLI_FORMATS): nli_jsonl (SNLI/MultiNLI/MedNLI) or nli_tsv",
        names=NLI_FORMATS,
    )
    ks: tuple[int, ...] = knob((1, 5, 10), "the k of recall@k")
    candidates: Literal["all", "entailment"] = knob(
        "all",
        "all: every distinct hypothesis of the file; entailment: "
        "the entailment hypotheses only (the clinical NLI study)",
    )


@dataclass(frozen=True)
class RetrievalSet:
    premises: list[str]
    hypotheses: list[str]  # the candidates: every distinct hypothesis of the file
    relevant: list[list[int]]  # per premise, the candidate indices of its entailment hypotheses
    skipped: int  # pairs with SNLI's "-" label


def read_retrieval(path: str | Path, fmt: str, candidates: str = "all") -> RetrievalSet:
    if not Path(path).exists():
        raise InputError(path, "the retrieval file does not exist", "fix `eval_sets.<name>.path`")
    skipped = {"no_gold_label": 0}
    pairs = NLI_FORMATS.get(fmt, where="config: eval_sets.<name>.format")(path, skipped)
    hypotheses = list(dict.fromkeys(h for _, h, lab in pairs if candidates == "all" or lab == "entailment"))
    index = {h: i for i, h in enumerate(hypotheses)}
    relevant: dict[str, list[int]] = {}
    for premise, hypothesis, label in pairs:
        if label == "entailment":
            relevant.setdefault(premise, []).append(index[hypothesis])
    if not relevant:
        raise InputError(
            path,
            f"no premise has an entailment hypothesis ({len(pairs)} pairs)",
            "point the eval set at an NLI file with entailment pairs",
        )
    return RetrievalSet(list(relevant), hypotheses, list(relevant.values()), skipped["no_gold_label"])


def ranks(scores: np.ndarray, relevant: list[list[int]]) -> np.ndarray:
    """Per query (a row of ``scores`` over the candidates), 1 + the candidates above its best relevant one."""
    out = np.empty(len(relevant), dtype=np.int64)
    for q, rel in enumerate(relevant):
        best = scores[q, rel].max()
        out[q] = 1 + int((scores[q] > best).sum())
    return out


@TASKS.register("retrieval", settings=RetrievalSettings)
class Retrieval(Task[RetrievalSettings]):
    headline = "mrr"
    metrics: tuple[str, ...] = ("mrr",)
    settings: RetrievalSettings

    def __init__(self, set_name: str, settings: RetrievalSettings) -> None:
        super().__init__(set_name, settings)
        if not settings.ks or min(settings.ks) < 1:
            raise InputError(f"config: eval_sets.{set_name}.ks", f"{list(settings.ks)}", "give one or more k >= 1")
        self.metrics = ("mrr", *(f"recall@{k}" for k in settings.ks))

    def files(self) -> list[str]:
        return [self.settings.path]

    def read(self) -> RetrievalSet:
        return read_retrieval(self.settings.path, self.settings.format, self.settings.candidates)

    def texts(self) -> list[str]:
        d = self.data
        return list(dict.fromkeys([*d.premises, *d.hypotheses]))

    def _ranks(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        d = self.data
        q = self.lookup(texts, vectors, d.premises).astype(np.float64)
        c = self.lookup(texts, vectors, d.hypotheses).astype(np.float64)
        q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        c /= np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
        return ranks(q @ c.T, d.relevant)

    def items(self, texts: list[str], vectors: np.ndarray) -> Items:
        """The queries (premises), each with the rank of its first relevant candidate: MRR and recall@k
        of the resampled queries."""
        r, ks = self._ranks(texts, vectors), list(self.settings.ks)
        return Items(
            len(r),
            ("mrr", *(f"recall@{k}" for k in ks)),
            lambda i: np.stack([(1.0 / r[i]).mean(axis=-1), *((r[i] <= k).mean(axis=-1) for k in ks)]),
            "queries",
        )

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        d = self.data
        r = self._ranks(texts, vectors)
        out = {"mrr": float(np.mean(1.0 / r))}
        out.update({f"recall@{k}": float(np.mean(r <= k)) for k in self.settings.ks})
        out.update(n_queries=float(len(r)), n_candidates=float(len(d.hypotheses)))
        return out

    def statistics(self) -> dict[str, Any]:
        d = self.data
        return {
            "task": "hypothesis retrieval",
            "unit": "premises",
            "splits": {"all": len(d.premises)},
            "used": "all",
            "metric": "mrr",
            "candidates": len(d.hypotheses),
            "skipped_no_gold": d.skipped,
        }
