"""The reader layer: every user file the tool reads goes through a reader registered here.

One index, :data:`READER_KINDS`: for each kind of file (``notes``, ``texts`` for the corpus
embeddings and the embed command, ``sentences``, ``training_data``, and the eval-set formats of
the STS, RQE and probe tasks) a :class:`Readers` registry of its formats, so a user's format is
one ``register`` away and every kind keeps one contract:

- ``register(name, check=...)`` adds a reader and its **check**: ``check(path, entry, where)``
  reads the file's header, its format and its first block (:data:`FIRST_ROWS` rows; a notes CSV's
  first read block, ``notes.block_mb``), never the whole file, and raises an :class:`InputError`. The dry
  run calls it for every configured input (:func:`clinsent.plan.input_checks.check_inputs`), so a wrong
  column, an unknown extension, an empty or binary file, a header or first block that is not
  UTF-8, or a folder stops there, naming the config key; a bad byte further in stops the job,
  naming the file and the row, with nothing written. A kind whose files are small (eval sets)
  is ``read_in_full`` at dry run instead, through its task.
- Errors follow one policy (:func:`shown_columns`, :func:`check_file`): the file, the row
  number, the fix; never a cell or a line of the file. A header field is named only when it is
  a column the config or the reader expects, or one of the formats' own column names
  (:data:`FORMAT_COLUMNS`): any other shows as "a column of N characters" (in a file without a
  header line the "header" is a data row, and a plain word of it may be a patient's name). A
  first line none of whose fields is such a name, and one of which is not a plain name at all,
  is said to be a data row (:func:`looks_headerless`), never quoted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from clinsent.errors import KEY, InputError
from clinsent.registry import Registry, RegistryError
from clinsent.safety.content import check_regular

T = TypeVar("T")
Check = Callable[[Path, Mapping[str, Any], str], None]  # (file, config entry, config key) -> None or InputError
FIRST_ROWS = 1000  # rows a check reads


class Readers(Registry[T]):
    """The readers of one kind of file: a section of the one reader index (see the module)."""

    def __init__(
        self, kind: str, what: str, config_key: str, read_in_full: bool = False, package: str | None = None
    ) -> None:
        super().__init__(what, config_key, package=package)
        self.kind, self.read_in_full = kind, read_in_full
        self.module = str(sys._getframe(1).f_globals.get("__name__", ""))  # where it is made (the docs name it)
        self.checks: dict[str, Check] = {}
        self.reads: dict[str, tuple[str, ...]] = {}
        if READER_KINDS.setdefault(kind, self) is not self:
            raise RegistryError(f"reader kind {kind!r} is made twice")

    def register(
        self, name: str, settings: type | None = None, check: Check | None = None, reads: tuple[str, ...] | None = None
    ) -> Callable[[T], T]:
        """``@READERS.register("name", check=check_fn)``: the reader and its dry-run check;
        ``reads``: the keys of the config entry this format reads (None: every key), so a key it
        would ignore is refused (:meth:`ignored`)."""
        add = super().register(name, settings)

        def both(entry: T) -> T:
            out = add(entry)
            if check is not None:
                self.checks[name] = check
            if reads is not None:
                self.reads[name] = reads
            return out

        return both

    def ignored(self, name: str, entry: Mapping[str, Any], defaults: Mapping[str, Any], where: str) -> None:
        """Stop when ``entry`` sets a key that format ``name`` does not read to anything but its
        default (a key left at its default changes nothing, whatever the format): it would be
        ignored without a word."""
        if name not in self.reads:
            return
        reads = set(self.reads[name]) | {"path", "format"}
        for key, value in entry.items():
            if key not in reads and value != defaults.get(key):
                raise InputError(
                    f"{where}.{key}",
                    f"the {name} format does not read it (it reads {', '.join(sorted(reads))})",
                    f"remove {key}, or choose the format that has it",
                )

    def check(self, name: str, path: str | Path, entry: Mapping[str, Any], where: str) -> None:
        """Run the check of reader ``name`` on one file; its error is prefixed with ``where`` (the
        config key), so the dry run names the key, the file, the row and the fix."""
        if name not in self.checks:
            self._load(name)  # a reader in a module of its own name (the registry's package)
        check = self.checks.get(name)
        if check is not None:
            with keyed(where, path, f"a {self.kind} file ({name})"):
                check(Path(path), entry, where)


@contextmanager
def keyed(where: str, path: str | Path, what: str) -> Iterator[None]:
    """An error of reading ``path`` (the file of config key ``where``) as one line that starts with
    the key: an :class:`InputError` keeps its file, row and fix; any other failure of a parser
    (a CSV, JSON, XML or Arrow error, whose own message may quote the file) is named by its type
    alone."""
    try:
        yield
    except InputError as exc:
        if exc.where.startswith("config: "):
            raise
        raise InputError(f"config: {where}: {exc.where}", exc.problem, exc.fix) from None
    except (ValueError, OSError, LookupError, SyntaxError) as exc:  # csv.Error, ArrowInvalid, ParseError, ...
        raise InputError(
            f"config: {where}: {path}",
            f"cannot be read as {what} ({type(exc).__name__}; the parser's message may quote the file: not shown)",
            "check that the file is complete and in the layout that the entry's format names",
        ) from None


READER_KINDS: dict[str, Readers[Any]] = {}


# the modules that register the built-in readers, loaded as plugins are (this module imports none)
BUILT_IN = (
    "clinsent.corpus.notes",
    "clinsent.corpus.sentences",
    "clinsent.data.training_rows",
    "clinsent.evaluation.sts_data",
    "clinsent.tasks.probe",
    "clinsent.tasks.rqe",
    "clinsent.embedding.texts",
    "clinsent.ontology.obo",
)


def every_reader() -> list[tuple[str, str, bool]]:
    """(kind, format, whether it has a check or its kind is read in full) of every reader (the
    built-in kinds loaded first), for the tests and the docs."""
    from clinsent.registry import load_plugins

    load_plugins(BUILT_IN)
    return [
        (kind, name, readers.read_in_full or name in readers.checks)
        for kind, readers in sorted(READER_KINDS.items())
        for name in readers.names()
    ]


# the formats' own column names (NOTEEVENTS, DIAGNOSES_ICD, MIMIC-IV-Note, the eval-set, NLI, RQE,
# sentence and text layouts): a header field among them may be named in an error
FORMAT_COLUMNS = frozenset(
    (
        *("ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY", "DESCRIPTION"),
        *("CGID", "ISERROR", "TEXT", "SEQ_NUM", "ICD9_CODE"),
        *("note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"),
        *("id", "split", "sentence1", "sentence2", "score", "label", "gold_label", "premise", "hypothesis"),
        *("pairID", "question1", "question2", "chq", "faq", "sentence", "sentences", "sent_id", "category"),
    )
)


def shown_column(name: Any) -> str:
    """A column or field name the config or a flag gives, as an error may show it: quoted when it
    is a plain name, else only its length (it may be a line pasted by mistake)."""
    text = str(name)
    return repr(text) if KEY.match(text) else f"a column of {len(text)} characters"


def shown_columns(names: Iterable[Any], expected: Iterable[Any] = (), limit: int = 12) -> str:
    """The fields of a file's header as an error may show them: a field is named only when it is
    ``expected`` (the columns the config or the reader asks for) or one of :data:`FORMAT_COLUMNS`;
    any other is "a column of N characters" (see the module)."""
    names = [str(n) for n in names]
    known = FORMAT_COLUMNS | {str(e) for e in expected if e is not None}
    shown = ", ".join(repr(n) if n in known else f"a column of {len(n)} characters" for n in names[:limit])
    return (shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")) or "(none)"


def looks_headerless(names: Iterable[Any], expected: Iterable[Any] = ()) -> bool:
    """Whether a file's first line reads as a data row: none of its fields is an expected or a
    format's column name, and one is empty, a number or not a plain name."""
    names = [str(n).strip() for n in names]
    known = FORMAT_COLUMNS | {str(e) for e in expected if e is not None}
    return not any(n in known for n in names) and any(
        not n or not KEY.match(n) or n.replace(".", "", 1).isdigit() for n in names
    )


def headerless(path: Any, names: list[Any], fix: str) -> InputError:
    """The error of a file whose first line reads as a data row (:func:`looks_headerless`)."""
    return InputError(
        path,
        f"has no header line: its first line reads as a data row ({len(names)} field(s), none of them a column "
        "name; not shown)",
        fix,
    )


def check_file(path: str | Path, fix: str, text: bool = True) -> Path:
    """``path`` is a file that can be read, not a folder, not empty and, for a text format, not
    binary (NUL bytes in its first block); else one line naming it and ``fix``."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file", fix)
    if path.is_dir():
        raise InputError(path, "is a folder, not a file", fix)
    check_regular(path, fix)  # a FIFO would hang the dry run's read below
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", "check the file's permissions") from None
    if not head:
        raise InputError(path, "the file is empty", fix)
    if text and b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")) and not _compressed(path, head):
        raise InputError(
            path,
            "holds NUL bytes: a binary file, or text saved as UTF-16/32 without a byte-order mark",
            f"{fix} (saved as UTF-8 text)",
        )
    return path


def parquet_file(path: str | Path) -> Any:
    """``pyarrow.parquet.ParquetFile`` of ``path``; a file that is not complete parquet is one line
    naming it (Arrow's message is not shown)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(
            path, f"not a readable parquet file ({type(exc).__name__})", "give a complete parquet file"
        ) from None


def _compressed(path: Path, head: bytes) -> bool:
    return path.suffix == ".gz" and head.startswith(b"\x1f\x8b")


def extra_fields(row: list[Any], expected: int, where: str, fix: str) -> None:
    """A delimited row with more fields than the header (or the layout) has is refused: its values
    would shift into the wrong columns, or the extra one be dropped without a word."""
    if len(row) > expected:
        raise InputError(where, f"{len(row)} fields where the header (or the layout) has {expected}", fix)


def state_repeats(
    what: str, keys: list[Any], names: list[str], kept: str = "they are kept and each counts in the metrics"
) -> str | None:
    """One line, logged as a warning and returned, when rows of an eval set (or of training data)
    repeat an earlier row (all their fields the same): how many, and the first by its row name,
    never its text. They are kept (a file may hold a pair twice on purpose); the line says so
    (``kept``). None when none repeats."""
    first: dict[Any, str] = {}
    repeats: list[tuple[str, str]] = []
    for key, name in zip(keys, names, strict=True):
        if key in first:
            repeats.append((name, first[key]))
        else:
            first[key] = name
    if not repeats:
        return None
    line = (
        f"{what}: {len(repeats)} row(s) repeat an earlier row field for field (first: {repeats[0][0]} repeats "
        f"{repeats[0][1]}); {kept}"
    )
    import logging

    logging.getLogger(__name__).warning(line)
    return line
