"""``python -m clinsent search --vectors FILE.parquet --model DIR --query TEXT [--query TEXT ...]``:
the nearest rows of an embedded corpus to each query, by inner product
(:func:`clinsent.embedding.search.nearest`), printed as ``query rank id score`` lines (ids and
scores only: never a text of the corpus); ``--out FILE.csv`` writes the same rows, owner-only
when the vectors file is (vectors of notes, or of a file nobody else can reach). The queries are
embedded with ``--model``, which must be the model that embedded the corpus (the file's metadata
names it: a vectors file of another model is refused). An error is one line (exit 2)."""

from __future__ import annotations

import sys
from pathlib import Path

from clinsent.config.declare import number_flag
from clinsent.embedding.search import Hit, SearchOptions
from clinsent.errors import CommandParser, InputError
from clinsent.process.heartbeat import HEARTBEAT, Heartbeat
from clinsent.safety.places import check_output_file


def parser() -> CommandParser:
    ap = CommandParser(
        prog="python -m clinsent search", description="The nearest rows of an embedded corpus to a query."
    )
    ap.add_argument("--vectors", required=True, type=Path, help="the embed command's output (id, vector)")
    ap.add_argument("--model", required=True, type=Path, help="the model that embedded it")
    ap.add_argument("--query", required=True, action="append", help="a query text (again for more)")
    declared = SearchOptions()
    ap.add_argument("--top", type=number_flag(SearchOptions, "top"), default=declared.top, help="rows per query")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows to this CSV file")
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when present)")
    ap.add_argument(
        "--model-made-them",
        action="store_true",
        help="the vectors file records no model (not the embed command's): --model made these vectors",
    )
    return ap


def _same_model(vectors: Path, model: Path, told: bool = False) -> None:
    """The vectors file was made by ``model`` (its content key, in the file's metadata); a file that
    is not Parquet, or records no model (not the embed command's), is refused, the latter unless
    the user says ``model`` made it (``told``: ``--model-made-them``)."""
    from clinsent.io.reading import parquet_file
    from clinsent.safety.content import content_key

    meta = parquet_file(vectors).schema_arrow.metadata or {}
    made_by = meta.get(b"clinsent.model_identity", b"").decode()
    if not made_by and not told:
        raise InputError(
            vectors,
            "records no model (it was not written by the embed command), so a search with --model could "
            "compare vectors of two models",
            "embed the corpus with the embed command, or add --model-made-them if --model made these vectors",
        )
    if made_by and made_by != content_key(model):
        raise InputError(
            vectors, f"was embedded by another model than {model}", "search with the model that embedded the corpus"
        )


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from clinsent.safety import guard

    guard.reset()
    try:
        if args.out is not None:  # the places rule every output keeps, before any work
            guard.own(check_output_file(args.out, "--out"))
        guard.protect_inputs([args.vectors, args.model])
        if not args.vectors.is_file():
            raise InputError(args.vectors, "no such file", "give the embed command's --out")
        _same_model(args.vectors, args.model, args.model_made_them)
        from clinsent.embedding.corpus import encode_in_length_order
        from clinsent.embedding.search import nearest
        from clinsent.embedding.vectors import load_encoder

        beat = Heartbeat(lambda line: print(line, file=sys.stderr, flush=True), HEARTBEAT, "search").start()
        try:
            queries = encode_in_length_order(load_encoder(args.model, args.device), list(args.query), 64)
            hits = nearest(args.vectors, queries, args.top)
        finally:
            beat.stop()
        if args.out is not None:
            _write(hits, args.out, args.vectors)
    except InputError as exc:
        print(f"search: {exc}", file=sys.stderr)
        return 2
    print("query\trank\tid\tscore")
    for h in hits:
        print(f"{h.query}\t{h.rank}\t{h.id}\t{h.score:.4f}")
    return 0


def _write(hits: list[Hit], out: Path, vectors: Path) -> None:
    """The rows as CSV, owner-only (in a folder only the user reaches) where the vectors are."""
    import pandas as pd

    from clinsent.io.files import atomic_path
    from clinsent.safety.guard import private_destination
    from clinsent.safety.reach import others_can_read

    private = not others_can_read(vectors)
    if private:
        private_destination(out)
    table = pd.DataFrame([vars(h) for h in hits], columns=["query", "rank", "id", "score"])
    with atomic_path(out, ".csv", private=private) as tmp:
        table.to_csv(tmp, index=False)
