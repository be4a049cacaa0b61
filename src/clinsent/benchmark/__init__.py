"""The clinical embedding benchmark: any model scored on every task of the five papers
(``config/benchmark.yaml``), with results in MTEB's format (:mod:`clinsent.benchmark.mteb`)."""
