"""Docs that read anywhere (issue 61): a page that includes a generated file (pymdownx.snippets'
``--8<--``) links that file where the include stands, so a reader outside the built site (a
repository browser, an editor) finds the content the include line stands for."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')
LINK = re.compile(r'\]\(([^)\s]+)\)|href="([^"]+)"')


def _unlinked(page: Path, root: Path = REPO) -> list[str]:
    """The include lines of ``page`` (paths from ``root``, as snippets' base_path reads them)
    without a link to the included file in the paragraph above (8 lines)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        m = INCLUDE.match(line)
        if not m:
            continue
        wanted = (root / m.group(1)).resolve()
        links = [a or b for text in lines[max(0, i - 8) : i] for a, b in LINK.findall(text)]
        if not any((page.parent / link.split("#")[0]).resolve() == wanted for link in links):
            out.append(f"{page.relative_to(root)}:{i + 1}: {line.strip()}")
    return out


def test_every_include_links_its_file() -> None:
    pages = sorted((REPO / "docs").rglob("*.md"))
    found = [hit for page in pages for hit in _unlinked(page)]
    assert not found, "link the included file above its include line:\n" + "\n".join(found)
    assert sum(INCLUDE.match(x) is not None for p in pages for x in p.read_text().splitlines()) >= 2


def test_the_check_finds_an_include_without_its_link(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "x.md"
    page.write_text('Some words.\n\n--8<-- "bench/results/embed.md"\n')
    assert _unlinked(page, tmp_path) == ['docs/x.md:3: --8<-- "bench/results/embed.md"']
    for link in ('<a href="../bench/results/embed.md">the table</a>', "[the table](../bench/results/embed.md)"):
        page.write_text(f'The tables: {link}.\n\n--8<-- "bench/results/embed.md"\n')
        assert _unlinked(page, tmp_path) == []
    page.write_text('The tables: [another](../bench/results/other.md).\n\n--8<-- "bench/results/embed.md"\n')
    assert len(_unlinked(page, tmp_path)) == 1
