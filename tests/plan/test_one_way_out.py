"""One way out (issue 72): no module of the package opens a file for writing outside the writers
of ``clinsent.io.files`` (every one of which asks the guard, ``clinsent.safety.guard.claim``),
except inside a block that one of those writers opened on a claimed target (``with
atomic_path(...) as tmp``: the library then writes the temporary file), and the two lock files
named below. The rule's layer: ``clinsent.safety`` imports nothing of ``clinsent.io``, and no
module imports inside a function to step around an import circle between them."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "clinsent"
WRITERS = "io/files.py"  # the writers themselves
# lock files that are not outputs: each kept by its own rule (the lock beside an output is claimed first)
LOCKS = {
    "safety/exclusive.py": "the one-writer lock beside an output, made after claim() of that output",
    "gpu/slots.py": "the GPU slots' lock files, in the lock folder the dry run checks (clinsent.gpu.slots)",
}
WRITE_MODES = set("wax+")
OS_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
STAGING = {"atomic_path", "atomic_folder"}  # writers whose block writes a claimed temporary target


def _mode(call: ast.Call, position: int) -> str:
    """The mode string of an ``open``-like call (positional ``position`` or ``mode=``), "" when not a constant."""
    node = next((k.value for k in call.keywords if k.arg == "mode"), None)
    if node is None and len(call.args) > position:
        node = call.args[position]
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _writes(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name) and f.id == "open":
        return bool(WRITE_MODES & set(_mode(call, 1)))
    if not isinstance(f, ast.Attribute):
        return False
    if f.attr in ("write_text", "write_bytes"):
        return True
    if f.attr == "open" and isinstance(f.value, ast.Name) and f.value.id == "os":
        flags = (
            {n.attr for n in ast.walk(call.args[1]) if isinstance(n, ast.Attribute)} if len(call.args) > 1 else set()
        )
        return bool(flags & OS_WRITE_FLAGS)
    if f.attr == "open":  # Path.open(mode), gzip.open(path, mode), ...
        position = 0 if not (isinstance(f.value, ast.Name) and f.value.id in ("gzip", "bz2", "lzma", "io")) else 1
        return bool(WRITE_MODES & set(_mode(call, position)))
    return False


def _staged(with_node: ast.With) -> bool:
    for item in with_node.items:
        call = item.context_expr
        if isinstance(call, ast.Call):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if name in STAGING:
                return True
    return False


def unguarded_writes(path: Path) -> list[int]:
    """The lines of ``path`` that open a file for writing outside a staged block."""
    found: list[int] = []

    def visit(node: ast.AST, staged: bool) -> None:
        if isinstance(node, ast.With):
            staged = staged or _staged(node)
        if isinstance(node, ast.Call) and _writes(node) and not staged:
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, staged)

    visit(ast.parse(path.read_text()), False)
    return found


def test_no_module_opens_a_file_for_writing_outside_the_writers() -> None:
    found = [
        f"{p.relative_to(SRC)}:{line}"
        for p in sorted(SRC.rglob("*.py"))
        if p.relative_to(SRC).as_posix() not in {WRITERS, *LOCKS}
        for line in unguarded_writes(p)
    ]
    assert not found, f"files opened for writing outside clinsent.io.files (use its writers): {found}"


def test_the_checker_sees_each_kind_of_write(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os, gzip\n"
        "open(p, 'w')\n"  # 2
        "open(p)\n"
        "p.write_text('x')\n"  # 4
        "p.open('a')\n"  # 5
        "p.open()\n"
        "os.open(p, os.O_RDONLY)\n"
        "os.open(p, os.O_WRONLY | os.O_CREAT)\n"  # 8
        "gzip.open(p, 'wt')\n"  # 9
        "with atomic_path(p) as tmp:\n"
        "    tmp.write_text('x')\n"
    )
    assert unguarded_writes(sample) == [2, 4, 5, 8, 9]


def test_the_rules_layer_imports_nothing_above_it() -> None:
    """clinsent.safety holds the rules (the guard, the locks, the places, reach, content keys):
    it imports no module of clinsent.io (the writers import the rules, never the other way)."""
    found = []
    for p in sorted((SRC / "safety").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("clinsent.io"):
                found.append(f"{p.relative_to(SRC)}:{node.lineno}")
    assert not found, found
