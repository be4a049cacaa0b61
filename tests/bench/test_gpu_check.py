"""``make gpu-check`` records what it ran and cannot show another run's figures (issue 84): a new
folder each time and ``--out`` over another run's files refused; the summary names the commit,
the tree's state and the source fingerprint, and lists every GPU goal (met, not met or not
measured); a CUDA test step in which no test ran fails outside ``cpu``; a cut step is said to be
cut; the open goals' rows run first and the budgets add up to the whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "gpu"))
import check  # noqa: E402


def _train_json(folder: Path, runs: list[dict]) -> None:
    folder.mkdir(parents=True)
    (folder / "train.json").write_text(json.dumps({"meta": {}, "runs": runs}))


def _row(method: str, ours: float, plain: float, compiled: float | None, mfu: float | None = None) -> dict:
    return {
        "method": method,
        "ours_median_s": ours,
        "ratio_median": round(ours / plain, 3),
        "ratio_compiled_median": round(ours / compiled, 3) if compiled else None,
        "flop_ratio": 1.5 if method.startswith("medse") else 1.0,
        "mfu": mfu,
        "plain_mfu": 0.05 if mfu else None,
        "compiled_mfu": 0.1 if mfu else None,
        "host_syncs_per_step": 0,
    }


def test_every_goal_is_met_not_met_or_not_measured(tmp_path: Path) -> None:
    nothing = check.goals(tmp_path, "full")
    held = nothing[: len(check.GOALS)]
    assert [g[0] for g in held] == [what for what, _, _ in check.GOALS.values()]
    assert all(g[1] == "not measured" and check.met_word(g) == "not measured" for g in held)
    _train_json(tmp_path / "train-b512", [
        _row("simcse:graphs=true", 0.10, 0.2, 0.08, mfu=0.30),
        _row("medse:graphs=true", 0.16, 0.2, 0.08),
    ])  # fmt: skip
    found = {g[0]: g for g in check.goals(tmp_path, "full")}
    b512 = found["SimCSE captured / the plain loop, batch 512"]
    assert b512[1] == "0.50x" and b512[3] is True
    compiled = found["SimCSE captured / the compiled plain loop, batch 512"]
    assert compiled[1] == "1.25x" and compiled[3] is False  # level with the compiled loop is the goal
    medse = found["MED-SE captured / SimCSE captured, batch 512"]
    assert medse[1].startswith("1.60x") and medse[3] is False
    assert found["MFU on real tokens, SimCSE captured (best of its rows), batch 512"][3] is True
    assert found["SimCSE captured / the plain loop, batch 64"][1] == "not measured"
    assert found["medse:graphs=true, batch 512"][1] == "0.80x the plain loop, 2.00x the compiled one"
    # the CPU mode's tiny figures speak to no GPU goal
    assert all(g[1] == "not measured" for g in check.goals(tmp_path, "cpu")[: len(check.GOALS)])


def test_a_cuda_test_step_in_which_no_test_ran_fails_outside_the_cpu_mode(tmp_path: Path) -> None:
    xml = tmp_path / "t.xml"
    xml.write_text(
        '<testsuites><testsuite><testcase name="a"><skipped message="no CUDA device here"/></testcase>'
        '<testcase name="b"><skipped message="no CUDA device here"/></testcase></testsuite></testsuites>'
    )
    for mode, status in (("full", "failed (no CUDA test ran: 2 skipped: no CUDA device here)"), ("cpu", "passed")):
        step = check.Step("cuda tests", [], 1, status="passed")
        check.judge_tests(step, xml, mode)
        assert step.status == status


def test_the_out_folder_is_new_and_another_runs_folder_is_refused(tmp_path: Path) -> None:
    used = tmp_path / "used"
    used.mkdir()
    (used / "summary.md").write_text("# an earlier run\n")
    with pytest.raises(SystemExit, match=r"--out .*used: holds another run's files \(summary.md\).*Fix: "):
        check.out_folder(used, "full", check.dt.datetime(2026, 12, 7, 21, 0, 5))
    assert sorted(p.name for p in used.iterdir()) == ["summary.md"]
    assert check.out_folder(tmp_path / "new", "full", check.dt.datetime.now()) == tmp_path / "new"
    dated = check.out_folder(None, "quick", check.dt.datetime(2026, 12, 7, 21, 0, 5))
    assert dated.name == "2026-12-07T210005Z-quick" and not dated.exists()
    # through the command line: one line, a non-zero exit, nothing written
    done = subprocess.run(
        [sys.executable, str(Path(check.__file__)), "--mode", "quick", "--out", str(used)],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert sorted(p.name for p in used.iterdir()) == ["summary.md"]


def test_the_summary_names_the_code_and_the_cut_steps(tmp_path: Path) -> None:
    steps = [
        check.Step("train, batch 512", [], 170, status="passed", seconds=120.0),
        check.Step("train, batch 64", [], 100, status="cut (over its 100 s)", seconds=100.0),
        check.Step("cuda tests", [], 110, status="not run (the check's 540 s were spent)"),
    ]
    info = {
        "date": "2026-12-07 21:00:05 UTC",
        "provenance": check.provenance(),
        "versions": {"device": "cpu", "cuda": None, "torch": "2.13.0"},
        "seconds": 300.0,
    }
    text = check.summary(tmp_path, "full", steps, info)
    prov = info["provenance"]
    assert len(prov["source_fingerprint"]) == 64 and prov["source_fingerprint"][:16] in text
    assert prov["commit"] and f"commit {prov['commit']}" in text and "tree" in text
    assert "Cut by its time budget (its figures are partial or absent): train, batch 64" in text
    assert "not run (the 540 s spent): cuda tests" in text
    assert "Every step ran within its time budget" not in text
    assert "| SimCSE captured / the plain loop, batch 512 | not measured |" in text


def test_the_open_goals_run_first_and_the_budgets_add_up_to_the_whole(tmp_path: Path) -> None:
    assert sum(check.BUDGETS.values()) + check.SETUP == check.BUDGET
    names = [s.name for s in check.steps("full", tmp_path, tmp_path / "tiny", sys.executable)]
    assert names[:2] == ["train, batch 512", "train, batch 64"] and names.index("cuda tests") > 2
    assert [n.split(",")[0] for n in names] == [k.split(",")[0] for k in check.BUDGETS]
    quick = check.steps("quick", tmp_path, tmp_path / "tiny", sys.executable)
    assert [s.name for s in quick] == ["train, batch 512", "train, batch 64", "cuda tests"]
    assert quick[1].argv[quick[1].argv.index("--methods") + 1 :] == check.QUICK64
    assert check.B512[0] == "simcse:graphs=true" and set(check.MEDSE) <= set(check.B512)


def test_auto_is_decided_from_the_figures_the_check_writes(tmp_path: Path) -> None:
    """auto.json (clinsent.gpu.speed's figures): each knob's row against the row without it, in one
    run or, across two checks, each to the same reference; the knob's CUDA tests as they ran."""
    from clinsent.gpu import speed

    def row(method: str, s: float, ratio: float, reference: str = "plain SimCSE") -> dict:
        return {"method": method, "ours_median_s": s, "ratio_median": ratio, "reference": reference}

    one, two = tmp_path / "one", tmp_path / "two"
    _train_json(one / "train-b64", [
        row("simcse:graphs=true", 0.01, 0.2), row("simcse:graphs=false", 0.04, 0.8),
        row("sup_simcse:graphs=true", 0.02, 0.16, "MNR"), row("medse:graphs=true", 0.02, 0.4),
    ])  # fmt: skip
    _train_json(
        one / "train-b512", [row("simcse:graphs=true", 0.1, 0.8), row("simcse:graphs=true:unpad=true", 0.095, 0.76)]
    )
    _train_json(two / "train-b64", [row("sup_simcse", 0.08, 0.98, "MNR"), row("medse", 0.08, 1.6)])
    tests = [
        *(n.format(o="simcse") for n in check.AUTO_TESTS["graphs"]),
        "test_a_captured_run_ends_where_the_eager_run_ends[sup_simcse]",
    ]
    (one / "cuda-tests.xml").write_text(
        "<testsuites><testsuite>" + "".join(f'<testcase name="{t}"/>' for t in tests) + "</testsuite></testsuites>"
    )
    found = check.auto_figures([one, two], {"provenance": {"commit": "abc"}, "versions": {"device": "H200"}})
    graphs = found["knobs"]["graphs"]
    assert graphs["simcse"]["ratio"] == 0.25 and graphs["simcse"]["how"] == "one run"
    assert graphs["sup_simcse"]["ratio"] == round(0.16 / 0.98, 3) and "same reference" in graphs["sup_simcse"]["how"]
    assert (
        found["knobs"]["unpad"]["simcse"]["ratio"] == 0.95 and found["knobs"]["unpad"]["simcse"]["batch_size"] == 512
    )
    assert speed.decide("graphs", "simcse", found)  # 0.25, its tests passed
    assert not speed.decide("graphs", "sup_simcse", found)  # faster, but one of its tests did not run
    assert not speed.decide("graphs", "medse", found)  # 0.4 / 1.6, each to the same reference; its tests did not run
    assert not speed.decide("unpad", "simcse", found)  # within the spread
    assert found["commit"] == "abc" and found["device"] == "H200"
