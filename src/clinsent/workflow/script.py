"""The one way a workflow script starts: :func:`run`.

Every script under ``workflow/scripts/`` is a docstring, a ``main(smk, log)`` that imports what
it needs and does its few lines, and ``run(snakemake, main)``. :func:`run` then, in order:

1. hands the job to the warm interpreter where one serves (:func:`clinsent.workflow.warm.hand_off`:
   the script runs again in a child that has torch and transformers imported; the imports
   inside ``main`` are what the cold process never pays for), except for the download jobs,
   which turn the hub on for their own process (``warm=False``);
2. sets up the job's logging and the guarded writer (:func:`clinsent.workflow.smk.setup_logging`);
3. takes the job's GPU slot where its rule declares a ``gpu`` resource
   (:func:`clinsent.gpu.slots.slot_of`), before anything imports torch;
4. calls ``main(smk, log)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

Main = Callable[[Any, logging.Logger], None]


def run(smk: Any, main: Main, *, warm: bool = True) -> None:
    """Start a job script (see the module docstring) and run its ``main``."""
    if warm:
        from clinsent.workflow.warm import hand_off

        hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest runs in it
    from clinsent.workflow.smk import setup_logging

    log = setup_logging(smk)
    if declares_gpu(smk):
        from clinsent.gpu.slots import slot_of

        slot_of(smk, log.info)  # this job's GPU (CUDA_VISIBLE_DEVICES), before anything starts CUDA
    main(smk, log)


def declares_gpu(smk: Any) -> bool:
    """Whether the job's rule counts it against ``gpu`` at all (``resources: gpu=...``, 0 included:
    such a job is told it runs on the CPU); a rule without the resource leaves the devices alone."""
    resources = getattr(smk, "resources", None)
    return resources is not None and "gpu" in resources.keys()
