"""The PHI guard: note-text folders are owner-only; a planted run of note text in a shared file
is found with its file and byte offset, and the n-gram sample holds no text."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from clinsent.demo.notes import generate_notes
from clinsent.phi import NOTE_DIRS, PhiLeak, check_shared, main, protect_dirs, sample_ngrams, scan, shared_files, words


def _notes() -> list[str]:
    return [row["TEXT"] for row in generate_notes(40, seed=5)]


def _results(tmp_path: Path) -> Path:
    res = tmp_path / "results"
    for rel, text in {"tables/results.md": "| method | sel |\n| simcse | 0.512 |\n", "summary.csv": "method,value\nsimcse,0.5\n",
                      "logs/train/simcse.log": "step 2: sel spearman=0.5000, loss=1.2\n",
                      "models/simcse/minilm/seed0/model/README.md": "# A sentence-transformers model\n"}.items():
        (res / rel).parent.mkdir(parents=True, exist_ok=True)
        (res / rel).write_text(text)
    return res


def test_a_planted_run_of_note_text_is_found_with_file_and_offset(tmp_path: Path) -> None:
    notes = _notes()
    sample = sample_ngrams(notes, n=8, size=10**6, seed=0, notes=len(notes))
    res = _results(tmp_path)
    files = shared_files(res)
    assert {f.relative_to(res).as_posix() for f in files} == {
        "tables/results.md", "summary.csv", "logs/train/simcse.log", "models/simcse/minilm/seed0/model/README.md"}
    assert scan(files, sample) == []
    # a log line that quotes twelve words of a note
    quoted = " ".join(notes[7].split()[20:32])
    log = res / "logs" / "train" / "simcse.log"
    prefix = "step 2: sel spearman=0.5000, loss=1.2\nbatch text: "
    log.write_text(prefix + quoted + "\n")
    leaks = scan(shared_files(res), sample)
    assert [leak.path for leak in leaks] == [log]
    start = len(prefix.encode())  # the offset is the first word of the first sampled n-gram in the quote
    assert start <= leaks[0].offset < start + len(quoted) and log.read_bytes()[leaks[0].offset - 1:leaks[0].offset] in b" "
    sample.save(tmp_path / "ngrams.json")
    with pytest.raises(PhiLeak) as err:
        check_shared(res, tmp_path / "ngrams.json", out=tmp_path / "scan.json")
    assert str(err.value).startswith(f"{log}: byte {leaks[0].offset}: a run of 8 words of note text")
    assert quoted.split()[3] not in str(err.value) and not (tmp_path / "scan.json").exists()
    # the HTML report of `snakemake --report`, through the command line
    (res / "phi").mkdir()
    sample.save(res / "phi" / "ngrams.json")
    log.write_text(prefix)
    report = tmp_path / "report.html"
    report.write_text(f"<html><p>{quoted.upper()}</p></html>")  # case does not hide it
    assert main([str(res)]) == 0 and main([str(res), str(report)]) == 1


def test_the_sample_is_seeded_holds_no_text_and_skips_boilerplate(tmp_path: Path) -> None:
    notes = [f"Discharge Date and Time of the Attending Physician Review. {text}" for text in _notes()]
    sample = sample_ngrams(notes, n=8, size=500, seed=1, notes=30)
    assert len(sample.hashes) == 500 and sample == sample_ngrams(notes, n=8, size=500, seed=1, notes=30)
    assert sample.hashes != sample_ngrams(notes, n=8, size=500, seed=2, notes=30).hashes
    header = " ".join(words(notes[0])[:8])
    shared = tmp_path / "tables" / "t.md"
    shared.parent.mkdir()
    shared.write_text(header)  # in every note: boilerplate, not sampled
    assert scan([shared], sample) == []
    sample.save(tmp_path / "ngrams.json")
    saved = (tmp_path / "ngrams.json").read_text().lower()
    assert not any(w in saved for w in set(words(" ".join(notes))) if len(w) > 6)


def test_the_note_text_folder_a_job_writes_into_is_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's outputs (and folder params: a checkpoint folder) under a note-text folder make that
    folder 0700 before the job writes, an older one with a wider mode included; shared folders
    and folders no job writes are left alone; `phi.dir_mode: null` leaves everything."""
    from types import SimpleNamespace

    from clinsent.phi import protect_job

    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "corpus").mkdir(parents=True)
    os.chmod(tmp_path / "results" / "corpus", 0o755)
    params = SimpleNamespace(items=lambda: {"checkpoint_dir": "results/checkpoints/m/b/seed0", "lr": 0.1}.items())
    job = SimpleNamespace(config={"results": "results"}, params=params,
                          output=["results/corpus/shards2/notes/000.parquet", "results/tables/t.md"])
    made = protect_job(job)
    assert [p.relative_to(tmp_path / "results").as_posix() for p in made] == ["corpus", "checkpoints"]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in made)
    assert not (tmp_path / "results" / "tables").exists() and not (tmp_path / "results" / "ner").exists()
    assert {"corpus", "sets", "batches", "checkpoints", "documents"} <= set(NOTE_DIRS)
    open_job = SimpleNamespace(config={"results": "results", "phi": {"dir_mode": None}}, params=params,
                               output=["results/sets/sentences.parquet"])
    assert protect_job(open_job) == [] and not (tmp_path / "results" / "sets").exists()
    assert protect_dirs("results", ["results/sets/x.parquet"], 0o750)[0].stat().st_mode & 0o777 == 0o750
