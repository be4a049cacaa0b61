"""Labelled document tasks built from the notes' downstream partition (the healthcare-LM
paper's Table 1), written in the layout :mod:`clinsent.tasks.labelled_docs` reads (columns
``text``, ``label``, ``split``, ``row_id``):

- ``label: category``: the note category task (M-Cat), the label being NOTEEVENTS' CATEGORY;
- ``label: icd9_triage``: the ICD-9 triage task (M-Tri): each discharge summary (one per
  admission, the earliest row) labelled with the destination team of its admission's primary
  diagnosis (DIAGNOSES_ICD, SEQ_NUM 1) through a mapping file of ICD-9 ranges
  (``config/icd9_triage.yaml``); admissions whose primary code maps to no team are dropped and
  counted.

Per class, ``train_per_class`` and ``test_per_class`` documents are drawn (seeded); patients are
split between train and test first (a seeded hash, share test / (train + test)), so no patient
has documents on both sides. A class with fewer documents keeps what it has (counted in the
report); a class left with no train or no test document is an error naming it.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clinsent.config.sections import DocTaskEntry, RunConfig
from clinsent.corpus.documents import patient_keys, unit_hash
from clinsent.errors import InputError, shown
from clinsent.registry import check_values


def read_mapping(path: str | Path) -> list[tuple[str, int, int]]:
    """(team, first, last) numeric ICD-9 ranges (3-digit categories, inclusive) from the YAML file
    ``teams: {<team>: ["390-459", "785", ...]}``."""
    from clinsent.io.safe_yaml import load

    data = load(path) or {}
    teams = data.get("teams") if isinstance(data, dict) else None
    if not isinstance(teams, dict) or not teams:
        raise InputError(path, "no `teams` mapping", 'give teams: {<team>: ["390-459", ...]}')
    out = []
    for team, ranges in teams.items():
        for i, r in enumerate(ranges if isinstance(ranges, list) else [] if ranges is None else [ranges]):
            lo, _, hi = str(r).partition("-")
            try:
                out.append((str(team), int(lo), int(hi or lo)))
            except ValueError:
                raise InputError(
                    f"{path}: teams.{shown(team)}[{i}]",
                    "is not <first>-<last> of 3-digit ICD-9 categories",
                    'write e.g. "390-459" or "785"',
                ) from None
    return out


def icd9_team(code: str, mapping: Sequence[tuple[str, int, int]]) -> str | None:
    """The team of an ICD-9 diagnosis code as MIMIC-III stores it (no dot: 41071, V3000, E8790);
    V and E codes and unmapped categories: None."""
    code = str(code).strip()
    if len(code) < 3 or not code[:3].isdigit():
        return None
    cat = int(code[:3])
    for team, lo, hi in mapping:
        if lo <= cat <= hi:
            return team
    return None


def primary_diagnoses(path: str | Path) -> pd.DataFrame:
    """HADM_ID -> ICD9_CODE of SEQ_NUM 1 (the MIMIC-III DIAGNOSES_ICD layout)."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, csv.Error) as exc:
        raise InputError(path, f"cannot be read as CSV ({type(exc).__name__})", "check the file is complete") from None
    missing = [c for c in ("HADM_ID", "SEQ_NUM", "ICD9_CODE") if c not in df.columns]
    if missing:
        raise InputError(path, f"missing column(s) {missing}", "use MIMIC-III's DIAGNOSES_ICD.csv(.gz)")
    first = df[df["SEQ_NUM"].str.strip() == "1"]
    bad = pd.to_numeric(first["HADM_ID"], errors="coerce").isna()
    if bad.any():
        first_bad = int(first.index[np.flatnonzero(bad.to_numpy())[0]]) + 2  # the file's row, the header row 1
        raise InputError(
            f"{path}, row {first_bad} (the header is row 1)",
            f"{int(bad.sum())} primary-diagnosis row(s) with a non-numeric HADM_ID",
            "check that the file is MIMIC-III's DIAGNOSES_ICD.csv(.gz)",
        )
    return pd.DataFrame({"hadm_id": first["HADM_ID"].astype(np.int64), "code": first["ICD9_CODE"].str.strip()})


def label_documents(docs: pd.DataFrame, s: DocTaskEntry, name: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Documents with a ``label`` column, and what was dropped."""
    report: dict[str, Any] = {"documents": int(len(docs))}
    if s.label == "category":
        out = docs.assign(label=docs["category"].fillna("").astype(str).str.strip())
        out = out[out["label"] != ""]
        if s.categories is not None:  # compared without surrounding spaces; a typo stops here
            check_values(
                [c.strip() for c in s.categories],
                out["label"].value_counts().to_dict(),
                f"doc_tasks.{name}.categories",
                "the downstream documents",
                "document category",
            )
            out = out[out["label"].isin([c.strip() for c in s.categories])]
        report["unlabelled"] = int(len(docs) - len(out))
        return out, report
    if s.label != "icd9_triage":
        raise InputError("config: doc_tasks", f"unknown label {s.label!r}", "use category or icd9_triage")
    if not s.diagnoses or not s.mapping:
        raise InputError(
            "config: doc_tasks",
            "icd9_triage needs diagnoses and mapping",
            "point diagnoses at DIAGNOSES_ICD.csv and mapping at config/icd9_triage.yaml",
        )
    mapping = read_mapping(s.mapping)
    check_values(
        [s.note_category],
        docs["category"].fillna("").astype(str).value_counts().to_dict(),
        f"doc_tasks.{name}.note_category",
        "the downstream documents",
        "document category",
    )
    notes = docs[docs["category"] == s.note_category].dropna(subset=["hadm_id"])
    notes = notes.sort_values("row_id").drop_duplicates("hadm_id")
    primary = primary_diagnoses(s.diagnoses)
    merged = notes.merge(primary, on="hadm_id", how="left")
    merged["label"] = [icd9_team(c, mapping) if isinstance(c, str) else None for c in merged["code"]]
    report.update(
        {
            "labelled_notes": int(len(notes)),
            "no_primary_diagnosis": int(merged["code"].isna().sum()),
            "unmapped_primary_diagnosis": int((merged["code"].notna() & merged["label"].isna()).sum()),
        }
    )
    return merged[merged["label"].notna()].drop(columns=["code"]), report


def draw(labelled: pd.DataFrame, s: DocTaskEntry, where: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Train/test documents per class (patients never on both sides)."""
    patient = patient_keys(labelled["subject_id"].fillna(-1).to_numpy(), labelled["row_id"].to_numpy())
    share = s.test_per_class / (s.train_per_class + s.test_per_class)
    side = np.where(unit_hash(patient, s.seed, 3) < share, "test", "train")
    labelled = labelled.assign(split=side, _key=unit_hash(labelled["row_id"].to_numpy(), s.seed, 4))
    parts, counts = [], {}
    for label, group in labelled.groupby("label", sort=True):
        group = group.sort_values("_key")
        tr = group[group["split"] == "train"].head(s.train_per_class)
        te = group[group["split"] == "test"].head(s.test_per_class)
        counts[str(label)] = {"train": int(len(tr)), "test": int(len(te))}
        parts += [tr, te]
    empty = [c for c, k in counts.items() if not k["train"] or not k["test"]]
    if empty:
        raise InputError(
            where,
            f"class(es) {empty} have no train or no test document ({counts})",
            "lower the per-class counts, add notes, or drop those classes",
        )
    if len(counts) < 2:
        raise InputError(where, f"one class only ({list(counts)})", "a classification task needs two or more")
    out = pd.concat(parts).sort_values(["split", "label", "_key"], kind="stable")
    return out[["row_id", "text", "label", "split"]].reset_index(drop=True), counts


def build_doc_task(
    documents: str | Path, s: DocTaskEntry, name: str, per_class: Mapping[str, int] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``per_class``: the few-shot sizes asked of this task (eval set or finetune entry -> n),
    checked here, before any model trains on or is scored against the table."""
    docs = pd.read_parquet(documents, columns=["row_id", "subject_id", "hadm_id", "category", "text"])
    labelled, report = label_documents(docs, s, name)
    task, counts = draw(labelled, s, f"config: doc_tasks.{name}")
    for user, n in (per_class or {}).items():
        short = {c: k["train"] for c, k in counts.items() if k["train"] < n}
        if short:
            raise InputError(
                f"config: {user}.per_class",
                f"{n} exceeds the training documents of class(es) {short} in doc_tasks.{name}",
                "lower per_class, or raise train_per_class (with more notes)",
            )
    report["classes"] = counts
    report["short_classes"] = sorted(
        c for c, k in counts.items() if k["train"] < s.train_per_class or k["test"] < s.test_per_class
    )
    return task, report


def per_class_needs(config: RunConfig, table: str) -> dict[str, int]:
    """Eval sets and finetune entries of ``config`` that draw n documents per class of ``table``
    (config key -> n)."""
    sets = {n: e.options for n, e in config.eval_sets.items()}  # the task keys: path, per_class
    out = {
        f"eval_sets.{n}": int(e["per_class"]) for n, e in sets.items() if e.get("path") == table and e.get("per_class")
    }
    for n, f in config.finetune.items():
        train = str(f.options.get("train"))
        if f.options.get("per_class") and train in sets and sets[train].get("path") == table:
            out[f"finetune.{n}"] = int(f.options["per_class"])
    return out
