"""``make gpu-check``: one command that proves every GPU path on a GPU and writes the figures.

Modes (``make gpu-check MODE=...``):

- ``full`` (the default): at most :data:`BUDGET` seconds (nine minutes) in all, the wheels'
  install included (:data:`SETUP`); each step has a time budget of its own (:data:`BUDGETS`, which
  with the set-up add up to the whole) and is cut to what is left of the whole, so one call of the
  device tool holds it; the summary is written after every step, and ``bench_train.py`` writes
  each row as it finishes. The goals still open run first:
  1. ``bench_train.py`` at batch 512 on the demo corpus's real lengths, BERT-base: SimCSE captured
     (every batch shape's step a CUDA graph, ``graphs: true``) padded, unpadded (its attention
     padded) and unpadded with torch's variable-length attention, and MED-SE captured with its
     encoders one after the other and as one grouped pass (``grouped: true``); each beside both
     anchors measured in the same rounds: the naive plain loop (``plain``: tokenized in the step,
     eager) and the compiled one (``plain:compile``: pre-tokenized, pinned, ``torch.compile``d);
     MFU on real tokens, host syncs per step, step memory;
  2. the same at batch 64, with supervised SimCSE captured and SimCSE and MED-SE eager;
  3. a profile of SimCSE's and MED-SE's captured steps at batch 512 and 64 (the top kernels and
     launches, and the step's wall time beside its kernels' sum: where its time goes, and whether
     MED-SE's side stream overlaps);
  4. the CUDA tests (``pytest -m cuda``, ``tests/train/test_cuda.py``): each passed, failed or
     skipped with its reason; a step in which no test ran fails;
  5. one short end-to-end run on the GPU with ``gpus: [0]``: supervised SimCSE on the demo NLI
     rows, one seed, the tiny BERT (no spaCy, no MedCAT, no download);
  6. ``bench_memory.py``: BERT-base at batch 512 x 128 with ``mini_batch: 32``.
- ``quick``: the open goals' rows only (1, and 2's SimCSE and MED-SE captured rows), then the
  CUDA tests (:data:`QUICK_BUDGETS`): the rerun after a fix.
- ``cpu``: the same steps on the CPU, the tiny model, the CUDA tests skipped and counted, the
  end-to-end run planned (a dry run), every row of ``full`` checked as a config would be, the
  captured rows stepped through the recording stand-in for the capture (``--stand-in``: the
  path's warm-up, capture, replay and copies run; speed is a GPU's), the compiled anchor compiled
  and run, and the CPU proxies of the step's host work (``bench_train.py --proxies``, short
  windows). ``make test-fast`` (so CI) runs it: a renamed knob, option or file breaks CI, not the
  next GPU run.

Each step runs in a process of its own under its time limit; a failed step is recorded (with the
tail of its output), a step over its budget is recorded as cut, and the others still run; the exit
status is 1 if any failed or was cut. Each check writes a new folder,
``bench/results/cuda/<date>T<time>Z-<mode>/`` (``full``, ``quick``), or ``--out``, which must be new
or empty: ``summary.md`` (the commit and whether its tree was clean, the source fingerprint, every
version, each step's budget, time and status, and every GPU goal met, not met or not measured,
beside the figures), ``summary.json`` and each bench's own files.
With ``--wheelhouse DIR`` (``bench/gpu/wheelhouse.sh``: a GPU machine without network), the wheels
are installed first into a folder of their own, with no index, and the versions that ran are recorded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
# the rows of the goals still open (2026-11-28), run first: batch 512 (SimCSE padded, unpadded, unpadded
# with variable-length attention; MED-SE one encoder after the other and grouped), then batch 64
B512 = [
    "simcse:graphs=true",
    # the unpadded forward captured (its static packing): the padding the plain loop carries gone
    "simcse:graphs=true:unpad=true",
    "simcse:graphs=true:unpad=true:varlen_attention=true",
    "medse:graphs=true",
    "medse:graphs=true:grouped=true",  # its two encoders as one grouped pass
]
UNPADDED = B512[1:3]
B64 = [
    "simcse:graphs=true",
    "medse:graphs=true",
    "medse:graphs=true:grouped=true",
    "sup_simcse:graphs=true",
    "simcse:graphs=false",
    "medse:graphs=false",
]
QUICK64 = B64[:3]  # quick: the open goals' rows only (B512, and these at batch 64)
MEDSE = ["medse:graphs=true", "medse:graphs=true:grouped=true"]  # each held to MED-SE's goals
# the tiny model: one of each path (the captured rows through the recording stand-in: the path runs)
CPU_ROWS = [
    "simcse",
    "medse",
    "sup_simcse",
    "simcse:unpad=true",
    "simcse:graphs=true",
    "simcse:graphs=true:unpad=true",
    "medse:graphs=true",
    "medse:graphs=true:grouped=true",
    "mlm:graphs=true",
]
# goals the figures are held to (a benchmark, not tests: issues 71 and 84), each a ratio to a reference
# measured in the same run: the naive plain loop (``plain``) and the compiled one (``plain:compile``)
GOALS: dict[str, tuple[str, str, float]] = {  # key -> (what, how held, bound)
    "simcse_b64": ("SimCSE captured / the plain loop, batch 64", "<=", 0.5),
    "simcse_b64_compiled": ("SimCSE captured / the compiled plain loop, batch 64", "<=", 1.0),
    "simcse_b512": ("SimCSE captured / the plain loop, batch 512", "<=", 0.6),
    "simcse_b512_compiled": ("SimCSE captured / the compiled plain loop, batch 512", "<=", 1.0),
    "medse_b64": ("MED-SE captured / SimCSE captured, batch 64", "<=", 1.3),
    "medse_grouped_b64": ("MED-SE grouped, captured / SimCSE captured, batch 64", "<=", 1.3),
    "medse_b512": ("MED-SE captured / SimCSE captured, batch 512", "<=", 1.5),
    "medse_grouped_b512": ("MED-SE grouped, captured / SimCSE captured, batch 512", "<=", 1.5),
    "mfu_b512": ("MFU on real tokens, SimCSE captured (best of its rows), batch 512", ">=", 0.25),
    "syncs": ("host syncs per step (every row)", "<=", 0),
    "mini_batch_gb": ("peak GPU memory, SimCSE 512 x 128, mini_batch 32 (GB)", "<=", 20.0),
}
SETUP = 30.0  # seconds for what runs before the steps: the wheels' install, the tiny model, the versions
# each step's budget in ``full`` (seconds; cut to what is left of BUDGET), in the order they run; with
# SETUP they add up to BUDGET. From the H200 run of 2026-11-28 (bench/results/cuda/2026-11-28-graphs:
# batch 512 83 s for three rows, batch 64 61, profile 19, tests 107, end to end about 70, memory 24;
# the install 23), the rows and the compiled anchor added since
BUDGETS = {
    "train, batch 512": 170,
    "train, batch 64": 100,
    "profile": 50,
    "cuda tests": 110,
    "end to end": 50,
    "memory": 30,
}
BUDGET = 540.0  # seconds for the whole of ``full``, the install included (one device call: 600 s)
QUICK_BUDGETS = {"train, batch 512": 150, "train, batch 64": 70, "cuda tests": 125}  # quick: with SETUP, 375 s
VERSIONS = [
    "torch",
    "transformers",
    "sentence-transformers",
    "tokenizers",
    "huggingface_hub",
    "pandas",
    "numpy",
    "pyarrow",
    "snakemake",
    "scikit-learn",
    "pytest",
]


@dataclass
class Step:
    """One step of the check: a command, its time limit, and what it left."""

    name: str
    argv: list[str]
    timeout: float
    status: str = "not run"
    seconds: float = 0.0
    tail: str = ""
    figures: dict[str, Any] = field(default_factory=dict)

    def run(self, env: dict[str, str], log: Path) -> bool:
        start = time.perf_counter()
        try:
            done = subprocess.run(self.argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=self.timeout)
            self.status = "passed" if done.returncode == 0 else f"failed (exit {done.returncode})"
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            self.status = f"cut (over its {self.timeout:.0f} s)"
            output = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        self.seconds = round(time.perf_counter() - start, 1)
        log.write_text(output)
        self.tail = "\n".join(output.splitlines()[-25:])
        print(f"gpu-check: {self.name}: {self.status} in {self.seconds} s", flush=True)
        return self.status == "passed"


def install(wheelhouse: Path, site: Path) -> dict[str, str]:
    """The wheels, with no index, into ``site`` (first on the children's path); the tokenizer's files
    where the packaged MiniLM is absent."""
    wheels = sorted(str(p) for p in wheelhouse.glob("*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--upgrade",
            "--target",
            str(site),
            *wheels,
        ],
        check=True,
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(REPO / "src")])}
    if (wheelhouse / "tokenizer").is_dir():
        env["CLINSENT_TOKENIZER_DIR"] = str(wheelhouse / "tokenizer")
    return env


def versions(env: dict[str, str]) -> dict[str, Any]:
    code = (
        "import json, sys\nfrom importlib import metadata\nout = {'python': sys.version.split()[0]}\n"
        f"for p in {VERSIONS!r}:\n    try:\n        out[p] = metadata.version(p)\n"
        "    except metadata.PackageNotFoundError:\n        out[p] = None\n"
        "import torch\nout['cuda'] = torch.version.cuda if torch.cuda.is_available() else None\n"
        "out['device'] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu'\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {"error": done.stderr[-500:]}


def check_rows() -> None:
    """Every bench row of ``full`` is a valid method spec (knobs checked as a config's are)."""
    import yaml

    sys.path.insert(0, str(REPO / "src"))
    from clinsent.config.declare import build
    from clinsent.config.sections import MethodConfig, RunConfig, Training, TrainingDataEntry
    from clinsent.methods.config import resolve_method

    for row in {*B64, *B512, *CPU_ROWS}:
        name, *extra = row.split(":")
        knobs = {k: yaml.safe_load(v) for k, v in (e.split("=", 1) for e in extra)}
        data = {"train_data": "rows"} if name in ("sup_simcse", "mnr") else {}
        resolve_method(
            name,
            build(MethodConfig, {"objective": name, **data, **knobs}),
            Training(),
            [0],
            RunConfig(training_data={"rows": TrainingDataEntry(format="nli_jsonl", path="rows")}),
        )


def e2e_config(out: Path, tiny: Path, gpus: list[int]) -> Path:
    """Supervised SimCSE on the demo NLI rows, one seed, the tiny BERT, the demo STS sets."""
    import yaml

    demo = REPO / "resources" / "demo"
    config = {
        "results": str(out / "e2e" / "results"),
        "base_models": {"tiny": str(tiny)},
        "eval_sets": {
            "demo_select": {"path": str(demo / "clinical_sts.demo.select.tsv"), "format": "n2c2_sts"},
            "demo_test": {"path": str(demo / "clinical_sts.demo.test.tsv"), "format": "n2c2_sts"},
        },
        "training_data": {"demo_nli": {"format": "nli_jsonl", "path": str(demo / "mednli.demo.train.jsonl")}},
        "selection_set": "demo_select",
        "seeds": [0],
        "gpus": gpus,
        "training": {"steps": 20, "batch_size": 32, "max_length": 64, "eval_every": 10, "checkpoint_every": 10},
        "methods": {"sup_simcse": {"objective": "sup_simcse", "train_data": "demo_nli", "pooling": "mean"}},
    }
    path = out / "e2e" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def budget_of(name: str, mode: str = "full") -> float:
    """A step's budget in ``full`` and ``quick`` (:data:`BUDGETS`, :data:`QUICK_BUDGETS`; by the start of its name)."""
    table = QUICK_BUDGETS if mode == "quick" else BUDGETS
    return float(next(v for k, v in table.items() if name.startswith(k)))


def steps(mode: str, out: Path, tiny: Path, py: str) -> list[Step]:
    """The steps of ``mode``, in order: the rows of the goals still open first (batch 512, then
    batch 64), then the profile, the CUDA tests, the end-to-end run and the memory bench (a call
    cut short loses the later checks, never the open figures); each with its time limit."""
    cpu = mode == "cpu"
    size = ["--size", "tiny", "--max-length", "32"] if cpu else ["--size", "base", "--max-length", "128"]
    per_round = "1" if cpu else "10"  # on a GPU one step is too short to time (bench/results/cuda/README.md)
    bench = [py, str(BENCH / "bench_train.py"), "--lengths", "demo", "--rounds", "5", "--steps", per_round, *size]
    tests = [py, "-m", "pytest", "-m", "cuda", "tests/train/test_cuda.py", "-q", "-rs", "-p", "no:cacheprovider"]
    tests_step = Step("cuda tests", [*tests, f"--junitxml={out / 'cuda-tests.xml'}"], 240)
    found: list[Step] = []
    if not cpu:  # batch 512 first: its rows are the open goals (5 steps a round: 512 rows a step are long)
        b512 = [*bench[:-4], "--steps", "5", *size, "--batch-size", "512", "--out", str(out / "train-b512")]
        found.append(Step("train, batch 512", [*b512, "--methods", *B512], 240))
    rows64 = CPU_ROWS if cpu else B64 if mode == "full" else QUICK64
    b64 = [*bench, "--batch-size", "8" if cpu else "64", "--out", str(out / "train-b64"), "--methods", *rows64]
    if cpu:
        b64.append("--stand-in")
    found.append(Step("train, batch 64", b64, 120 if cpu else 300))
    if mode == "quick":
        return [*found, tests_step]
    profile = [py, str(Path(__file__).with_name("profile_step.py")), "--out", str(out / "profile.txt")]
    if cpu:  # the tiny model, the captured rows through no capture (the CPU steps eagerly): the path runs
        profile += ["--size", "tiny", "--max-length", "32", "--batch-sizes", "8"]
    found.append(Step("profile, simcse and medse captured, batch 512 and 64", profile, 60 if cpu else 120))
    found.append(tests_step)
    from clinsent.runner.smk import snakemake_command  # the tests' and benchmarks' one Snakemake command line

    config = e2e_config(out, tiny, [] if cpu else [0])
    snakemake = snakemake_command(
        REPO, "all", "--configfile", str(config), "--cores", "4", "--resources", "gpu=1", "--scheduler", "greedy"
    )
    found.append(Step("end to end, gpus: [0]", [*snakemake, *(["-n"] if cpu else [])], 60 if cpu else 240))
    memory = (  # the chunked path (the plain one: train)
        ["--size", "tiny", "--batch-size", "16", "--max-length", "32", "--mini-batches", "4"]
        if cpu
        else ["--size", "base", "--batch-size", "512", "--max-length", "128", "--mini-batches", "32"]
    )
    memory_out = ["--out", str(out / "memory")]
    found.append(
        Step(
            "memory, batch 512 x 128",
            [py, str(BENCH / "bench_memory.py"), "--methods", "simcse", *memory, *memory_out],
            60 if cpu else 180,
        )
    )
    if cpu:  # the host work's proxies (short windows): every new path of the step's preparation runs
        proxies = [
            py,
            str(BENCH / "bench_train.py"),
            "--proxies",
            "--quick",
            "--methods",
            "simcse",
            "medse",
            "medse:grouped=true",
            "mlm",
        ]
        found.append(Step("proxies, cpu", [*proxies, "--out", str(out / "proxies")], 120))
    return found


def tests_of(xml: Path) -> dict[str, Any]:
    """passed, failed, skipped (with their reasons) of a junit file."""
    if not xml.is_file():
        return {}
    cases = ET.parse(xml).getroot().iter("testcase")
    out: dict[str, Any] = {"passed": 0, "failed": [], "skipped": 0, "reasons": {}}
    for case in cases:
        name = case.get("name", "?")
        if case.find("failure") is not None or case.find("error") is not None:
            out["failed"].append(name)
        elif (skip := case.find("skipped")) is not None:
            out["skipped"] += 1
            reason = skip.get("message", "")
            out["reasons"][reason] = out["reasons"].get(reason, 0) + 1
        else:
            out["passed"] += 1
    return out


def judge_tests(step: Step, xml: Path, mode: str) -> None:
    """A CUDA test step that ran no test fails in ``full`` and ``quick`` (every test skipped is no
    proof); in ``cpu`` the skipped tests are counted, as they must be."""
    found = tests_of(xml)
    if mode != "cpu" and step.status == "passed" and not found.get("passed") and not found.get("failed"):
        reasons = "; ".join(f"{n} skipped: {r}" for r, n in found.get("reasons", {}).items()) or "no test collected"
        step.status = f"failed (no CUDA test ran: {reasons})"


Goal = tuple[str, str, str, bool | None]  # (what, measured, held to, met: None where not measured)


def goals(out: Path, mode: str = "full") -> list[Goal]:
    """Every goal of :data:`GOALS`, met, not met or not measured by this run's figures (``cpu``: the
    tiny model on the CPU measures none of them), then the figures reported beside them (MFU of
    each row, every row against both anchors)."""
    figures: dict[str, tuple[float, str]] = {}  # goal -> (value, shown)
    reported: list[Goal] = []

    def runs(name: str) -> dict[str, dict[str, Any]]:
        path = out / name / "train.json"
        return {r["method"]: r for r in json.loads(path.read_text())["runs"]} if path.is_file() else {}

    b64, b512 = (runs("train-b64"), runs("train-b512")) if mode != "cpu" else ({}, {})
    for label, table, key in (("64", b64, "simcse_b64"), ("512", b512, "simcse_b512")):
        row = table.get("simcse:graphs=true")
        if row:
            figures[key] = (row["ratio_median"], f"{row['ratio_median']:.2f}x")
            if row.get("ratio_compiled_median") is not None:
                r = row["ratio_compiled_median"]
                figures[f"{key}_compiled"] = (r, f"{r:.2f}x")
        for method, r in table.items():
            if method.split(":")[0] in ("sup_simcse", "mnr"):
                continue
            against = f"{r['ratio_median']:.2f}x the plain loop"
            if r.get("ratio_compiled_median") is not None:
                against += f", {r['ratio_compiled_median']:.2f}x the compiled one"
            reported.append((f"{method}, batch {label}", against, "(reported)", None))
        simcse = table.get("simcse:graphs=true")
        for method in MEDSE:
            medse = table.get(method)
            if simcse and medse:
                ratio = medse["ours_median_s"] / simcse["ours_median_s"]
                goal = f"medse{'_grouped' if 'grouped' in method else ''}_b{label}"
                figures[goal] = (ratio, f"{ratio:.2f}x (FLOP ratio {medse['flop_ratio'] / simcse['flop_ratio']:.2f})")
    mfus = [r["mfu"] for m, r in b512.items() if m.startswith("simcse:graphs=true") and r.get("mfu") is not None]
    if mfus:
        figures["mfu_b512"] = (max(mfus), f"{max(mfus):.1%}")
    for label, table in (("64", b64), ("512", b512)):
        for method, r in table.items():
            if r.get("mfu") is not None:
                shown = f"{r['mfu']:.1%} (plain {r['plain_mfu']:.1%}"
                shown += f", compiled {r['compiled_mfu']:.1%})" if r.get("compiled_mfu") is not None else ")"
                reported.append((f"MFU on real tokens, {method}, batch {label}", shown, "(reported)", None))
    syncs = [r["host_syncs_per_step"] for t in (b64, b512) for r in t.values()]
    if syncs:
        figures["syncs"] = (max(syncs), str(max(syncs)))
    memory = out / "memory" / "memory.json"
    if memory.is_file() and mode != "cpu":
        for r in json.loads(memory.read_text()).get("runs", []):
            if r.get("mini_batch") and r.get("peak_gpu_mb") is not None:
                gb = r["peak_gpu_mb"] / 1024
                figures["mini_batch_gb"] = (gb, f"{gb:.1f} GB")
    rows: list[Goal] = []
    for key, (what, how, bound) in GOALS.items():
        ratio = key.startswith(("simcse", "medse"))
        held = f"{how} {bound:.0%}" if key.startswith("mfu") else f"{how} {bound}" + ("x" if ratio else "")
        if key not in figures:
            rows.append((what, "not measured", held, None))
            continue
        value, shown = figures[key]
        rows.append((what, shown, held, value <= bound if how == "<=" else value >= bound))
    return rows + reported


# knob -> (its row and the row it is held against, for an objective; the CUDA tests that must have
# passed in the same check): what clinsent.gpu.speed.decide reads (auto.json)
AUTO_ROWS = {
    "graphs": ("{o}:graphs=true", "{o}:graphs=false"),
    "unpad": ("{o}:graphs=true:unpad=true", "{o}:graphs=true"),
    "grouped": ("{o}:graphs=true:grouped=true", "{o}:graphs=true"),
    "compile": ("{o}:graphs=true:compile=true", "{o}:graphs=true"),
}
AUTO_TESTS = {
    "graphs": [
        "test_a_captured_run_ends_where_the_eager_run_ends[{o}]",
        "test_no_host_sync_in_the_steady_state_step[{o}]",
        "test_a_replayed_step_draws_new_dropout_masks_and_makes_no_host_sync",
    ],
    "unpad": [
        "test_a_captured_run_ends_where_the_eager_run_ends[{o}:unpad]",
        "test_unpadded_layers_with_varlen_attention_equal_the_padded_encoder",
        "test_an_unpadded_step_makes_no_host_sync[True]",
    ],
    "grouped": [
        "test_grouped_encoders_equal_each_models_own_in_bf16",
        "test_a_grouped_medse_step_makes_no_host_sync[False]",
    ],
    "compile": ["test_the_compiled_step_equals_eager_and_compiles_once_per_length_bucket[default]"],
}


def test_results(xml: Path) -> dict[str, str]:
    """Each test of a junit file: passed, failed or skipped."""
    if not xml.is_file():
        return {}
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        out[case.get("name", "?")] = (
            "failed" if failed else "skipped" if case.find("skipped") is not None else "passed"
        )
    return out


def auto_figures(folders: list[Path], info: dict[str, Any]) -> dict[str, Any]:
    """What ``auto`` is decided from (``auto.json``, :mod:`clinsent.gpu.speed`): for each knob and
    objective the check measured, the ratio of its row to the row without the knob (batch 64, else
    512; in one run, or where the two rows are in two checks of ``folders``, each one's ratio to the
    same reference) and the knob's CUDA tests as the first folder's check ran them."""
    rows: dict[int, dict[str, tuple[dict[str, Any], str]]] = {64: {}, 512: {}}
    for folder in folders:
        for batch in rows:
            path = folder / f"train-b{batch}" / "train.json"
            if path.is_file():
                for r in json.loads(path.read_text())["runs"]:
                    rows[batch].setdefault(r["method"], (r, folder.name))
    tests = test_results(folders[0] / "cuda-tests.xml")

    def row(batch: int, method: str) -> tuple[dict[str, Any], str] | None:
        found = rows[batch].get(method)
        if found is None and method.endswith(":graphs=false"):  # an eager row named by its bare objective
            found = rows[batch].get(method.removesuffix(":graphs=false"))
        return found

    knobs: dict[str, dict[str, Any]] = {}
    objectives = sorted({m.split(":")[0] for batch in rows.values() for m in batch})
    for knob, (on_row, off_row) in AUTO_ROWS.items():
        for objective in objectives:
            for batch in (64, 512):
                on, off = row(batch, on_row.format(o=objective)), row(batch, off_row.format(o=objective))
                if on is None or off is None:
                    continue
                (a, where_a), (b, where_b) = on, off
                same = where_a == where_b
                if not same and a["reference"] != b["reference"]:
                    continue
                ratio = a["ours_median_s"] / b["ours_median_s"] if same else a["ratio_median"] / b["ratio_median"]
                knobs.setdefault(knob, {})[objective] = {
                    "ratio": round(ratio, 3),
                    "batch_size": batch,
                    "rows": [a["method"], b["method"]],
                    "how": "one run" if same else f"each to the same reference ({where_a}, {where_b})",
                    "tests": {
                        t.format(o=objective): tests.get(t.format(o=objective), "not run") for t in AUTO_TESTS[knob]
                    },
                }
                break
    prov = info.get("provenance", {})
    return {
        "written_by": "bench/gpu/check.py",
        "checks": [f.name for f in folders],
        "commit": prov.get("commit"),
        "clean": prov.get("clean"),
        "source_fingerprint": prov.get("source_fingerprint"),
        "device": info.get("versions", {}).get("device"),
        "rule": "on where ratio < 1 - clinsent.gpu.speed.SPREAD and every test passed",
        "knobs": knobs,
    }


def met_word(goal: Goal) -> str:
    what, measured, held, ok = goal
    if ok is None:
        return "not measured" if measured == "not measured" else "–"
    return "yes" if ok else "no"


def source_fingerprint(root: Path = REPO) -> str:
    """A SHA-256 of the code that runs (every file under src/, bench/ but its results, tests/,
    workflow/, config/, and the Snakefile, pyproject.toml and requirements.lock, by path and content):
    the same on a copy of a checkout without ``.git`` (a lent GPU machine's), so a check's figures
    are matched to a commit by running ``bench/gpu/check.py --fingerprint`` on it."""
    import hashlib

    digest = hashlib.sha256()
    files = [root / n for n in ("Snakefile", "pyproject.toml", "requirements.lock")]
    for folder in ("src", "bench", "tests", "workflow", "config"):
        files += sorted((root / folder).rglob("*"))
    for f in files:
        rel = f.relative_to(root).as_posix()
        if not f.is_file() or "__pycache__" in f.parts or rel.startswith("bench/results/") or f.suffix == ".pyc":
            continue
        digest.update(rel.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()


def provenance(root: Path = REPO) -> dict[str, Any]:
    """What ran: the commit and whether its tree was clean (where this is a git checkout; else
    ``CLINSENT_COMMIT`` where the caller set it), and the source fingerprint always."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "commit": commit or os.environ.get("CLINSENT_COMMIT") or None,
        "commit_from": "git" if commit else "CLINSENT_COMMIT" if os.environ.get("CLINSENT_COMMIT") else None,
        "clean": (status == "") if status is not None else None,
        "source_fingerprint": source_fingerprint(root),
    }


def summary(out: Path, mode: str, done: list[Step], info: dict[str, Any]) -> str:
    tests = tests_of(out / "cuda-tests.xml")
    prov = info.get("provenance", {})
    commit = prov.get("commit")
    clean = {True: "clean tree", False: "tree with uncommitted changes", None: "tree state unknown"}[prov.get("clean")]
    cut = [s.name for s in done if s.status.startswith("cut")]
    failed = [s.name for s in done if s.status.startswith("failed")]
    unrun = [s.name for s in done if s.status.startswith("not run")]
    if mode == "cpu":
        budget_line = "The CPU mode has no time budget of its steps' own (each runs under its limit)."
    elif cut or unrun:
        budget_line = (
            f"Cut by its time budget (its figures are partial or absent): {', '.join(cut) or 'none'}; "
            f"not run (the {BUDGET:.0f} s spent): {', '.join(unrun) or 'none'}."
        )
    else:
        budget_line = (
            f"Every step ran within its time budget and the check within {BUDGET:.0f} s, the install included."
        )
    lines = [
        f"# gpu-check, mode {mode}, {info['date']}",
        "",
        f"Code: commit {commit or 'unknown'}"
        + (f" (from {prov['commit_from']})" if prov.get("commit_from") == "CLINSENT_COMMIT" else "")
        + f", {clean}; source fingerprint {prov.get('source_fingerprint', '?')[:16]} "
        "(`python bench/gpu/check.py --fingerprint` on a checkout prints its own).",
        "",
        f"Device: {info['versions'].get('device')}; CUDA {info['versions'].get('cuda')}; "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if k not in ("device", "cuda")),
        "",
        budget_line + (f" Failed: {', '.join(failed)}." if failed else ""),
        "",
        "| step | status | seconds | budget s |",
        "|---|---|---|---|",
        *(f"| {s.name} | {s.status} | {s.seconds} | {s.timeout:.0f} |" for s in done),
        "",
    ]
    if tests:
        lines += [
            f"CUDA tests: {tests['passed']} passed, {len(tests['failed'])} failed, {tests['skipped']} skipped"
            + "".join(f"; skipped {n}: {r}" for r, n in tests["reasons"].items()),
            *(f"- failed: {name}" for name in tests["failed"]),
            "",
        ]
    met = goals(out, mode)
    lines += [
        "Every GPU goal, met, not met or not measured"
        + (" (the CPU mode's tiny model measures none of them)" if mode == "cpu" else "")
        + "; then each row against both anchors, the naive plain loop and the compiled one:",
        "",
        "| goal | measured | held to | met |",
        "|---|---|---|---|",
        *(f"| {g[0]} | {g[1]} | {g[2]} | {met_word(g)} |" for g in met),
        "",
    ]
    for name in ("train-b512", "train-b64", "memory", "proxies"):
        for md in sorted((out / name).glob("*.md")):
            lines += [f"## {name}", "", md.read_text(), ""]
    if (out / "profile.txt").is_file():
        lines += [
            "## Where the captured steps' time goes (SimCSE and MED-SE, batch 512 and 64, top kernels)",
            "",
            "```",
            (out / "profile.txt").read_text().rstrip(),
            "```",
            "",
        ]
    for s in done:
        if s.status not in ("passed", "not run"):
            lines += [f"## {s.name}: {s.status}", "", "```", s.tail, "```", ""]
    return "\n".join(lines)


def write_summary(out: Path, mode: str, done: list[Step], info: dict[str, Any]) -> None:
    """``summary.md`` and ``summary.json`` of the steps so far (the others: "not run")."""
    left = sum(s.status == "not run" for s in done)
    wall = f"\nWall time: {info['seconds']} s" + (f", {left} step(s) not run yet.\n" if left else ".\n")
    (out / "summary.md").write_text(summary(out, mode, done, info) + wall)
    record = {**info, "steps": [vars(s) for s in done], "tests": tests_of(out / "cuda-tests.xml")}
    record["goals"] = goals(out, mode)
    (out / "summary.json").write_text(json.dumps(record, indent=2, default=str) + "\n")


def out_folder(given: Path | None, mode: str, now: dt.datetime) -> Path:
    """Where this check writes: a new folder every time (``<date>T<time>Z-<mode>`` under
    bench/results/cuda; a temporary one in ``cpu``), or ``--out``, which must be new or empty: a
    folder holding another run's files is refused (its figures would be read as this run's)."""
    if given is None:
        if mode == "cpu":
            return Path(tempfile.mkdtemp(prefix="gpu-check-"))
        given = BENCH / "results" / "cuda" / f"{now.strftime('%Y-%m-%dT%H%M%SZ')}-{mode}"
    if given.exists() and (not given.is_dir() or any(given.iterdir())):
        held = ", ".join(sorted(p.name for p in given.iterdir())[:4]) if given.is_dir() else ""
        what = f"holds another run's files ({held})" if held else "is a file"
        raise SystemExit(
            f"gpu-check: --out {given}: {what}; its figures would be read as this run's. Fix: name a new folder, "
            "or leave --out out (each check writes a new dated folder); nothing was written"
        )
    return given


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["full", "quick", "cpu"], default="full")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="a new folder (default: bench/results/cuda/<date>T<time>Z-<mode>; cpu: a temporary one)",
    )
    ap.add_argument("--wheelhouse", type=Path, default=None, help="install these wheels first (no network)")
    ap.add_argument("--fingerprint", action="store_true", help="print this checkout's source fingerprint and exit")
    ap.add_argument(
        "--auto-from",
        type=Path,
        nargs="+",
        default=None,
        help="write the first check folder's auto.json from its figures (and those of the other folders named, "
        "checks of the same code) and exit; --commit names the commit that recorded them",
    )
    ap.add_argument("--commit", default=None, help="with --auto-from: the commit the figures were recorded in")
    args = ap.parse_args(argv)
    if args.fingerprint:
        print(source_fingerprint())
        return 0
    if args.auto_from:
        first = args.auto_from[0]
        record = json.loads((first / "summary.json").read_text()) if (first / "summary.json").is_file() else {}
        record["provenance"] = {"commit": args.commit, **(record.get("provenance") or {})}
        (first / "auto.json").write_text(json.dumps(auto_figures(args.auto_from, record), indent=2) + "\n")
        print(first / "auto.json")
        return 0
    started = time.perf_counter()
    now = dt.datetime.now(dt.UTC)
    out = out_folder(args.out, args.mode, now)  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if args.wheelhouse:
        site = Path(tempfile.mkdtemp(prefix="gpu-check-site-"))
        env |= install(args.wheelhouse, site)
        sys.path[:0] = env["PYTHONPATH"].split(os.pathsep)  # this process imports clinsent too (steps())
    if args.mode == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU mode runs on the CPU, on any machine
        check_rows()
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    tiny = out / "tiny-bert"
    made = subprocess.run(
        [sys.executable, "-m", "clinsent.demo.tiny_bert", str(tiny)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if made.returncode != 0:
        print(made.stderr[-3000:], file=sys.stderr)
        return 1
    done = steps(args.mode, out, tiny, sys.executable)
    info = {
        "date": now.strftime("%Y-%m-%d %H:%M:%S UTC"),
        "mode": args.mode,
        "provenance": provenance(),
        "versions": versions(env),
        "seconds": 0.0,
    }
    ok = []
    for i, s in enumerate(done):
        if args.mode != "cpu":  # each step within its budget and what is left of the whole
            s.timeout = min(budget_of(s.name, args.mode), BUDGET - (time.perf_counter() - started) - 5)
            if s.timeout < 15:
                s.status = f"not run (the check's {BUDGET:.0f} s were spent)"
                ok.append(False)
                continue
        passed = s.run(env, logs / f"{s.name.split(',')[0].replace(' ', '-')}-{i}.log")
        if s.name == "cuda tests":
            judge_tests(s, out / "cuda-tests.xml", args.mode)
            passed = s.status == "passed"
        ok.append(passed)
        info["seconds"] = round(time.perf_counter() - started, 1)
        write_summary(out, args.mode, done, info)  # after every step: a run stopped from outside keeps its figures
    shutil.rmtree(tiny, ignore_errors=True)
    if args.mode != "cpu":  # what auto is decided from (clinsent.gpu.speed: copied there whole to be used)
        (out / "auto.json").write_text(json.dumps(auto_figures([out], info), indent=2) + "\n")
    if (out / "e2e" / "results" / "summary.csv").is_file():
        shutil.copy(out / "e2e" / "results" / "summary.csv", out / "e2e" / "summary.csv")
    shutil.rmtree(out / "e2e" / "results", ignore_errors=True)  # the run's models and vectors: not figures
    print(f"gpu-check: {sum(ok)}/{len(ok)} steps passed in {info['seconds']} s; {out / 'summary.md'}")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
