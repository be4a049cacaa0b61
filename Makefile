# Two commands set everything up on a fresh machine:
#   make demo   -> installs into .venv if needed, runs the whole workflow on the embedded demo
#   make test   -> installs the dev extras into .venv if needed, runs the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CORES  ?= $(shell nproc 2>/dev/null || echo 1)
export PATH := $(CURDIR)/$(BIN):$(PATH)
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export MEDCAT_DISABLE_VERSION_CHECK ?= true
export TOKENIZERS_PARALLELISM ?= false

.PHONY: gpu-check install dev docs demo test-fast test-workflow bench-startup paper-demo paper-demo-augment paper-demo-biosimcse paper-demo-clinical-nli paper-demo-healthcare-lm benchmark-demo test dry-run lint clean demo-data bench-corpus bench-train bench-processes bench-memory bench-augment bench-documents bench-embed bench-int8 bench-peers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch first, alone and pinned: it resolves to the local CPU wheel; an unpinned
# torch pulled in by another package would fetch several GB of CUDA wheels.
# Each step says what it installs and how far the install is (pip itself stays quiet).
$(VENV)/.installed: $(BIN)/python requirements.lock requirements-nodeps.txt pyproject.toml
	@echo "install [1/4]: torch 2.13.0, the CPU wheel (192 MB)"
	$(BIN)/python -m pip install --quiet torch==2.13.0
	@echo "install [2/4]: the $$(grep -c '==' requirements.lock) pinned packages of requirements.lock (transformers, sentence-transformers, snakemake, MedCAT, ...)"
	$(BIN)/python -m pip install --quiet -r requirements.lock
	@echo "install [3/4]: scispacy 0.6.2 without its pins (requirements-nodeps.txt: it declares numpy<2; README)"
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
	@echo "install [4/4]: this package (clinsent), editable"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@echo "install: done ($(VENV))"
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed requirements-dev.lock
	@echo "install [dev]: the test and docs tools of requirements-dev.lock"
	$(BIN)/python -m pip install --quiet -r requirements-dev.lock
	touch $@

install: $(VENV)/.installed

dev: $(VENV)/.dev-installed

# The demos' jobs are forked from one interpreter that has imported torch and transformers
# (clinsent.runner.warm; at demo scale importing them is most of a model job's time). `make demo WARM=`
# runs every job in its own process, as a plain `snakemake` command does.
WARM ?= $(BIN)/python -m clinsent warm --

demo: install
	$(WARM) $(BIN)/snakemake all --cores $(CORES) --resources gpu=1

# MED-SE's tables and Figure 2 at demo scale (config/paper/medse-demo.yaml; README "Regenerating MED-SE")
paper-demo: install
	$(WARM) $(BIN)/snakemake all --configfile config/paper/medse-demo.yaml --cores $(CORES) --resources gpu=1

# The augmentation paper's tables and Figure 1 at demo scale (config/paper/augment-demo.yaml;
# README "Regenerating the augmentation paper")
paper-demo-augment: install
	$(WARM) $(BIN)/snakemake all --configfile config/paper/augment-demo.yaml --cores $(CORES) --resources gpu=1

# BioSimCSE's Tables 1-2 and Figures 1-2 at demo scale (config/paper/biosimcse-demo.yaml; README "Regenerating BioSimCSE");
# its second base model is the tiny random BERT, written locally from a seed first
paper-demo-biosimcse: install
	$(BIN)/python -m clinsent.demo.tiny_bert downloads/demo/tiny-bert >/dev/null
	$(WARM) $(BIN)/snakemake all --configfile config/paper/biosimcse-demo.yaml --cores $(CORES) --resources gpu=1

# The clinical NLI study's tables and charts at demo scale (config/paper/clinical-nli-demo.yaml;
# README "Regenerating the clinical NLI study")
paper-demo-clinical-nli: install
	$(WARM) $(BIN)/snakemake all --configfile config/paper/clinical-nli-demo.yaml --cores $(CORES) --resources gpu=1

# The healthcare-LM paper's MIMIC-III tables and figures at demo scale (config/paper/healthcare-lm-demo.yaml;
# README "Regenerating the healthcare-LM paper")
paper-demo-healthcare-lm: install
	$(WARM) $(BIN)/snakemake all --configfile config/paper/healthcare-lm-demo.yaml --cores $(CORES) --resources gpu=1

# The clinical embedding benchmark at demo scale (config/benchmark-demo.yaml; docs/benchmark.md): three
# models on every task kind; the tiny random BERT is written locally from a seed first
benchmark-demo: install
	$(BIN)/python -m clinsent.demo.tiny_bert downloads/demo/tiny-bert >/dev/null
	$(WARM) $(BIN)/snakemake all --configfile config/benchmark-demo.yaml --cores $(CORES) --resources gpu=1

# Start-up of every job kind (Snakemake's preamble + the script's imports + its model load) beside
# numpy+pandas+pyarrow, torch+transformers and a bare AutoModel load; bench/results/startup.md. About 3 min.
bench-startup: install
	$(BIN)/python bench/bench_startup.py $(BENCH_ARGS)

# Document pre-training steps (mlm, declutr, note_category) beside a plain transformers MLM step at batch 8 x 512
# tokens, and the embedding-space analyses' time and memory at 1x, 10x and 100x 500 documents; figures in
# bench/results/documents.md. About 20 minutes on 2 cores.
bench-documents: install
	$(BIN)/python bench/bench_documents.py $(BENCH_ARGS)

# The whole suite: the fast part, then the end-to-end workflow runs (each test runs once).
test: test-fast test-workflow

# The inner loop: ruff (lint and format check), mypy and every test that runs no workflow (the
# `workflow` marker), about 6 min.
# mypy runs on the core the (serial) tests leave idle; its report follows theirs, and either
# failing fails the target. (pytest-xdist on these tests was slower here: 185 s against 146 s.)
test-fast: dev docs
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/python bench/gpu/check.py --mode cpu
	@$(BIN)/python -m mypy > .mypy.out 2>&1 & types=$$!; \
	$(BIN)/python -m pytest -m "not workflow" --durations=10; tests=$$?; \
	wait $$types; typed=$$?; cat .mypy.out; rm -f .mypy.out; \
	test $$tests -eq 0 && test $$typed -eq 0

# The tests that run Snakemake end to end (the paper-demo twins, the whole DAG, loopback Slurm), on
# TEST_WORKERS pytest-xdist workers: the Slurm test first (it mostly waits on the cluster while the
# other worker computes), then the longest first (tests/conftest.py).
TEST_WORKERS ?= 2
test-workflow: dev
	$(BIN)/python -m pytest -m workflow -n $(TEST_WORKERS) --durations=10

# The docs site (mkdocs-material) into site/; --strict fails on a broken link or a page left out of nav.
docs: dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # not --quiet: it hides the warnings --strict fails on

dry-run: install
	$(BIN)/snakemake all -n --cores $(CORES) --resources gpu=1

# Ruff's lint and format check ([tool.ruff] in pyproject.toml; `ruff format .` and `ruff check --fix .`
# mend), then Snakemake's own lint of the rules.
lint: dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/snakemake --lint

# Regenerates the committed demo inputs under resources/demo (seeded, byte-stable).
demo-data: install
	$(BIN)/python resources/demo/generate.py --out resources/demo

# Corpus-stage benchmark (not part of the tests): synthetic NOTEEVENTS at 1x, 10x and 100x the
# demo size through the workflow, beside the raw libraries; figures in bench/results/corpus.md.
# About 25 minutes on 2 cores; BENCH_ARGS="--sizes 1 10" for a quick look.
BENCH_ARGS ?=
bench-corpus: install
	$(BIN)/python bench/bench_corpus.py $(BENCH_ARGS)

# one training step of each method beside a plain PyTorch+transformers SimCSE step (supervised SimCSE and
# MNR: beside sentence-transformers' own MNR step on the same triplets), interleaved, as a ratio;
# BERT-base size, batch 32, length 128 (CUDA when present: also sentences/s, step memory, MFU;
# bench/results/cuda). About 30 min on 2 cores, 1.5 min on an H100.
bench-train: install
	$(BIN)/python bench/bench_train.py --methods simcse medse sup_simcse mnr $(BENCH_ARGS)

# Peak memory of one training step at BioSimCSE's batch 512 x 128 with and without mini_batch 32 (GradCache
# chunks), each setting in its own process; the small random BERT on the CPU, BERT-base on CUDA
# (bench/results/memory.md, bench/results/cuda/memory.md). About 10 minutes on 2 cores.
# One training step over 1 and 2 processes on the CPU (gloo): step time, bytes all-reduced a step, the
# all-reduce's share of the step; bench/results/processes.md. About 2 minutes.
bench-processes: install
	$(BIN)/python bench/bench_processes.py $(BENCH_ARGS)

bench-memory: install
	$(BIN)/python bench/bench_memory.py $(BENCH_ARGS)

# Embedding a whole corpus on a CPU: sentences/s and peak memory at 10k, 100k and 1M sentences for our
# backends (torch, ONNX, ONNX int8, OpenVINO, OpenVINO bf16; CUDA rows on a GPU) beside the peers
# (make bench-peers first; up to 100k), as ratios to sentence-transformers' encode, quality beside
# each, the shard speed-up (bench/results/embed.{md,json}: a row is kept once measured, so the 1M rows
# can be completed across sessions; BENCH_ARGS="--sizes 10000" for a shorter run)
bench-embed: install
	$(BIN)/python bench/bench_embed.py $(BENCH_ARGS)

# OpenVINO int8 under its default bound on the packaged MiniLM and every model a demo run trained (make demo
# first): the products kept in f32, the distance to f32, the demo clinical STS Spearman beside f32's, the rates
# (bench/results/int8/int8.md; a few minutes)
bench-int8: install
	$(BIN)/python bench/bench_int8.py $(BENCH_ARGS)

# The peers of bench-embed (sentence-transformers' ONNX and OpenVINO backends, fastembed), each in a
# bench-only environment of its own built from PyPI (bench/peers/<peer>/requirements.txt into
# bench/peers/.envs/; never the project's lock). Run it once before make bench-embed.
bench-peers: install
	$(BIN)/python bench/peers/build.py

# The augmentation paper's cost per step (each augmentation, MixCSE, instance weighting, both) as a
# ratio to plain SimCSE, at its batch 128 and length 32 on the small model (about 10 min on 2 cores),
# and the full grid's job count, steps and estimated GPU-hours (bench/grid_cost.py --help).
AUGMENTS = simcse $(foreach a,random_crop word_deletion stopword_insertion,simcse:augmentation=$(a):augmentation_rate=0.1) \
	simcse:augmentation=random_swap simcse:augmentation=punctuation_insertion:augmentation_rate=0.3 \
	mixcse:instance_weighting=false mixcse:mixing=false mixcse
bench-augment: install
	$(BIN)/python bench/bench_train.py --size small --batch-size 128 --max-length 32 --methods $(AUGMENTS) \
		--out bench/results/augment $(BENCH_ARGS)
	$(BIN)/python bench/grid_cost.py config/paper/augment.yaml --out bench/results/augment/grid.md

# Every GPU path proved on a GPU (bench/gpu/check.py): the open goals' bench-train rows first (batch 512, then 64,
# each beside the naive and the compiled plain loop), a profile, the CUDA tests, an end-to-end run with gpus: [0]
# and bench-memory at 512 x 128; figures in a new folder, bench/results/cuda/<date>T<time>Z-<mode>/summary.md, which
# names the commit (CLINSENT_COMMIT=<sha> where the copy has no .git). MODE=quick (the open goals' rows, then the
# CUDA tests: the rerun after a fix); MODE=cpu (the same script on the CPU in about a minute; make test-fast runs
# it). On a GPU machine without network, carry the wheelhouse bench/gpu/wheelhouse.sh builds: it is installed
# first, with no index, and the machine's own torch and python3 are used (docs/performance.md).
MODE ?= full
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)
# the wheelhouse only where there is no project venv (the GPU machine): a venv has its own packages
WHEELHOUSE ?= $(if $(wildcard $(BIN)/python),,$(wildcard bench/gpu/wheelhouse))
gpu-check:
	$(GPU_PYTHON) bench/gpu/check.py --mode $(MODE) $(if $(WHEELHOUSE),--wheelhouse $(WHEELHOUSE))

clean:
	rm -rf results .snakemake
