"""The plan's jobs: the rules of :mod:`clinsent.plan.rules` walked from ``all``'s inputs, as
Snakemake builds its DAG of a run from scratch (each file asked for is made by the one rule whose
output pattern it matches, under the run's wildcard constraints; that job's inputs are asked for
in turn; a file no rule makes is the user's). :func:`job_counts` is what ``snakemake -n`` lists.

``tests/plan/test_plan.py`` checks every job (rule, wildcards, inputs, outputs) and the counts
against Snakemake's own DAG of every config (``bench/dag_dump.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clinsent import paths
from clinsent.plan.rules import RULES, Declared, files_of

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

DEFAULT = ".+"  # Snakemake's wildcard without a constraint


@dataclass(frozen=True)
class Job:
    """One job of the DAG: its rule, wildcards, inputs (as the rule's script reads them) and outputs."""

    rule: str
    wildcards: dict[str, str]
    inputs: Declared
    outputs: list[str]


def _regex(pattern: str, constraints: dict[str, str]) -> re.Pattern[str]:
    """Snakemake's reading of an output pattern: each wildcard a named group under its constraint."""
    out, seen, at = [], set(), 0
    for m in re.finditer(r"\{(\w+)\}", pattern):
        out.append(re.escape(pattern[at : m.start()]))
        name = m.group(1)
        out.append(f"(?P={name})" if name in seen else f"(?P<{name}>{constraints.get(name, DEFAULT)})")
        seen.add(name)
        at = m.end()
    out.append(re.escape(pattern[at:]))
    return re.compile("".join(out))


def _match(file: str, regexes: list[re.Pattern[str]]) -> dict[str, str] | None:
    """The wildcards of the first output pattern a file matches, or None."""
    for regex in regexes:
        if m := regex.fullmatch(file):
            return m.groupdict()
    return None


class AmbiguousFile(ValueError):
    """Two rules make the same file: the DAG cannot choose (Snakemake refuses it too)."""


def _patterns(plan: Plan) -> list[tuple[str, list[str], list[re.Pattern[str]]]]:
    """(rule, its output patterns, their regexes) of every rule that makes files."""
    constraints = plan.run.wildcard_constraints()
    patterns: list[tuple[str, list[str], list[re.Pattern[str]]]] = []
    for name, rule in RULES.items():
        outputs = files_of(rule.outputs(plan))
        if outputs:
            patterns.append((name, outputs, [_regex(o, constraints) for o in outputs]))
    return patterns


def made_by(plan: Plan, file: str) -> str | None:
    """The rule whose output pattern ``file`` matches, or None (a user's file)."""
    return next((name for name, _, regexes in _patterns(plan) if _match(file, regexes) is not None), None)


def jobs(plan: Plan) -> list[Job]:
    """Every job of a run from scratch, ``all`` first, then in the order they are first asked for."""
    patterns = _patterns(plan)
    made: dict[str, Job] = {}
    first = Job("all", {}, RULES["all"].inputs(plan, {}), [])
    found = [first]
    wanted = list(reversed(files_of(first.inputs)))
    while wanted:
        file = wanted.pop()
        if file in made:
            continue
        matches = [
            (name, outputs, wildcards)
            for name, outputs, regexes in patterns
            if (wildcards := _match(file, regexes)) is not None
        ]
        if not matches:
            continue  # the user's file (or a missing one: Snakemake's dry run names it)
        if len(matches) > 1:
            raise AmbiguousFile(f"{file}: made by the rules {', '.join(n for n, _, _ in matches)}")
        name, outputs, wildcards = matches[0]
        job = Job(name, wildcards, RULES[name].inputs(plan, wildcards), [paths.fill(o, **wildcards) for o in outputs])
        found.append(job)
        made.update(dict.fromkeys(job.outputs, job))
        wanted += reversed(files_of(job.inputs))
    return found


def job_counts(plan: Plan) -> dict[str, int]:
    """How many jobs each rule gets in a run from scratch (what ``snakemake -n`` lists)."""
    return dict(sorted(Counter(job.rule for job in jobs(plan)).items()))
