"""The notes formats: one module per ``notes.format``, named as it (:data:`clinsent.corpus.notes.NOTE_READERS`
imports the one a config names), and the CSV machinery the two MIMIC layouts share (``csv_blocks``)."""
