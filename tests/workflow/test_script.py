"""The one way a workflow script starts (clinsent.runner.script.run): logging to the rule's log, the GPU
slot only where the rule declares a ``gpu`` resource, then the script's ``main``."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from snakemake.iocontainers import Namedlist

from clinsent.runner import script


def _job(tmp_path: Path, **resources: int) -> SimpleNamespace:
    return SimpleNamespace(
        input=Namedlist(),
        output=Namedlist([str(tmp_path / "out.json")]),
        log=Namedlist([str(tmp_path / "logs" / "job.log")]),
        config={"results": str(tmp_path)},
        resources=Namedlist(fromdict=resources),
        params=Namedlist(),
        rule="job",
    )


@pytest.mark.parametrize(("resources", "device"), [({}, "2"), ({"gpu": 0}, "")])
def test_run_logs_to_the_rule_log_and_takes_a_slot_only_where_the_rule_declares_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resources: dict[str, int], device: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    seen: list[Any] = []

    def main(smk: Any, log: logging.Logger) -> None:
        seen.append(smk)
        log.info("step one")

    job = _job(tmp_path, **resources)
    script.run(job, main, warm=False)
    assert seen == [job]
    assert "step one" in (tmp_path / "logs" / "job.log").read_text()
    # a rule without the resource leaves the devices alone; gpu=0 runs on the CPU
    assert os.environ["CUDA_VISIBLE_DEVICES"] == device
    assert script.declares_gpu(job) == ("gpu" in resources)
