"""``python -m clinsent.phi RESULTS [FILE ...]``: scan a run's shared files (:func:`clinsent.phi.quarantine.main`)."""

from clinsent.phi.quarantine import main

raise SystemExit(main())
