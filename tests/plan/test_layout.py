"""The package's import graph: methods never reach into the training loop, and no two modules
import each other (imports under ``if TYPE_CHECKING:`` are annotations and do not count)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"


def _graph() -> dict[str, set[str]]:
    modules = {
        ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__"): p for p in SRC.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        typing_only = {
            id(sub)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for sub in ast.walk(node)
        }
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "clinsent.losses.simcse" in graph["clinsent.methods.simcse"]  # inside build_loss: counted
    assert "clinsent.methods.simcse" not in graph["clinsent.losses.simcse"]  # under TYPE_CHECKING: not


def test_no_two_modules_import_each_other() -> None:
    graph = _graph()
    pairs = sorted({tuple(sorted((a, b))) for a, deps in graph.items() for b in deps if a in graph[b]})
    assert not pairs, pairs


def test_methods_do_not_import_the_training_loop() -> None:
    graph = _graph()
    found = [
        (a, b)
        for a, deps in graph.items()
        for b in deps
        if a.startswith("clinsent.methods") and b.startswith("clinsent.train")
    ]
    assert not found, found


def test_the_fidelity_page_names_tests_that_exist() -> None:
    """docs/fidelity.md cites `file.py::test_name` (or `::test_name` after a cited file): each exists."""
    import re

    page = (REPO / "docs" / "fidelity.md").read_text()
    cited, current = [], None
    for m in re.finditer(r"`(?:(test_\w+\.py))?::(test_\w+)`", page):
        current = m.group(1) or current
        cited.append((current, m.group(2)))
    assert len(cited) > 30
    for file, name in cited:  # a test module by its name, in its package's folder under tests/
        (found,) = (REPO / "tests").rglob(file)
        assert re.search(rf"^def {name}\(", found.read_text(), re.M), (file, name)


def test_the_readme_is_one_short_page_whose_links_all_resolve() -> None:
    """The README stays at most 150 lines; every relative link in it (into docs/, config/) points
    at a file that exists (the docs site's own links are checked by `mkdocs build --strict`), and
    every page of docs/ is in the site's nav."""
    import re

    import yaml

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    links = [t for t in re.findall(r"\]\(([^)#\s]+)", readme) if "://" not in t]
    assert links and all((REPO / t).exists() for t in links), [t for t in links if not (REPO / t).exists()]
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]

    def pages(items: list) -> set[str]:
        out: set[str] = set()
        for item in items:
            for value in item.values():
                out |= pages(value) if isinstance(value, list) else {value}
        return out

    assert pages(nav) == {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}


def test_licence_and_citation_agree_with_the_package() -> None:
    """LICENSE is the licence pyproject.toml names; CITATION.cff has what the Citation File Format
    1.2.0 requires (cff-version, message, title, authors with a name) and the package's version
    and licence (the checks of `cffconvert --validate` that matter here, without its pins)."""
    import tomllib

    import yaml

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    licence = project["license"]["text"]
    assert licence == "Apache-2.0" and "Apache License" in (REPO / "LICENSE").read_text()[:200]
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["message"].strip() and cff["title"].strip()
    assert cff["authors"] and all(a.get("name") or a.get("family-names") for a in cff["authors"])
    assert (str(cff["version"]), cff["license"], cff["type"]) == (project["version"], licence, "software")
    assert set(cff) <= {
        "cff-version", "message", "title", "authors", "version", "date-released", "license", "type",
        "keywords", "abstract", "repository-code", "url", "doi", "identifiers", "preferred-citation", "references",
    }  # fmt: skip
