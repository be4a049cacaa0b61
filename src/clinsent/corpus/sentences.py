"""Training corpora of plain sentences (config ``sentence_corpora.<name>``): no splitting, no NER.

The augmentation paper trains on one million PubMed sentences and on Chinese medical dialogue
corpora; such a corpus is a text file with one sentence per line (UTF-8, any language) or a
column of a parquet file, or several of those read one after another (``path`` a list). Blank
lines and empty cells are skipped and counted. ``sample: N`` draws N sentences without
replacement (seeded by ``sample_seed``; fewer than N is an error, so the size a dry run derives
``epochs`` from is the size the job trains on). The ``sentence_corpus`` rule writes the
sentences in the layout of the notes pipeline's sentence sets (``sent_id, text, set``), so both
feed the same ``batch_plan`` rule. Errors name the file and line or key, never the text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clinsent.config.declare import to_params
from clinsent.config.sections import SentenceCorpusEntry
from clinsent.errors import InputError
from clinsent.io.reading import FIRST_ROWS, Readers, check_file, parquet_file, shown_column, shown_columns
from clinsent.io.textfile import text_lines, text_problem

RESERVED = ("notes", "s_all", "s_ent", "s_none")  # names of the notes pipeline's sets


def corpus_paths(path: str | Sequence[str]) -> list[str]:
    """A corpus entry's ``path`` as a list (one file, or several read one after another)."""
    return [path] if isinstance(path, str) else list(path)


def corpus_format(path: str, fmt: str | None) -> str:
    """The entry's ``format``, or by the file's suffix: parquet for ``.parquet``, else text."""
    return fmt or ("parquet" if path.endswith(".parquet") else "text")


def _lines(path: str, where: str) -> tuple[list[str], int]:
    """The non-blank lines of a text file (:func:`clinsent.io.textfile.text_lines`), stripped, and the number of
    blank ones."""
    kept, blank = [], 0
    try:
        for line in text_lines(path):  # UTF-8, a BOM dropped, UTF-16 refused (clinsent.io.textfile)
            text = line.strip()
            if text:
                kept.append(text)
            else:
                blank += 1
    except FileNotFoundError as exc:
        raise InputError(path, "the sentence corpus does not exist", f"fix `{where}.path` in the config") from exc
    return kept, blank


def _column(path: str, column: str, where: str) -> list[str]:
    import pyarrow.parquet as pq

    if not Path(path).exists():
        raise InputError(path, "the sentence corpus does not exist", f"fix `{where}.path` in the config")
    names = _schema(path).names
    if column not in names:
        raise InputError(
            path,
            f"no column {shown_column(column)} (the file's columns: {shown_columns(names, [column])})",
            f"set `{where}.column`",
        )
    import pyarrow as pa

    values = pq.read_table(path, columns=[column]).column(column).combine_chunks()
    if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
        try:  # bytes: pyarrow's cast checks UTF-8; only a failed one is walked to name the row
            values = values.cast(pa.string())
        except pa.ArrowInvalid:
            for row, cell in enumerate(values.to_pylist(), start=1):
                try:
                    cell is None or cell.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        f"{path}: column {column!r}, row {row}",
                        f"byte {exc.start + 1} of the cell is not UTF-8",
                        "write the column as UTF-8 text",
                    ) from None
            raise
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type) or pa.types.is_null(values.type)):
        raise InputError(
            f"{path}: column {column!r}",
            f"holds {values.type}, not text",
            f"point `{where}.column` at the column of sentences",
        )
    texts = [v.strip() if isinstance(v, str) else "" for v in values.to_pylist()]
    bad = next((i for i, t in enumerate(texts, start=1) if t and text_problem(t)), None)
    if bad is not None:  # a parquet cell may hold a NUL character: no text line does
        problem = f"the cell {text_problem(texts[bad - 1])}"
        raise InputError(f"{path}: column {column!r}, row {bad}", problem, "remove it")
    return texts


def _text(path: str, entry: Mapping[str, Any], where: str) -> tuple[list[str], int]:
    return _lines(path, where)


def _parquet(path: str, entry: Mapping[str, Any], where: str) -> tuple[list[str], int]:
    cells = _column(path, str(entry.get("column", "text")), where)
    kept = [c for c in cells if c]
    return kept, len(cells) - len(kept)


def _schema(path: str) -> Any:
    return parquet_file(path).schema_arrow


def check_text(path: Path, entry: Mapping[str, Any], where: str) -> None:
    """The dry run's check of a text corpus: a text file whose first lines decode (UTF-8, or UTF-16
    with its mark) and hold a sentence."""
    check_file(path, f"set `{where}` to a text file of sentences, one per line")
    lines = text_lines(path)
    first = [line for _, line in zip(range(FIRST_ROWS), lines, strict=False)]
    lines.close()
    if not any(line.strip() for line in first):
        raise InputError(path, f"no sentence in the first {len(first)} line(s)", "give one sentence per line")


def check_parquet(path: Path, entry: Mapping[str, Any], where: str) -> None:
    """The dry run's check of a parquet corpus: the column exists and holds text."""
    import pyarrow as pa

    check_file(path, f"set `{where}` to a parquet file", text=False)
    schema, column = _schema(str(path)), str(entry.get("column", "text"))
    if column not in schema.names:
        raise InputError(
            path,
            f"no column {shown_column(column)} (the file's columns: {shown_columns(schema.names, [column])})",
            f"set `{where.rsplit('.', 1)[0]}.column`",
        )
    kind = schema.field(column).type
    if not any(f(kind) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_null)):
        raise InputError(path, f"column {shown_column(column)} holds {kind}, not text", "name the column of sentences")


# sentence corpus layouts (``sentence_corpora.<name>.format``): name -> the sentences of one file and
# the number of blank lines or empty cells skipped
SENTENCE_FORMATS: Readers[Callable[[str, Mapping[str, Any], str], tuple[list[str], int]]] = Readers(
    "sentences", "sentence corpus format", "sentence_corpora.<name>.format"
)
SENTENCE_FORMATS.register("text", check=check_text)(_text)  # UTF-8, one sentence per line
SENTENCE_FORMATS.register("parquet", check=check_parquet)(_parquet)  # one sentence per cell of `column`


def _read_file(path: str, entry: Mapping[str, Any], where: str) -> tuple[list[str], int]:
    return SENTENCE_FORMATS.get(corpus_format(path, entry.get("format")), where=f"{where}.format")(path, entry, where)


def read_sentence_corpus(name: str, entry: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The corpus' sentences (``sent_id, text, set, source``) and a report of counts (never text)."""
    where = f"config: sentence_corpora.{name}"
    texts: list[str] = []
    sources: list[int] = []
    files = []
    splitter = None
    for i, path in enumerate(corpus_paths(entry["path"])):
        kept, skipped = _read_file(path, entry, where)
        record: dict[str, Any] = {"path": path}
        if entry.get("split"):  # each line (cell) a document, e.g. an abstract: our ScispaCy splitter
            from clinsent.corpus.split import SentenceSplitter

            splitter = splitter or SentenceSplitter()
            record["documents"] = len(kept)
            kept = [sent.text for doc in kept for sent in splitter.split_normalized(doc)]
        texts += kept
        sources += [i] * len(kept)
        files.append({**record, "sentences": len(kept), "skipped_blank": skipped})
    total = len(texts)
    sample = entry.get("sample")
    if sample is not None and int(sample) > total:
        raise InputError(
            f"{where}.sample",
            f"asks for {int(sample)} sentences, the corpus has {total}",
            "lower `sample`, or remove it to train on the whole corpus",
        )
    if sample is not None:
        keep = np.sort(
            np.random.default_rng(int(entry.get("sample_seed", 0))).choice(total, int(sample), replace=False)
        )
    else:
        keep = np.arange(total)
    if len(keep) == 0:
        raise InputError(
            ", ".join(corpus_paths(entry["path"])),
            "the sentence corpus is empty after sampling",
            f"point `{where}.path` at a file with sentences, or raise `sample`",
        )
    df = pd.DataFrame(
        {
            "sent_id": np.arange(len(keep), dtype=np.int64),
            "text": [texts[k] for k in keep],
            "set": "all",
            "source": np.asarray(sources, dtype=np.int32)[keep],
        }
    )
    for i, f in enumerate(files):
        f["sampled"] = int((df["source"] == i).sum())
    return df, {"sentences_read": total, "sentences": len(df), "sample": sample, "files": files}


def corpus_size(name: str, entry: SentenceCorpusEntry, placeholders_ok: bool = False) -> int | None:
    """The number of sentences the corpus will hold, when the config is read (for ``epochs``):
    ``sample`` when given, else a count of the files (None for a missing file in a dry run with
    placeholders)."""
    if entry.sample is not None:
        return entry.sample
    if entry.split:  # documents: their sentences are counted by the sentence_corpus job
        return None
    if placeholders_ok and not all(Path(p).exists() for p in corpus_paths(entry.path)):
        return None
    where = f"config: sentence_corpora.{name}"
    return sum(len(_read_file(p, to_params(entry), where)[0]) for p in corpus_paths(entry.path))


def steps_for_epochs(epochs: float, sentences: int, batch_size: int) -> int:
    """Steps of ``epochs`` passes over ``sentences`` in batches of ``batch_size`` (the last one partial)."""
    return max(1, math.ceil(epochs * sentences / batch_size))


def corpus_stats(df: pd.DataFrame) -> dict[str, float]:
    """Table 1 of the augmentation paper: sentences, whitespace words, characters, and their means."""
    words = df["text"].str.split().str.len()
    chars = df["text"].str.len()
    n = len(df)
    return {
        "sentences": n,
        "words": int(words.sum()),
        "characters": int(chars.sum()),
        "mean_words": float(words.mean()) if n else float("nan"),
        "mean_characters": float(chars.mean()) if n else float("nan"),
    }


def fraction_subset(sent_ids: np.ndarray, fraction: float, seed: int = 0) -> np.ndarray:
    """The first ``ceil(fraction x n)`` sentence ids of one fixed permutation (``seed``), in id
    order: the subsets of Figure 1 are nested (1% within 10% within ...), the same for every
    training seed."""
    if not 0.0 < fraction <= 1.0:
        raise InputError("config", f"fraction={fraction}", "use a share in (0, 1]")
    if fraction >= 1.0:
        return np.sort(sent_ids)
    order = np.random.default_rng(seed).permutation(np.sort(sent_ids))
    return np.sort(order[: math.ceil(fraction * len(sent_ids))])
