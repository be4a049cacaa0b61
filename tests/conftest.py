"""Shared fixtures: a tiny random BERT (built from a config, no download) and repo paths."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from clinsent.demo.tiny_bert import make_tiny_bert

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEDCAT_DISABLE_VERSION_CHECK", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session", autouse=True)
def warm_interpreter(request: pytest.FixtureRequest) -> Iterator[None]:
    """The workflow tests' jobs forked from one warm interpreter per pytest worker
    (:mod:`clinsent.runner.warm`): at demo scale most of a model job's time is importing torch and
    transformers. Unit-test sessions start none; ``CLINSENT_COLD=1`` runs every job cold."""
    if os.environ.get("CLINSENT_COLD") or not any(i.get_closest_marker("workflow") for i in request.session.items):
        yield
        return
    from clinsent.runner import warm

    with warm.server() as path:
        os.environ[warm.ENV] = str(path)
        try:
            yield
        finally:
            os.environ.pop(warm.ENV, None)


@pytest.fixture(autouse=True)
def guarded_writer_reset() -> Iterator[None]:
    """What a test declares to the guarded writer (a job's outputs and inputs) ends with the test,
    and so does a job's set-up of logging (:func:`clinsent.runner.smk.setup_logging`): its heartbeat
    and locks, and warnings captured into logging (left on, the next test's set-up would find it
    on while pytest has put its own recorder back, and its warnings would never reach the log)."""
    import logging

    from clinsent.runner.smk import release_outputs
    from clinsent.safety import guard

    yield
    guard.reset()
    release_outputs()
    logging.captureWarnings(False)


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A folder others can reach (0755 under /tmp, which is 1777): pytest's own ``tmp_path`` lies
    in an owner-only folder, where nothing is within anyone else's reach."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="clinsent-public-", dir="/tmp"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


# `make test-workflow` runs the workflow tests on two pytest-xdist workers. The loopback Slurm test
# first (it mostly waits on the cluster while the other worker computes), then the longest first
# (figures from `pytest --durations`), so the two workers end together.
_LONGEST_FIRST = [
    "test_workflow_on_loopback_slurm",
    "test_whole_dag",
    "test_clinical_nli_demo_config_fills_every_table_and_chart",
    "test_augment_demo_config_fills_every_table",
    "test_benchmark_demo_fills_the_leaderboard_heatmap_and_mteb_results",
    "test_healthcare_lm_demo_config_fills_every_table_and_figure",
    "test_paper_demo_config_fills_every_table",
    "test_biosimcse_demo_config_fills_every_table_and_figure",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(getattr(item, "originalname", item.name), len(rank)))
