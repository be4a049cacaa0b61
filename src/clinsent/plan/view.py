"""The plan as a table or figure kind sees it (:class:`KindView`, a
:class:`clinsent.report.kinds.base.PlanView`): the results folder, the methods and eval sets as
read, the default base model and the few files a kind cites; never the planner itself."""

from __future__ import annotations

from collections.abc import Mapping

from clinsent import paths
from clinsent.methods.entries import MethodEntry
from clinsent.plan.files import RunFiles
from clinsent.plan.run import RunView
from clinsent.run_ref import split_run
from clinsent.tasks.config import EvalSetEntry


class KindView:
    """What kinds read of one run's plan: its config view and its files."""

    def __init__(self, run: RunView, files: RunFiles) -> None:
        self._run = run
        self._files = files

    @property
    def tree(self) -> paths.Tree:
        return self._run.tree

    @property
    def methods(self) -> Mapping[str, MethodEntry]:
        return self._run.methods

    @property
    def eval_sets(self) -> Mapping[str, EvalSetEntry]:
        return self._run.eval_sets

    @property
    def default_base(self) -> str:
        return self._run.default_base

    def eval_set_files(self, name: str) -> list[str]:
        return self._files.eval_set_files(name)

    def first_seed_embeddings(self, ref: str, eval_set: str) -> str:
        """The embeddings of a run's first seed on an eval set (what example tables and t-SNE show)."""
        m, b = split_run(ref, self._run.grid.default_base)
        return self._files.embeddings(m, b, self._run.grid.seeds_of[m][0], eval_set)

    def corpus_stats_path(self, corpus: str) -> str:
        return self._files.corpus_stats_path(corpus)

    def documents_stats_path(self) -> str:
        return self._files.documents_stats_path()
