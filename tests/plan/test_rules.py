"""The rules the plan declares (clinsent.plan.rules) and the walk that gives the plan's jobs
(clinsent.plan.jobs) on small made-up rules: Snakemake's reading of an output pattern, a job
per wildcard value, a file two rules make refused. The real rules are checked job by job against
Snakemake's own DAG in tests/plan/test_plan.py."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from snakemake.io import regex_from_filepattern

from clinsent import paths
from clinsent.plan import jobs as walk
from clinsent.plan.rules import RULES, Folder, files_of
from clinsent.plan.rules.base import Declarations


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("r/" + paths.MODEL, "r/models/simcse/mini/seed0/model"),
        ("r/a.b/{x}/c{y}.{x}.txt", "r/a.b/one/c2.one.txt"),
        ("r/a.b/{x}/c{y}.{x}.txt", "r/a.b/one/c2.two.txt"),  # a repeated wildcard must repeat its value
        ("r/a.b/{x}/c{y}.{x}.txt", "r/aXb/one/c2.one.txt"),  # a dot is a dot
        ("r/embeddings/{eval_set}.parquet", "r/embeddings/sts/dev.parquet"),  # `.+` crosses a slash
    ],
)
def test_an_output_pattern_is_read_as_snakemake_reads_it(pattern: str, path: str) -> None:
    theirs = re.match(regex_from_filepattern(pattern), path)
    mine = walk._regex(pattern, {}).fullmatch(path)
    assert (mine and mine.groupdict()) == (theirs and theirs.groupdict())


def test_a_constraint_narrows_a_wildcard() -> None:
    assert walk._regex("r/{shard}.parquet", {"shard": r"\d{3}"}).fullmatch("r/001.parquet")
    assert not walk._regex("r/{shard}.parquet", {"shard": r"\d{3}"}).fullmatch("r/01.parquet")


def _plan(constraints: dict[str, str] | None = None) -> Any:
    return SimpleNamespace(
        run=SimpleNamespace(wildcard_constraints=lambda: constraints or {}), files=SimpleNamespace(raw_inputs={})
    )


def test_the_walk_makes_one_job_per_wildcard_value_and_stops_at_the_users_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rules = Declarations()

    @rules.rule(lambda p: [], name="all")
    def targets(p: Any, wc: Any) -> list[str]:
        return ["r/report.csv"]

    @rules.rule(lambda p: {"table": "r/report.csv", "figure": "r/report.png"})
    def report(p: Any, wc: Any) -> dict[str, Any]:
        return {"metrics": [f"r/metrics/{s}.json" for s in ("a", "b")], "figure_data": "r/points.csv"}

    @rules.rule(lambda p: ["r/points.csv"])
    def points(p: Any, wc: Any) -> list[str]:
        return ["r/metrics/a.json"]  # asked for twice: one job

    @rules.rule(lambda p: [Folder("r/metrics/{set}.json")])
    def evaluate(p: Any, wc: Any) -> list[str]:
        return [f"data/{wc['set']}.tsv"]  # the user's file: no rule makes it

    monkeypatch.setattr(walk, "RULES", rules)
    found = walk.jobs(_plan({"set": "a|b"}))
    assert [(j.rule, j.wildcards) for j in found] == [
        ("all", {}),
        ("report", {}),
        ("evaluate", {"set": "a"}),
        ("evaluate", {"set": "b"}),
        ("points", {}),
    ]
    assert found[1].outputs == ["r/report.csv", "r/report.png"]
    assert walk.job_counts(_plan({"set": "a|b"})) == {"all": 1, "evaluate": 2, "points": 1, "report": 1}
    # a constraint that leaves a file to no rule leaves it to the user
    assert walk.job_counts(_plan({"set": "a"})) == {"all": 1, "evaluate": 1, "points": 1, "report": 1}


def test_a_file_two_rules_make_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = Declarations()
    rules.rule(lambda p: [], name="all")(lambda p, wc: ["r/x.csv"])
    rules.rule(lambda p: ["r/{name}.csv"], name="one")(lambda p, wc: [])
    rules.rule(lambda p: ["r/x.{ext}"], name="other")(lambda p, wc: [])
    monkeypatch.setattr(walk, "RULES", rules)
    with pytest.raises(walk.AmbiguousFile, match=r"r/x.csv: made by the rules one, other"):
        walk.jobs(_plan())


def test_a_rule_is_declared_once() -> None:
    rules = Declarations()
    rules.rule(lambda p: ["r/x"], name="x")(lambda p, wc: [])
    with pytest.raises(ValueError, match="rule x is declared twice"):
        rules.rule(lambda p: ["r/y"], name="x")(lambda p, wc: [])


def test_every_rule_of_the_snakefile_takes_its_inputs_and_outputs_from_its_declaration() -> None:
    """Each rule the .smk files define is declared under its name and takes its ``input:`` and
    ``output:`` from there (a rule with no inputs declares none); each has its log's step."""
    from testkit import REPO

    smk = "\n".join(p.read_text() for p in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))])
    blocks = dict(re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", smk, re.M))
    assert sorted(blocks) == sorted(RULES)
    for name, block in blocks.items():
        declared = RULES[name]
        assert f'IN("{name}")' in block or ("input:" not in block and declared.inputs(_plan(), {}) == []), name
        assert f'OUT("{name}"' in block or ("output:" not in block and declared.outputs(_plan()) == []), name
    assert set(RULES) - {"all", "corpus_embeddings"} == set(paths.STEPS)


def test_files_of_keeps_the_order_of_names_and_lists() -> None:
    assert files_of({"a": "x", "b": ["y", "z"], "c": []}) == ["x", "y", "z"]
    assert files_of(["x", "y"]) == ["x", "y"]
