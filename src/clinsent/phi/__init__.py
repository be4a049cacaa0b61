"""The PHI guard: folders that hold note text are owner-only, and files meant for sharing are
searched for note text before a run is done.

- :data:`NOTE_DIRS`: the results folders that hold note text (notes, sentences, entities, batch
  plans, checkpoints, documents, training rows and embeddings with their texts); each job, as it
  starts and before it writes, gives the one it writes into ``phi.dir_mode`` (0700), tightening
  a folder made by an earlier run too (:func:`protect_job`, called by every job script).
- :func:`sample_ngrams`: a seeded sample of word n-grams of the notes (``phi.ngram`` words each,
  ``phi.sample`` of them from ``phi.notes`` notes), kept only as salted hashes, so the sample file
  holds no text.
- :func:`scan`: every shared file (tables, figures and their data, ``summary.csv``, logs and
  ``.err`` files, benchmarks, everything under ``models/`` but the weights, the HTML report) is
  read as a person could read it: UTF-8 or UTF-16 text, and what it packs (gzip, base64 runs and
  the data URIs in which ``snakemake --report`` embeds every file, PDF streams and the text
  they show, PNG text chunks); each is cut into the same n-grams, and a hash in the sample is a
  leak, reported with the file, the packed piece and the byte offset (never the text), and the
  scan fails.
- :func:`quarantine`: a failed scan moves every flagged file (a trained model: its whole run
  folder) into an owner-only ``phi/quarantine/<time>/`` folder and records the failure in
  ``phi/scan_failed.json``; while that record stands, ``snakemake --report`` refuses to build
  (:func:`refuse_report`). The moved outputs are missing, so the next run rebuilds them and
  scans again; a passing scan removes the record.

Sampled n-grams catch verbatim copies of runs of ``ngram`` words, and a leak of a few sentences
only with the chance that one of its n-grams is in the sample: the scan is a tripwire, not a proof.
Boilerplate that many notes share (headers such as "Discharge Date") would match legitimately
shared text, so n-grams with fewer than ``min_letters`` letters, or found in more than
``max_share`` of the drawn notes, are not sampled.
"""

from clinsent.phi.protect import NOTE_DIRS, NOTES_DERIVED, derived_from_notes, protect_dirs, protect_job
from clinsent.phi.quarantine import FAILED, QUARANTINE, PhiLeak, check_shared, main, quarantine, refuse_report
from clinsent.phi.sample import Sample, sample_ngrams, words
from clinsent.phi.scan import SHARED, WEIGHTS, Leak, file_leaks, scan, shared_files

__all__ = [
    "FAILED",
    "Leak",
    "NOTES_DERIVED",
    "NOTE_DIRS",
    "PhiLeak",
    "QUARANTINE",
    "SHARED",
    "Sample",
    "WEIGHTS",
    "check_shared",
    "derived_from_notes",
    "file_leaks",
    "main",
    "protect_dirs",
    "protect_job",
    "quarantine",
    "refuse_report",
    "sample_ngrams",
    "scan",
    "shared_files",
    "words",
]
