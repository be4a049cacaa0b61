"""A write that the disk refuses (full, a quota, too large, read-only, an I/O error) names the
output being written, says nothing was left half-written, and leaves no temporary file, in every
writer: the atomic writers (tables, JSON, CSV, figures), the streamed parquet sink (notes,
sentences, entities, documents), checkpoints and the trained model's folder.

The real failures come from a child process whose largest file is capped (``RLIMIT_FSIZE``:
the kernel refuses the write with EFBIG, as a full disk refuses it with ENOSPC); a full disk
itself is raised by a patched call, since a test cannot fill one."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clinsent.errors import OutputError
from clinsent.io.files import _write_errno, write_parquet

CAPPED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
out = sys.argv[1]
"""


def _capped(tmp_path: Path, body: str, out: Path) -> str:
    """Run ``body`` (writing ``out``) with files capped at 20 kB; its stderr's last line."""
    script = tmp_path / "write.py"
    script.write_text(CAPPED + textwrap.dedent(body))
    run = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode != 0, run.stdout
    return run.stderr.strip().splitlines()[-1]


WRITERS = {
    "write_json": """
        from clinsent.io.files import write_json
        write_json({"rows": list(range(20000))}, out)
    """,
    "write_parquet": """
        import numpy as np, pandas as pd
        from clinsent.io.files import write_parquet
        write_parquet(pd.DataFrame({"x": np.random.default_rng(0).normal(size=50000)}), out)
    """,
    "parquet_sink": """
        import numpy as np, pyarrow as pa
        from clinsent.io.files import ParquetSink
        schema = pa.schema([("x", pa.float64())])
        with ParquetSink(out, schema, group_bytes=1 << 16) as sink:
            for seed in range(20):
                sink.write(pa.table({"x": np.random.default_rng(seed).normal(size=10000)}))
    """,
    "figure": """
        import matplotlib; matplotlib.use("Agg")
        import matplotlib.pyplot as plt, numpy as np
        from clinsent.io.files import atomic_path
        from clinsent.report.figures import save_figure
        fig, ax = plt.subplots(figsize=(12, 12))
        ax.scatter(*np.random.default_rng(0).normal(size=(2, 40000)), s=1)
        with atomic_path(out, ".png") as png:  # as the report writes every figure
            save_figure(fig, [png])
    """,
    "checkpoint": """
        import pathlib, torch
        from clinsent.train.checkpoint import save_state
        save_state(pathlib.Path(out), {"step": 3, "fingerprint": "f", "weights": torch.randn(20000)})
    """,
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_refused_write_names_the_output_and_leaves_nothing(tmp_path: Path, writer: str) -> None:
    out = tmp_path / "results" / ("checkpoints" if writer == "checkpoint" else f"table.{writer}")
    last = _capped(tmp_path, WRITERS[writer], out)
    target = out / "state-00000003.pt" if writer == "checkpoint" else out
    assert last.startswith(
        f"clinsent.errors.OutputError: {target}: could not be written (the file is larger than the system allows"
    ), last
    assert "nothing was left half-written. Fix: check the disk and the limits, then rerun" in last
    folder = out if writer == "checkpoint" else out.parent
    assert sorted(p.name for p in folder.iterdir()) == [], list(
        folder.iterdir()
    )  # no temporary file, no partial output


def test_a_full_disk_names_the_output_and_how_to_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: Any, path: Any, **kwargs: Any) -> None:
        Path(path).write_bytes(b"PAR1 half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    out = tmp_path / "embeddings" / "set.parquet"
    with pytest.raises(OutputError) as err:
        write_parquet(pd.DataFrame({"x": [1]}), out)
    assert str(err.value) == (
        f"{out}: could not be written (no space left on the device); nothing was left half-written. Fix: free space "
        f"on the file system that holds {out.parent} (df -h {out.parent}), or set `results` on a larger one; a rerun "
        "starts the job again (a training job from its last checkpoint)"
    )
    assert err.value.errno == errno.ENOSPC and list(out.parent.iterdir()) == []
    # pyarrow names the errno only in its message
    assert _write_errno(OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")) == 28


def test_a_model_save_on_a_full_disk_leaves_no_staging_folder(tmp_path: Path) -> None:
    from clinsent.train.selection import save_model

    class Model:
        def save(self, folder: str) -> None:
            Path(folder).mkdir()
            (Path(folder) / "config.json").write_text("{}")
            raise OSError(errno.EDQUOT, "Disk quota exceeded")

    out = tmp_path / "models" / "simcse" / "minilm" / "seed0" / "model"
    out.parent.mkdir(parents=True)
    with pytest.raises(OutputError, match=r"/seed0/model: could not be written \(the disk quota is exceeded\)"):
        save_model(Model(), out)
    assert list(out.parent.iterdir()) == []


def test_the_atomic_folder_writer_replaces_whole_or_leaves_the_old_one(tmp_path: Path) -> None:
    """The one folder writer (clinsent.io.files.atomic_folder): the release copies, packs, models and
    benchmark results go through it; a failed step leaves the last folder as it was."""
    from clinsent.io.files import atomic_folder

    out = tmp_path / "release"
    out.mkdir()
    (out / "old.txt").write_text("last release")
    with pytest.raises(RuntimeError, match="copy failed"), atomic_folder(out) as staged:
        staged.mkdir()
        (staged / "half.txt").write_text("half")
        raise RuntimeError("copy failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"] and (out / "old.txt").exists()
    with atomic_folder(out) as staged:
        staged.mkdir()
        (staged / "new.txt").write_text("new release")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"] and len(list(tmp_path.iterdir())) == 1
    with pytest.raises(FileNotFoundError, match="made no folder"), atomic_folder(out):
        pass
    assert (out / "new.txt").exists() and len(list(tmp_path.iterdir())) == 1


@pytest.mark.parametrize(
    "failure",
    [
        OSError(28, "No space left on device"),
        RuntimeError(  # safetensors' Rust writer on a full disk: not an OSError, the OS's code in its message
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'
        ),
    ],
    ids=["oserror", "safetensors"],
)
def test_a_full_disk_during_a_models_save_is_one_line_naming_the_model(tmp_path: Path, failure: Exception) -> None:
    """Issue 83: a full disk while the trained model is saved (simulated: the save raises what the
    OS, or safetensors, raises) is one line naming the model folder and the fix, and the folder
    is left as it was (nothing half-written beside it)."""
    from clinsent.errors import OutputError
    from clinsent.train.selection import save_model

    class Filling:
        def save(self, folder: str) -> None:
            Path(folder).mkdir()
            (Path(folder) / "model.safetensors").write_bytes(b"half")
            raise failure

    out = tmp_path / "run" / "model"
    with pytest.raises(OutputError) as err:
        save_model(Filling(), out)
    told = str(err.value)
    assert "\n" not in told and str(out) in told and "no space left on the device" in told and "df -h" in told
    assert not out.exists() and sorted(p.name for p in (tmp_path / "run").iterdir()) == []
