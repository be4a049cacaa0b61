"""The package's modules form layers: no import circle (imports inside functions, under
``TYPE_CHECKING`` and ``from package import module`` all count), and nothing below the planner
imports it; kinds, tasks and methods see the plan through :class:`PlanView`."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
BELOW_THE_PLANNER = (
    "report",
    "tasks",
    "methods",
    "losses",
    "models",
    "evaluation",
    "corpus",
    "data",
    "train",
    "finetune",
    "embedding",
    "io",
    "gpu",
    "safety",
)
# The package root holds only what every layer uses (and the entry point): each else lives in the
# package of its idea. A new root module is a decision, made here.
ROOT_MODULES = {
    "clinsent": "the package",
    "clinsent.__main__": "python -m clinsent COMMAND",
    "clinsent.errors": "the error kinds and the rules for naming a value in a message, used by every layer",
    "clinsent.paths": "the path grammar of results, read by the planner, the jobs and the report",
    "clinsent.registry": "the registry every method, task, kind and reader registers in",
    "clinsent.run_ref": "a run reference (method@base), read by the report's kinds and the job grid",
    "clinsent.repository": "where the repository's files are, found in one place",
    "clinsent.optimisation": "the optimisation core shared by training, fine-tuning and the eval heads",
}


def _modules() -> dict[str, Path]:
    found = {}
    for f in SRC.rglob("*.py"):
        name = ".".join(f.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = f
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in its text."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{up}.{base}" if base else up
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                found = resolve(target) if target.startswith("clinsent") else None
                if found and found != name:
                    graph[name].add(found)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "clinsent.methods.simcse" in graph["clinsent.losses.simcse"]  # the loss reads its settings' defaults
    assert "clinsent.losses.base" in graph["clinsent.methods.base"]  # under TYPE_CHECKING: counted too
    assert "clinsent.losses.simcse" not in graph["clinsent.methods.simcse"]  # loaded by name (loss_class)


def test_methods_do_not_import_the_training_loop() -> None:
    found = [
        (a, b)
        for a, deps in import_graph().items()
        for b in deps
        if a.startswith("clinsent.methods") and b.startswith("clinsent.train")
    ]
    assert not found, found


def test_no_import_circle() -> None:
    graph = import_graph()
    assert not circles(graph), circles(graph)
    graph["clinsent.tasks.base"].add("clinsent.plan.layout")  # the check sees one when there is one
    graph["clinsent.plan.layout"].add("clinsent.tasks.base")
    assert circles(graph)


def test_nothing_below_the_planner_imports_it() -> None:
    upward = [
        f"{m} imports {t}"
        for m, targets in import_graph().items()
        if m.split(".")[1:2] and m.split(".")[1] in BELOW_THE_PLANNER
        for t in targets
        if t == "clinsent.plan" or t.startswith("clinsent.plan.")
    ]
    assert not upward, upward


def test_tests_mirror_the_packages_and_share_helpers_through_testkit() -> None:
    """Each test module lives in the folder of what it tests; none imports another test module
    (shared helpers are :mod:`testkit`'s)."""
    tests = SRC.parent / "tests"
    assert not list(tests.glob("test_*.py")), "a test module belongs in its package's folder"
    borrowed = [
        f"{f.relative_to(tests)}: {ast.unparse(node)}"
        for f in tests.rglob("*.py")
        for node in ast.walk(ast.parse(f.read_text()))
        if isinstance(node, ast.ImportFrom | ast.Import)
        and any(
            (name or "").split(".")[-1].startswith(("test_", "conftest"))
            for name in ([node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names])
        )
    ]
    assert not borrowed, borrowed


def test_the_package_root_holds_only_cross_cutting_modules() -> None:
    root = sorted(m for m, path in _modules().items() if path.parent == SRC / "clinsent")
    assert root == sorted(ROOT_MODULES), "a module at the package root belongs in the package of its idea"
