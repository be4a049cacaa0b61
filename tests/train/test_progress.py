"""Progress lines: rate-limited, with counts, a rate and an ETA."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clinsent.process.eta import Progress, duration


def test_progress_lines_are_at_most_one_per_interval_plus_the_last() -> None:
    now = [0.0]
    lines: list[str] = []
    p = Progress(
        "ner 000.parquet",
        1000,
        lines.append,
        unit="sentence rows",
        every=30,
        rate_of="sentences",
        clock=lambda: now[0],
    )
    for step in range(1, 11):  # 10 updates, 10 s apart
        now[0] = 10.0 * step
        p.update(100 * step, sentences=80 * step, entities=7 * step)
    p.update(1000, final=True, sentences=800, entities=70)
    assert len(lines) == 4  # at 30, 60 and 90 s, and the last
    assert lines[0] == (
        "ner 000.parquet: 300/1000 sentence rows (30%), 240 sentences, 21 entities, "
        "8.0 sentences/s, 0:00:30 elapsed, ETA 0:01:10"
    )
    assert lines[-1].endswith("70 entities, 8.0 sentences/s, 0:01:40 elapsed, ETA 0:00:00")
    assert duration(3725.4) == "1:02:05"


def test_libraries_chatter_goes_to_the_rule_log_only(tmp_path, capfd) -> None:  # type: ignore[no-untyped-def]
    """MedCAT's progress lines and spaCy's FutureWarning reach the rule's log, not the console;
    our own lines and errors reach both."""
    import logging
    import warnings
    from types import SimpleNamespace

    from clinsent.runner.smk import setup_logging

    smk = SimpleNamespace(log=[str(tmp_path / "rule.log")], rule="ner", config={})
    log = setup_logging(smk)
    logging.getLogger("medcat.model_creation.cdb_maker").info("Current progress: 40% at 0.1s per 100 rows")
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # the suite ignores FutureWarning (pyproject)
        warnings.warn("Possible set union at position 6", FutureWarning, stacklevel=1)
    log.info("shard 000: 12 entities")
    logging.getLogger("medcat.cat").error("the pack could not be read")
    for handler in logging.getLogger().handlers:
        handler.flush()
    console = capfd.readouterr().err
    written = (tmp_path / "rule.log").read_text()
    for line in ("Current progress", "Possible set union", "shard 000: 12 entities", "could not be read"):
        assert line in written, line
    assert "shard 000: 12 entities" in console and "could not be read" in console
    assert "Current progress" not in console and "Possible set union" not in console
    logging.getLogger().handlers.clear()
    logging.captureWarnings(False)


def test_the_training_line_comes_after_the_first_step_then_by_time_without_waiting() -> None:
    """clinsent.train.progress: a line after the first step, then once `every` seconds have passed
    (a fake clock), with the loss read from the step it was taken at; none in between."""
    import torch

    from clinsent.train.progress import TrainProgress

    now = [0.0]
    lines: list[str] = []
    progress = TrainProgress(1, 100, 8, lines.append, every=30.0, clock=lambda: now[0])
    for step in range(1, 101):
        now[0] += 2.0  # two seconds a step
        if progress.due(step):
            progress.take(step, {"loss": torch.tensor(1.0 / step), "loss_mlm": torch.tensor(0.5)})
        progress.poll()
    steps = [int(line.split("/")[0].split()[-1]) for line in lines]
    assert steps == [1, 16, 31, 46, 61, 76, 91]  # the first step, then every 15 steps of 2 s
    assert lines[1] == f"progress: step 16/100, loss {1 / 16:.4g} (mlm 0.5), {16 * 8 / 32:.1f} rows/s, ETA 0:02:48"
    silent = TrainProgress(1, 10, 8, lines.append, every=0.0)
    assert not silent.due(1)


def _wait_for(predicate: Any, seconds: float = 5.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_the_heartbeat_says_still_working_after_every_silence_and_a_job_line_resets_it() -> None:
    """clinsent.process.heartbeat: with a fake clock, no line while the job speaks often enough;
    one line (rule and seconds only) once it was silent for `every` seconds; a line of its own
    starts the silence again."""
    import io

    from clinsent.process.heartbeat import Heartbeat

    now = [0.0]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    log = logging.getLogger("clinsent.test_heartbeat")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    beat = Heartbeat(log.info, 15, "split_sentences", clock=lambda: now[0])
    handler.addFilter(beat)
    beat.start()
    try:
        now[0] = 14.0
        log.info("shard 000: 10 notes")  # the job's own line at 14 s
        now[0] = 28.0  # 14 s of silence: not yet
        assert not _wait_for(lambda: "still working" in out.getvalue(), 1.5)
        now[0] = 29.5  # 15.5 s of silence
        assert _wait_for(lambda: "still working" in out.getvalue())
        assert out.getvalue().splitlines()[-1] == (
            "split_sentences is still working: 30 s since it started, 16 s since its last line"
        )
        lines = len(out.getvalue().splitlines())
        assert not _wait_for(lambda: len(out.getvalue().splitlines()) > lines, 1.5)  # its own line reset it
    finally:
        beat.stop()
        log.removeHandler(handler)


def test_every_job_has_a_heartbeat_on_its_console_at_the_configured_interval(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from clinsent.process.heartbeat import Heartbeat
    from clinsent.runner.smk import release_outputs, setup_logging

    smk = SimpleNamespace(
        log=[str(tmp_path / "rule.log")], rule="embed", config={"progress": {"heartbeat_seconds": 7}}
    )
    try:
        setup_logging(smk)
        beats = [f for h in logging.getLogger().handlers for f in h.filters if isinstance(f, Heartbeat)]
        assert [(b.every, b.what) for b in beats] == [(7, "embed")] and beats[0]._thread.is_alive()
        release_outputs()
        beats[0]._thread.join(timeout=5)
        assert not beats[0]._thread.is_alive()  # the job ended: its heartbeat too
    finally:
        logging.getLogger().handlers.clear()
        logging.captureWarnings(False)
