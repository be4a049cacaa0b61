"""The results path grammar is written once (:mod:`clinsent.paths`): the plan fills it, the rules
take their patterns from it, and no other file spells a results path pattern."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clinsent import paths

REPO = Path(__file__).resolve().parents[2]

# the folders right under a results folder, as the grammar names them
TOPS = sorted(
    {v.split("/", 1)[0] for k, v in vars(paths).items() if k.isupper() and isinstance(v, str) and "/" in v}
    - {"{method}"}
    | {paths.LOGS, paths.BENCHMARKS, paths.RELEASE}
)
# a run's seed folder or file stem (seed{s}, _seed{{seed}}) or a results folder joined to one of its folders
PATTERN = re.compile(r"[/_\"']seed\{|\}/(" + "|".join(map(re.escape, TOPS)) + r")[/\"]")


def _sources() -> list[Path]:
    files = [REPO / "Snakefile", *REPO.glob("workflow/**/*.smk"), *REPO.glob("workflow/**/*.py")]
    files += [*REPO.glob("src/**/*.py"), *REPO.glob("bench/**/*.py"), *REPO.glob("tests/**/*.py")]
    return [f for f in files if f != REPO / "src/clinsent/paths.py" and ".venv" not in f.parts]


def test_no_results_path_pattern_outside_the_grammar() -> None:
    found = [
        f"{f.relative_to(REPO)}:{n}: {line.strip()}"
        for f in _sources()
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if PATTERN.search(line) and f != Path(__file__).resolve()
    ]
    assert not found, "spell these through clinsent.paths:\n" + "\n".join(found)


def test_the_check_finds_a_pattern_spelled_elsewhere() -> None:
    for spelled in (
        'f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/model"',
        'f"{r}/metrics/{m}/{b}/x.json"',
        "f'{LOGS}/train/{{method}}_seed{{seed}}.log'",
        'f"{results}/stats/run.json"',
    ):
        assert PATTERN.search(spelled), spelled
    assert not PATTERN.search("T.pattern(P.MODEL)")


def test_every_rule_reads_its_patterns_from_the_grammar() -> None:
    """Every log and benchmark of every rule is a step of the grammar, and each step is a rule."""
    rules = set()
    for smk in [REPO / "Snakefile", *REPO.glob("workflow/rules/*.smk")]:
        rules |= set(re.findall(r"^rule (\w+):", smk.read_text(), flags=re.M))
        for kind, rule in re.findall(r"T\.(log|benchmark)\(\"(\w+)\"\)", smk.read_text()):
            assert rule in paths.STEPS, (smk.name, kind, rule)
    with_logs = {r for r in rules if r not in ("all", "corpus_embeddings")}
    assert with_logs == set(paths.STEPS)


def test_a_tree_fills_and_leaves_wildcards() -> None:
    tree = paths.Tree("res")
    assert tree.file(paths.MODEL, method="m", base_model="b", seed=3) == "res/models/m/b/seed3/model"
    assert tree.pattern(paths.MODEL) == "res/models/{method}/{base_model}/seed{seed}/model"
    assert tree.pattern(paths.NOTES_SHARD, n_shards=4) == "res/corpus/shards4/notes/{shard}.parquet"
    assert tree.log("train") == "res/logs/train/{method}_{base_model}_seed{seed}.log"
    assert tree.benchmark("report") == "res/benchmarks/report.tsv"
    assert tree.folder(paths.EMBEDDINGS) == "res/embeddings/"
    assert tree.holds("res/x") and not tree.holds("resx/y")
    with pytest.raises(KeyError, match="seed"):
        tree.file(paths.MODEL, method="m", base_model="b")
