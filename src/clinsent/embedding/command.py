"""``python -m clinsent embed --model DIR --input FILE --out FILE.parquet``: a corpus's vectors with a
saved model (:func:`clinsent.embedding.corpus.embed_corpus`), outside the workflow; the files it may
write are the one named, its working folder and lock beside it, and the cache (``--cache``, by
default ``.clinsent-cache`` beside the output: :mod:`clinsent.safety.cache`) (:mod:`clinsent.safety.guard`),
and an error is one line on standard error (exit 2), naming the flag or file and the fix."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clinsent.config.declare import number_flag
from clinsent.config.sections import CorpusEmbeddingEntry
from clinsent.embedding.corpus import MEMORY, EmbedOptions, embed_corpus
from clinsent.embedding.sharded import work_folder
from clinsent.errors import CommandParser, InputError
from clinsent.process.heartbeat import HEARTBEAT, Heartbeat
from clinsent.safety.cache import DEFAULT, default_cache
from clinsent.safety.exclusive import lock_path


def parser() -> argparse.ArgumentParser:
    """The command's flags, their defaults a corpus_embeddings entry's declared ones."""
    ap = CommandParser(prog="python -m clinsent embed", description="Embed a whole corpus with a trained model.")
    ap.add_argument("--model", required=True, type=Path, help="a saved model folder (a trained run's model/)")
    ap.add_argument("--input", required=True, type=Path, help="text (one per line), CSV, TSV, JSON lines or parquet")
    ap.add_argument("--out", required=True, type=Path, help="the parquet file to write (id, vector)")
    ap.add_argument("--column", help="the texts' column or field (CSV, TSV, JSON lines, parquet)")
    ap.add_argument("--id-column", help="the ids' column or field (default: row numbers from 0)")
    ap.add_argument("--keep-text", action="store_true", help="write the texts beside their vectors")
    default = EmbedOptions()  # a corpus_embeddings entry's declared defaults
    declared = CorpusEmbeddingEntry  # each number flag's type and bounds: its knob's, declared once
    ap.add_argument(
        "--chunk",
        type=number_flag(declared, "chunk"),
        default=default.chunk,
        help="texts read and written at a time (memory)",
    )
    ap.add_argument("--batch-size", type=number_flag(declared, "batch_size"), default=default.batch_size)
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when present)")
    ap.add_argument(
        "--backend",
        default=default.backend,
        help="torch; or, on a CPU, onnx (ONNX Runtime) or openvino (OpenVINO's runtime: the fastest on CPUs)",
    )
    ap.add_argument(
        "--quantize",
        default=default.quantize,
        help="none; int8 (--backend onnx: dynamic; openvino: static, calibrated on the input's first chunk); "
        "bf16 (--backend openvino, where the CPU has bf16)",
    )
    ap.add_argument(
        "--quantize-tolerance",
        type=number_flag(declared, "quantize_tolerance"),
        default=default.quantize_tolerance,
        help="int8, bf16: warn when the vectors are further than this (mean cosine distance) from fp32's on a sample",
    )
    ap.add_argument(
        "--quantize-max-distance",
        type=number_flag(declared, "quantize_max_distance"),
        default=default.quantize_max_distance,
        help="openvino int8 without --quality-set: made within this mean cosine distance of fp32's vectors on "
        "held-back texts of the input (its most sensitive matrix products kept in f32 until it holds)",
    )
    ap.add_argument(
        "--quality-set",
        type=Path,
        default=None,
        help="an eval file scored from embeddings (with --quality-format): int8 and bf16 are also scored on it "
        "beside fp32; openvino int8 is made within --quantize-max-drop of its headline metric",
    )
    ap.add_argument("--quality-format", default=None, help="the --quality-set file's format (an eval set's format)")
    ap.add_argument(
        "--quantize-max-drop",
        type=number_flag(declared, "quantize_max_drop"),
        default=default.quantize_max_drop,
        help="openvino int8 with --quality-set: made within this drop of the set's headline metric",
    )
    ap.add_argument(
        "--memory",
        default=default.memory,
        choices=MEMORY,
        help="fast: the C heap as glibc grows it; flat: large blocks mapped apart (a fixed 4 MiB mmap "
        "threshold): the torch backend's peak flat to a million texts, at about 18%% less speed (ONNX Runtime "
        "and OpenVINO keep their own arenas and are flat with fast)",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help=f"an owner-only folder for the ONNX export (default: {DEFAULT} beside --out)",
    )
    ap.add_argument(
        "--private",
        action="store_true",
        help="the texts come from notes: the output is owner-only whatever the input's modes",
    )
    return ap


def main(argv: list[str], quality_of: Callable[[Path | None, str | None, str], Any] | None = None) -> int:
    """The command; ``quality_of``: what builds ``--quality-set``'s task (``python -m clinsent embed``
    gives :func:`clinsent.commands.embed.quality_task_of`: the tasks sit above this package)."""
    args = parser().parse_args(argv)
    from clinsent.safety import guard

    guard.reset()
    cache = args.cache if args.cache is not None else default_cache(args.out)
    # the file the user named, its lock and its chunks until it is written, and the cache
    guard.own(args.out, lock_path(args.out), work_folder(args.out).parent, cache)
    guard.protect_inputs([args.input, args.model, *([args.quality_set] if args.quality_set else [])])
    try:
        options = EmbedOptions(
            column=args.column,
            id_column=args.id_column,
            keep_text=args.keep_text,
            chunk=args.chunk,
            batch_size=args.batch_size,
            device=args.device,
            private=args.private,
            backend=args.backend,
            quantize=args.quantize,
            quantize_tolerance=args.quantize_tolerance,
            quantize_max_distance=args.quantize_max_distance,
            quantize_max_drop=args.quantize_max_drop,
            memory=args.memory,
            cache=args.cache,
        )
        if quality_of is None and (args.quality_set or args.quality_format):
            raise InputError("--quality-set", "is read by the embed command", "run it as python -m clinsent embed")
        quality = quality_of(args.quality_set, args.quality_format, args.quantize) if quality_of else None
        beat = Heartbeat(lambda line: print(line, file=sys.stderr, flush=True), HEARTBEAT, "embed").start()
        try:
            figures = embed_corpus(args.model, args.input, args.out, options, log=beat.said, quality_set=quality)
        finally:
            beat.stop()
    except InputError as exc:
        print(f"embed: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(figures))
    return 0
