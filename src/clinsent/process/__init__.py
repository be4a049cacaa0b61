"""What any process of the tool sets up for itself, below every other layer but the root: its
network switches (:mod:`.offline`: offline by construction), its progress lines with a rate
and an ETA (:mod:`.eta`) and a line at least every so many seconds while it works (:mod:`.heartbeat`)."""
