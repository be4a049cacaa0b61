"""The package's modules form layers: every package on a floor (:data:`FLOORS`), and no import
that runs back up a floor (imports inside functions and ``from package import module`` count;
one under ``TYPE_CHECKING``, an annotation only, does not); no import circle at all (there,
``TYPE_CHECKING`` imports count too); kinds, tasks and methods see the plan through
:class:`PlanView`."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
# Every package of clinsent, by floor, the lowest first: a module imports only from its own floor
# and the floors below it. A new package is a decision, made here.
FLOORS: list[tuple[str, ...]] = [
    ("", "process"),  # the root's modules (errors, paths, registry, ...) and each process's own set-up
    ("config",),  # the declarations (sections), the knob machinery (declare), names
    ("safety",),  # the rules every writer, reader and cache inherits
    ("io",),  # one way in, one way out
    ("gpu",),  # the root's optimisation core sits here too (it reads the device's precision)
    ("models", "augment", "postprocess", "ontology", "ner", "phi"),
    ("data", "corpus"),
    ("evaluation",),
    ("embedding",),
    ("methods",),
    ("losses",),
    ("tasks",),
    ("finetune",),
    ("train",),
    ("report",),
    ("release",),
    ("benchmark",),
    ("demo",),
    ("plan",),  # the planner: nothing below it imports it
    ("door",),  # the one door: a config in, a plan out
    ("runner",),  # what runs the DAG's jobs (the Snakefile's helpers, a job's start)
    ("generate", "commands"),  # the generated files; the commands that open a plan
]
ROOT_ON = {"clinsent.optimisation": 4}  # a root module whose floor is not the root's


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


def import_graph(annotations: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in its text (``annotations=False``:
    those under ``if TYPE_CHECKING:`` left out)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if not annotations and id(node) in typing_only:
                continue
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


def floor_of(module: str) -> int:
    """The floor of a module of the package (:data:`FLOORS`)."""
    if module in ROOT_ON:
        return ROOT_ON[module]
    parts = module.split(".")
    package = parts[1] if len(parts) > 2 or (len(parts) == 2 and (SRC / "clinsent" / parts[1]).is_dir()) else ""
    found = [i for i, floor in enumerate(FLOORS) if package in floor]
    assert found, f"{module}: its package {package!r} is on no floor; put it on one in FLOORS"
    return found[0]


def test_every_package_is_on_one_floor() -> None:
    packages = {p.name for p in (SRC / "clinsent").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    listed = [p for floor in FLOORS for p in floor if p]
    assert sorted(listed) == sorted(set(listed)) and set(listed) == packages


def test_no_import_runs_back_up_a_floor() -> None:
    """The criterion of the layers: an import from a higher floor is refused, annotations apart."""
    upward = [
        f"{m} (floor {floor_of(m)}) imports {t} (floor {floor_of(t)})"
        for m, targets in import_graph(annotations=False).items()
        for t in targets
        if floor_of(t) > floor_of(m)
    ]
    assert not upward, upward
    graph = import_graph(annotations=False)
    graph["clinsent.io.files"].add("clinsent.plan.layout")  # the check sees one when there is one
    assert any(floor_of(t) > floor_of(m) for m, ts in graph.items() for t in ts)


def test_nothing_below_the_planner_imports_it() -> None:
    planner = floor_of("clinsent.plan.layout")
    upward = [
        f"{m} imports {t}"
        for m, targets in import_graph().items()
        if floor_of(m) < planner
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
