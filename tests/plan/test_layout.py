"""The repository's pages: the fidelity page cites tests that exist, the README is one short page
whose links resolve, the licence and citation agree with the package (the import graph's checks
are tests/plan/test_layers.py's)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"


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
