"""``python -m clinsent.plan --summary CONFIG`` (:mod:`clinsent.plan.cli`)."""

from clinsent.plan.cli import main

raise SystemExit(main())
