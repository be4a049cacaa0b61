"""The PHI guard: note-text folders are owner-only; a planted run of note text in a shared file
is found with its file and byte offset, and the n-gram sample holds no text."""

from __future__ import annotations

import json
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
    for rel, text in {
        "tables/results.md": "| method | sel |\n| simcse | 0.512 |\n",
        "summary.csv": "method,value\nsimcse,0.5\n",
        "logs/train/simcse.log": "step 2: sel spearman=0.5000, loss=1.2\n",
        "models/simcse/minilm/seed0/model/README.md": "# A sentence-transformers model\n",
    }.items():
        (res / rel).parent.mkdir(parents=True, exist_ok=True)
        (res / rel).write_text(text)
    return res


def test_a_planted_run_of_note_text_is_found_with_file_and_offset(tmp_path: Path) -> None:
    notes = _notes()
    sample = sample_ngrams(notes, n=8, size=10**6, seed=0, notes=len(notes))
    res = _results(tmp_path)
    files = shared_files(res)
    assert {f.relative_to(res).as_posix() for f in files} == {
        "tables/results.md",
        "summary.csv",
        "logs/train/simcse.log",
        "models/simcse/minilm/seed0/model/README.md",
    }
    assert scan(files, sample) == []
    # a log line that quotes twelve words of a note
    quoted = " ".join(notes[7].split()[20:32])
    log = res / "logs" / "train" / "simcse.log"
    prefix = "step 2: sel spearman=0.5000, loss=1.2\nbatch text: "
    log.write_text(prefix + quoted + "\n")
    leaks = scan(shared_files(res), sample)
    assert [leak.path for leak in leaks] == [log]
    start = len(prefix.encode())  # the offset is the first word of the first sampled n-gram in the quote
    assert (
        start <= leaks[0].offset < start + len(quoted)
        and log.read_bytes()[leaks[0].offset - 1 : leaks[0].offset] in b" "
    )
    sample.save(tmp_path / "ngrams.json")
    with pytest.raises(PhiLeak) as err:
        check_shared(res, tmp_path / "ngrams.json", out=tmp_path / "scan.json")
    assert str(err.value).startswith(f"{log}: byte {leaks[0].offset}: a run of 8 words of note text")
    assert quoted.split()[3] not in str(err.value) and not (tmp_path / "scan.json").exists()
    assert not log.exists()  # moved into the quarantine (test below)
    # the HTML report of `snakemake --report`, through the command line
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

    from clinsent.config.sections import RunConfig
    from clinsent.phi import protect_job

    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "corpus").mkdir(parents=True)
    os.chmod(tmp_path / "results" / "corpus", 0o755)
    params = SimpleNamespace(items=lambda: {"checkpoint_dir": "results/checkpoints/m/b/seed0", "lr": 0.1}.items())
    job = SimpleNamespace(
        config={"results": "results"},
        params=params,
        output=["results/corpus/shards2/notes/000.parquet", "results/tables/t.md"],
    )
    made = protect_job(job, RunConfig.parse(job.config))
    assert [p.relative_to(tmp_path / "results").as_posix() for p in made] == ["corpus", "checkpoints"]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in made)
    assert not (tmp_path / "results" / "tables").exists() and not (tmp_path / "results" / "ner").exists()
    assert {"corpus", "sets", "batches", "checkpoints", "documents"} <= set(NOTE_DIRS)
    open_job = SimpleNamespace(
        config={"results": "results", "phi": {"dir_mode": None}},
        params=params,
        output=["results/sets/sentences.parquet"],
    )
    assert (
        protect_job(open_job, RunConfig.parse(open_job.config)) == [] and not (tmp_path / "results" / "sets").exists()
    )
    assert protect_dirs("results", ["results/sets/x.parquet"], 0o750)[0].stat().st_mode & 0o777 == 0o750


def _png_with_text(key: bytes, text: bytes, compressed: bool, international: bool = False) -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    if international:  # iTXt: flag, method, language tag, translated keyword, then the (compressed) text
        body = key + b"\x00" + (b"\x01\x00" if compressed else b"\x00\x00") + b"en\x00\x00"
        text_chunk = chunk(b"iTXt", body + (zlib.compress(text) if compressed else text))
    elif compressed:
        text_chunk = chunk(b"zTXt", key + b"\x00\x00" + zlib.compress(text))
    else:
        text_chunk = chunk(b"tEXt", key + b"\x00" + text)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + text_chunk + chunk(b"IEND", b"")


def test_note_text_is_found_in_every_place_a_person_could_read_it(tmp_path: Path) -> None:
    """A quote planted in each form the scan reads is found, and the finding names the file and
    the packed piece, never the text: the HTML report's embedded (base64) files, gzip, UTF-16
    with and without a mark, a PNG text chunk (plain and compressed), a PDF stream (Flate), an
    `.err` log, and a model folder's file other than its card; the weights are not read. A copy
    of a clean file with the same bytes is read once."""
    import base64
    import gzip
    import zlib

    notes = _notes()
    sample = sample_ngrams(notes, n=8, size=10**6, seed=0, notes=len(notes))
    res = _results(tmp_path)
    probe = tmp_path / "probe.txt"
    for note in notes:  # a run of a note that the sample covers (templated openings are not sampled)
        probe.write_text(" ".join(note.split()[20:34]))
        if scan([probe], sample):
            break
    quote = probe.read_bytes()
    probe.unlink()
    planted = {
        "report.html": b"<html><script>var f = {'t': 'data:text/csv;charset=utf8;filename=table1.csv;base64,"
        + base64.b64encode(b"label,value\n" + quote + b",1\n")
        + b"'};</script></html>",
        "tables/paper/table1.csv.gz": gzip.compress(b"label\n" + quote + b"\n"),
        "tables/paper/table2.md": b"\xff\xfe" + ("| " + quote.decode() + " |").encode("utf-16-le"),
        "tables/paper/table3.md": ("| " + quote.decode() + " |").encode("utf-16-le"),  # no mark
        "figures/paper/f1.png": _png_with_text(b"Title", quote, compressed=False),
        "figures/paper/f2.png": _png_with_text(b"Title", quote, compressed=True),
        "figures/paper/f4.png": _png_with_text(b"Title", quote, compressed=True, international=True),
        "figures/paper/f5.png": _png_with_text(b"Title", quote, compressed=False, international=True),
        "figures/paper/f3.pdf": b"%PDF-1.4\n1 0 obj\n<< /Filter /FlateDecode >>\nstream\n"
        + zlib.compress(b"BT (" + quote + b") Tj ET")
        + b"\nendstream\nendobj\n%%EOF\n",
        "logs/train/simcse.err": b"Traceback: " + quote + b"\n",
        "models/simcse/minilm/seed0/model/config_sentence_transformers.json": b'{"prompts": {"q": "' + quote + b'"}}',
    }
    for rel, data in planted.items():
        path = (tmp_path if rel == "report.html" else res) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    weights = res / "models/simcse/minilm/seed0/model/model.safetensors"
    weights.write_bytes(quote)  # weights are not text: never read
    clean = res / "models/simcse/minilm/seed1/model/tokenizer.json"
    clean.parent.mkdir(parents=True)
    clean.write_text('{"vocab": {}}')
    (res / "models/simcse/minilm/seed2/model").mkdir(parents=True)
    (res / "models/simcse/minilm/seed2/model/tokenizer.json").write_text('{"vocab": {}}')
    leaks = {leak.path: leak for leak in scan(shared_files(res, [tmp_path / "report.html"]), sample)}
    expected = {(tmp_path if rel == "report.html" else res) / rel for rel in planted}
    assert set(leaks) == expected
    assert leaks[tmp_path / "report.html"].inside.startswith("base64 at byte")
    assert leaks[res / "tables/paper/table1.csv.gz"].inside == "gzip"
    assert leaks[res / "figures/paper/f2.png"].inside.startswith("png text chunk")
    assert leaks[res / "figures/paper/f3.pdf"].inside.startswith("pdf stream")
    assert all(quote.split()[2].decode() not in str(leak) for leak in leaks.values())


def test_a_failed_scan_moves_what_it_flagged_into_an_owner_only_quarantine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leak in a table moves the table; a leak in a model file moves that run's whole folder
    (the next run retrains it); a leak in a file outside the run (a report) moves it too. The
    record lists paths and offsets, never text; while it stands `--report` is refused, and a
    passing scan removes it. `--keep` leaves the files."""
    from clinsent.phi import FAILED, refuse_report

    monkeypatch.chdir(tmp_path)
    notes = _notes()
    sample = sample_ngrams(notes, n=8, size=10**6, seed=0, notes=len(notes))
    res = _results(tmp_path)
    (res / "phi").mkdir()
    sample.save(res / "phi" / "ngrams.json")
    quote = " ".join(notes[7].split()[20:32])
    table = res / "tables" / "results.md"
    card = res / "models/simcse/minilm/seed0/model/README.md"
    weights = card.parent / "model.safetensors"
    weights.write_bytes(b"\x00" * 8)
    report = tmp_path / "report.html"
    for path in (table, card, report):
        path.write_text(f"clean start {quote}\n")
    refuse_report(res, ["snakemake", "--report", "r.html"])  # no failed scan yet: allowed
    assert main([str(res), str(report), "--keep"]) == 1 and table.exists() and not (res / FAILED).exists()
    with pytest.raises(PhiLeak) as err:
        check_shared("results", res / "phi" / "ngrams.json", extra=[report])
    message = str(err.value)
    assert "moved into results/phi/quarantine/" in message and quote.split()[4] not in message
    assert not table.exists() and not report.exists() and not (res / "models/simcse/minilm/seed0").exists()
    record = json.loads((res / FAILED).read_text())
    box = tmp_path / message.split("moved into ")[1].split(" (owner-only")[0]
    assert {tmp_path / leak["moved_to"] for leak in record["leaks"]} == {
        box / "results/tables/results.md",
        box / "results/models/simcse/minilm/seed0",
        box / "workdir/report.html",
    }
    assert (box / "results/models/simcse/minilm/seed0/model/model.safetensors").read_bytes() == b"\x00" * 8
    for path in [res / "phi" / "quarantine", box, *box.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path
    assert quote.split()[4] not in (res / FAILED).read_text()
    with pytest.raises(PhiLeak, match=r"^results/phi/scan_failed\.json: the last PHI scan found note text"):
        refuse_report("results", ["snakemake", "all", "--report=r.html"])
    refuse_report(res, ["snakemake", "all", "-n"])  # only the report is refused
    assert main([str(res)]) == 0 and not (res / FAILED).exists()
    refuse_report(res, ["snakemake", "--report", "r.html"])


def test_note_text_in_any_table_or_figure_output_is_caught(tmp_path: Path) -> None:
    """Every table kind is written as csv, md and tex, and every figure kind as png and pdf with
    its points as csv (clinsent.report.build): a quote in a table cell is caught in each of the
    three, and a quote drawn as a legend label in the pdf (matplotlib cuts it into one string
    per kerned letter run) and in the points csv. Text drawn into the png's pixels is not
    read: the pdf and csv beside it carry the same labels."""
    from clinsent.io.files import write_csv, write_text
    from clinsent.report.figures import pyplot, save_figure
    from clinsent.report.tables import to_latex, to_markdown

    notes = _notes()
    sample = sample_ngrams(notes, n=8, size=10**6, seed=0, notes=len(notes))
    probe = tmp_path / "probe.txt"
    for note in notes:
        probe.write_text(" ".join(note.split()[20:34]))
        if scan([probe], sample):
            break
    quote = probe.read_text()
    probe.unlink()
    import pandas as pd

    df = pd.DataFrame({"method": ["simcse", quote], "score": [0.5, 0.6]})
    out = tmp_path / "paper"
    write_csv(df, out / "t.csv")
    write_text(to_markdown(df, "Table 1"), out / "t.md")
    write_text(to_latex(df, "Table 1"), out / "t.tex")
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.5, 0.6], label=quote)
    ax.legend()
    save_figure(fig, [out / "f.png", out / "f.pdf"])
    df.to_csv(out / "f.csv", index=False)
    leaks = {leak.path.name: leak for leak in scan(sorted(out.iterdir()), sample)}
    assert set(leaks) == {"t.csv", "t.md", "t.tex", "f.pdf", "f.csv"}
    assert leaks["f.pdf"].inside.startswith("pdf text of the stream at byte")
