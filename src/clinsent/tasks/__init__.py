"""The evaluation-task registry: one module per task (see :mod:`clinsent.tasks.base`).

``TASKS.get(name)`` returns a task's class, importing its module (named as the task) and no other.
"""

from __future__ import annotations

from clinsent.tasks.base import TASKS, Task

__all__ = ["TASKS", "Task"]
