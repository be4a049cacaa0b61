"""What a table or figure kind is: its keys (a knob dataclass, with their defaults), the runs it
cites, the names it refers to, the extra inputs it reads, and how it builds its output.

A kind module defines its keys as a frozen dataclass of :func:`clinsent.config.declare.knob` fields (a
list of items is a tuple of another such dataclass; a knob whose default is None is a key the
entry may leave out) and a :class:`TableKind` or :class:`FigureKind` subclass registered with
``@TABLE_KINDS.register("name", settings=Knobs)`` or ``@FIGURE_KINDS.register("name",
settings=Knobs)``: the entry's JSON schema is generated from the dataclass, as a method's is.
The plan (:mod:`clinsent.plan`) checks each ``tables.<id>`` / ``figures.<id>`` entry against its
kind's keys (filling in their defaults), adds the runs it cites to the grid, and gives the
``paper_report`` job the files its kind asks for (``inputs``) and what else its output depends
on (``params``); :func:`clinsent.report.build.build_paper_report` calls the kind to build it.
The kind's module also holds that build code (its table, points and figure; shared helpers in
:mod:`clinsent.report.cells`, :mod:`clinsent.report.tables` and :mod:`clinsent.report.figures`).
Nothing else names a kind, so a new one is one module (here, or a plugin listed under the
config's ``plugins``) and its registration line.

The plan reads the kinds when the Snakefile is parsed: their modules import numpy and pandas
(which the plan has loaded already) but matplotlib, scipy and scikit-learn only inside the code
that draws or computes with them, and never torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

from clinsent.config.declare import knob, settings_schema, to_params
from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.registry import Registry, did_you_mean

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.methods.entries import MethodEntry
    from clinsent.paths import Tree
    from clinsent.report.paired import Paired
    from clinsent.report.spread import Spread
    from clinsent.tasks.config import EvalSetEntry


class PlanView(Protocol):
    """What a kind reads of the run's plan while the config is read (its checks, inputs and
    params): the results folder, the methods and eval sets as read through their registries, the
    default base model and the few files a kind cites. The planner gives each kind the plan's
    :class:`clinsent.plan.view.KindView` (``Plan.view``); a kind never imports the planner."""

    @property
    def tree(self) -> Tree: ...

    @property
    def methods(self) -> Mapping[str, MethodEntry]: ...

    @property
    def eval_sets(self) -> Mapping[str, EvalSetEntry]: ...

    @property
    def default_base(self) -> str: ...

    def eval_set_files(self, name: str) -> list[str]: ...

    def first_seed_embeddings(self, ref: str, eval_set: str) -> str: ...

    def corpus_stats_path(self, corpus: str) -> str: ...

    def documents_stats_path(self) -> str: ...


DEFAULT_TABLE = "runs"
DEFAULT_FIGURE = "alignment_uniformity"

# keys every table and figure has
COMMON = {
    "kind": {"type": "string", "description": "the kind (a registered name)"},
    "caption": {"type": "string", "description": "the caption (md/tex) and the report's text"},
}


@dataclass(frozen=True)
class NoKnobs:
    """A kind without keys of its own."""


@dataclass(frozen=True)
class LabelledRun:
    """An item of many kinds: a label and the run it shows."""

    label: str = knob("", "its label", required=True)
    run: str = knob("", "method or method@base_model", required=True)


# the paper's numbers of a table row: one list per column group, one value per column
PaperCells = tuple[tuple[str | None, ...] | None, ...]
PAPER_DOC = "the paper's numbers: one list per column group, one value per column"


def item_runs(section: str, key: str, entry: Mapping[str, Any], items: str) -> list[tuple[str, str]]:
    """(where, run) of each item of ``entry[items]`` (a list of {label, run, ...})."""
    return [(f"{section}.{key}.{items}[{i}]", item["run"]) for i, item in enumerate(entry[items])]


def eval_set_names(where: str, *names: str) -> list[tuple[str, str, str]]:
    """(where, name, "eval_sets") for each eval set an entry names."""
    return [(where, name, "eval_sets") for name in names]


@dataclass
class ReportContext:
    """What ``paper_report`` hands a kind when it builds one entry."""

    summary: pd.DataFrame  # results/summary.csv
    curves: pd.DataFrame  # every run's training curve, with its selected step
    eval_sets: dict[str, str]  # eval set or fine-tune entry -> the headline metric of its task
    default_base: str
    paper_label: str
    inputs: dict[str, Any] = field(default_factory=dict)  # this entry's files (the kind's `inputs`)
    params: dict[str, Any] = field(default_factory=dict)  # this entry's params (the kind's `params`)
    paired: Paired | None = None  # every run's bootstrap replicates: paired tests between two runs


class Kind:
    """A table or figure kind. ``settings_class``: its keys, a knob dataclass (see the module); the
    entry reaches each method as the config wrote it, checked and with the defaults filled in."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    settings_class: ClassVar[type] = NoKnobs
    note_sentences: ClassVar[bool] = False  # shows the notes' sentence sets: the notes pipeline runs

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(where, run reference) of every run the entry cites: each joins the job grid."""
        return []

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """(where, name, what) of the eval sets, sentence corpora and methods the entry names
        (what: eval_sets, corpora or methods), checked against the config."""
        return []

    def shown_texts(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(where, eval set) of each eval set whose texts the entry writes into its shared output.
        The plan refuses one derived from the notes, or not marked ``text_shareable``."""
        return []

    def check(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> None:
        """Raise an InputError for what only the plan can tell (run when the config is read)."""

    def inputs(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        """Named files the entry reads besides the summary and curves (a path, or a list or dict of
        paths): declared inputs of ``paper_report``, handed back as ``ReportContext.inputs``."""
        return {}

    def params(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        """What else the entry's output depends on (``ReportContext.params``)."""
        return {}

    @classmethod
    def keys(cls) -> dict[str, Any]:
        """The JSON schema of the kind's own keys, from its knob dataclass: "properties" and "required"."""
        return settings_schema(cls.settings_class, optional_keys=True)

    @classmethod
    def schema(cls) -> dict[str, Any]:
        own = cls.keys()
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {**COMMON, **own["properties"]},
            "required": ["caption", *own["required"]],
        }

    @classmethod
    def validate(cls, key: str, entry: dict[str, Any]) -> None:
        """Check ``entry`` against the kind's keys and fill in their defaults (in place)."""
        validator = _validator(cls.schema())
        errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
        if not errors:
            return
        error = errors[0]
        where = ".".join([f"config: {cls.section}.{key}", *(str(p) for p in error.absolute_path)])
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties") or {})
            unknown = next(k for k in error.instance if k not in allowed)
            raise InputError(
                where,
                f"unknown key {unknown!r} for kind {cls.name}{did_you_mean(unknown, allowed)}; "
                f"allowed: {', '.join(allowed)}",
                "see config/README.md for each kind's keys",
            )
        raise InputError(where, f"{error.message} (kind {cls.name})", "see config/README.md for each kind's keys")


class TableKind(Kind):
    section = "tables"
    curves: ClassVar[bool] = False  # also a figure of its runs' training curves (curves_<id>.png/pdf)

    def caption(self, entry: Mapping[str, Any], paper_label: str) -> str:
        return str(entry["caption"])

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        raise NotImplementedError

    def spread(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> Spread | None:
        """Whether the table's rows can be told apart (:mod:`clinsent.report.spread`), for kinds
        whose rows are conditions scored on metrics; None: not judged (descriptive tables)."""
        return None


class FigureKind(Kind):
    section = "figures"

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        """The figure's data (written beside it as <id>.csv)."""
        raise NotImplementedError

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        raise NotImplementedError


class PanelFigure(FigureKind):
    """A figure of one eval set (``eval_set``) with a panel per cited run (``panels``: label and
    run), each panel's data from summary.csv: the box plots and the confusion matrices. A kind
    of this shape gives its points and its drawing (:meth:`panel_points`, :meth:`panel_figure`)."""

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "panels")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", entry["eval_set"])

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return self.panel_points(ctx.summary, entry, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        self.panel_figure(points, entry, out_paths)

    def panel_points(self, summary: pd.DataFrame, figure: Mapping[str, Any], default_base: str) -> pd.DataFrame:
        raise NotImplementedError

    def panel_figure(self, points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
        raise NotImplementedError


KINDS_PACKAGE = "clinsent.report.kinds"  # one module per kind, named as the kind
TABLE_KINDS: Registry[type[TableKind]] = Registry(
    "table kind", "tables.<id>.kind", settings=True, package=KINDS_PACKAGE
)
FIGURE_KINDS: Registry[type[FigureKind]] = Registry(
    "figure kind", "figures.<id>.kind", settings=True, package=KINDS_PACKAGE
)


def table_kind(key: str, entry: Mapping[str, Any]) -> TableKind:
    return TABLE_KINDS.get(str(entry.get("kind", DEFAULT_TABLE)), where=f"config: tables.{key}.kind")()


def figure_kind(key: str, entry: Mapping[str, Any]) -> FigureKind:
    return FIGURE_KINDS.get(str(entry.get("kind", DEFAULT_FIGURE)), where=f"config: figures.{key}.kind")()


class KindEntry(NamedTuple):
    """One table or figure of a run: its id (``tables.<key>``, ``figures.<key>``), its kind (from
    the registry) and its entry, checked against the kind's keys with their defaults filled in."""

    key: str
    kind: Kind
    entry: dict[str, Any]

    @property
    def section(self) -> str:
        """``tables`` or ``figures``."""
        return self.kind.section


def entries(config: RunConfig) -> list[KindEntry]:
    """Every table, then every figure (:class:`KindEntry`): each entry checked against its kind's
    keys and their defaults filled in (the kind types what the config's shell left open)."""
    out: list[KindEntry] = []
    for shells, get in ((config.tables, table_kind), (config.figures, figure_kind)):
        for key, shell in shells.items():
            entry = to_params(shell)
            kind = get(key, entry)
            type(kind).validate(key, entry)
            out.append(KindEntry(key, kind, entry))
    return out


def _validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator that fills in defaults, as Snakemake's ``validate`` does for the config."""
    from jsonschema import Draft202012Validator, validators

    def set_defaults(validator: Any, properties: Mapping[str, Any], instance: Any, schema: Any) -> Any:
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub:
                    instance.setdefault(prop, sub["default"])
        yield from Draft202012Validator.VALIDATORS["properties"](validator, properties, instance, schema)

    return validators.extend(Draft202012Validator, {"properties": set_defaults})(schema)
