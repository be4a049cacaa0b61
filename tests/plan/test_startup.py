"""Start-up stays light: the jobs that load no model import neither torch nor transformers, and
reading a config (every dry run, every cluster job's re-parse of the Snakefile) imports neither.

Each check runs in a fresh interpreter, so what an earlier test imported cannot hide an import.
The figures themselves are `make bench-startup`'s (bench/results/startup.md).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "workflow" / "scripts"
HEAVY = ("torch", "transformers", "sentence_transformers")
# The jobs whose first work is loading a model (their own module is the only heavy one they import).
MODEL_JOBS = {"train", "embed", "finetune", "cross_encoder", "corpus_embed"}
NO_MODEL_JOBS = sorted(p.stem for p in SCRIPTS.glob("*.py") if p.stem not in MODEL_JOBS)


def _loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint('loaded:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(x for x in reversed(run.stdout.splitlines()) if x.startswith("loaded:"))
    return [m for m in line[len("loaded:") :].split(",") if m]


def _imports(script: str, top: bool = False) -> str:
    """Every import of a script (those inside its ``main`` too), or with ``top`` its module's own."""
    tree = ast.parse((SCRIPTS / f"{script}.py").read_text())
    nodes = tree.body if top else list(ast.walk(tree))
    return "\n".join(ast.unparse(n) for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom)))


def _rule_of(script: str) -> str:
    """The text of the rules that run a script."""
    blocks = [b for smk in (REPO / "workflow" / "rules").glob("*.smk") for b in smk.read_text().split("\nrule ")]
    return "\n".join(b for b in blocks if f'"../scripts/{script}.py"' in b)


def test_every_script_is_classified() -> None:
    assert MODEL_JOBS <= {p.stem for p in SCRIPTS.glob("*.py")}
    assert len(NO_MODEL_JOBS) >= 20  # a new script joins one list or the other by its name


@pytest.mark.parametrize("script", NO_MODEL_JOBS)
def test_a_job_that_loads_no_model_imports_no_torch(script: str) -> None:
    code = "from clinsent.runner.smk import setup_logging\nimport clinsent.phi, clinsent.registry\n" + _imports(script)
    assert _loaded_after(code) == []


def test_a_model_job_imports_torch_the_probe_can_see_it() -> None:
    """The probe itself: an import of torch on the path is seen (so the checks above can fail)."""
    assert "torch" in _loaded_after(_imports("embed"))


@pytest.mark.parametrize("script", sorted(MODEL_JOBS))
def test_a_model_job_takes_its_gpu_slot_before_anything_loads_torch(script: str) -> None:
    """CUDA_VISIBLE_DEVICES only counts if it is set before CUDA starts: the script's module
    imports nothing heavy, its rule declares a ``gpu`` resource, so ``clinsent.runner.script.run`` takes
    the slot (clinsent.gpu.slots) before ``main`` imports torch."""
    assert _loaded_after(_imports(script, top=True)) == []
    assert "gpu=" in _rule_of(script), f"the rule of {script}.py declares no gpu resource"
    assert "torch" in _loaded_after(_imports(script))  # main's own imports: the probe sees them


def test_reading_every_paper_config_imports_no_torch() -> None:
    """What the Snakefile does with a config (the plan: methods, eval sets, fine-tune entries, kinds,
    the grid), for the five paper configs and their demo twins: no torch, no transformers."""
    configs = sorted(str(p) for p in (REPO / "config" / "paper").glob("*.yaml"))
    code = f"""
from clinsent.door.open import open_plan
from clinsent.report.build import build_paper_report, build_report
sizes = {{path.rsplit('/', 1)[-1]: len(open_plan(path, {{"placeholders_ok": True}}).run.trained_jobs())
         for path in {configs!r}}}
print(sizes)
"""
    assert _loaded_after(code) == []
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    sizes = ast.literal_eval(run.stdout.strip().splitlines()[0])
    assert sizes["medse.yaml"] == 291 and len(sizes) == 10 and all(n > 0 for n in sizes.values()), json.dumps(sizes)


def test_every_package_the_code_imports_is_declared() -> None:
    """pyproject.toml names every distribution whose modules src/, bench/ and the scripts import
    (scispacy, installed without its pins, in requirements-nodeps.txt)."""
    import importlib.metadata
    import re
    import tomllib

    declared = {
        re.split(r"[<>=!\[ ]", d, maxsplit=1)[0].lower().replace("_", "-")
        for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    declared |= {
        line.split("==")[0].strip().lower()
        for line in (REPO / "requirements-nodeps.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    owners = importlib.metadata.packages_distributions()
    missing: dict[str, str] = {}
    for path in [*(REPO / "src").rglob("*.py"), *(REPO / "bench").glob("*.py"), *SCRIPTS.glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and not node.level
                else []
            )
            for name in names:
                top = name.split(".")[0]
                for dist in owners.get(top, []):
                    if dist.lower().replace("_", "-") not in declared and top not in ("clinsent", "bench_train"):
                        missing[dist] = str(path.relative_to(REPO))
    assert not missing, f"imported but not in pyproject.toml: {missing}"
