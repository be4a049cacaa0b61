"""The tool's commands (``python -m clinsent COMMAND``) that open a run's plan through the door:
``new-config`` (:mod:`.new_config`) and ``plan`` (:mod:`.plan`). They sit above the door and the
planner; the embed command, which opens no plan, lives with the embedding it runs
(:mod:`clinsent.embedding.command`)."""
