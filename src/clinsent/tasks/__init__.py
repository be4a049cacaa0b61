"""The evaluation-task registry: one module per task (see :mod:`clinsent.tasks.base`).

``TASKS.get(name)`` returns a task's class; importing this package registers the built-ins.
"""

from __future__ import annotations

from clinsent.tasks import (
    class_alignment,
    class_similarity,
    doc_classification,
    kmeans_clusters,
    probe,  # noqa
    retrieval,
    rqe,
    similarity_graph,
    sts,
    token_classification,
)  # noqa: E402,F401  (register the built-ins)
from clinsent.tasks.base import TASKS, Task

__all__ = ["TASKS", "Task"]
