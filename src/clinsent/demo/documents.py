"""Seeded demo notes of several categories and demo diagnoses, for the healthcare-LM paper's
demo (note-category pre-training, the note category and ICD-9 triage tasks).

DEMO DATA: every note is written from templates made for this project; no text comes from
MIMIC-III. Notes of other categories (Nursing, Physician, Radiology, ECG) are added to the
demo patients' admissions after the discharge summaries (appended rows: the existing rows keep
their bytes); over half of a note's sentences come from a pool every category writes and a fifth
from another category, so the categories overlap in vocabulary and length. DIAGNOSES_ICD rows
(MIMIC-III layout) give each admission a primary ICD-9 code of the team one of its summary's
conditions belongs to (most of the time; else any team), plus secondary codes.
"""

from __future__ import annotations

import csv
import io
import random
import re
from pathlib import Path

from clinsent.demo.notes import _wrap
from clinsent.demo.vocabulary import load_terms
from clinsent.io.files import write_text

_CATEGORY_SENTENCES = {
    "Nursing": [
        "Pt resting comfortably in bed with call light within reach.",
        "Assisted with repositioning every two hours, skin intact over sacrum.",
        "Voiding clear yellow urine via foley catheter, output adequate.",
        "Family at bedside this evening, updated on plan of care.",
        "Denies pain at this time, will continue to monitor.",
        "Tolerating clear liquids, advanced to soft diet as ordered.",
        "IV site clean dry and intact, flushed without difficulty.",
        "Fall precautions maintained, bed alarm on.",
        "Lung sounds diminished at the bases, encouraged incentive spirometer use.",
        "Ambulated in the hallway with assistance of one and a walker.",
    ],
    "Physician ": [
        "Assessment and plan discussed with the attending on rounds this morning.",
        "Exam notable for regular rate and rhythm without murmurs, lungs with scattered crackles.",
        "Will continue diuresis with intravenous furosemide and trend daily weights and electrolytes.",
        "Renal function improving, creatinine trending down from peak, will hold nephrotoxic agents.",
        "Continue broad spectrum antibiotics pending culture data, day three of therapy.",
        "Neurologically intact, alert and oriented times three, no focal deficits on examination.",
        "Blood glucose controlled on sliding scale insulin, will resume home regimen on discharge.",
        "Hemodynamically stable overnight off vasopressors, mean arterial pressure above sixty five.",
        "Code status full code confirmed with the patient and health care proxy.",
        "Disposition pending physical therapy evaluation and clearance by the consulting service.",
    ],
    "Radiology": [
        "FINDINGS: The heart size is normal. The mediastinal contours are unremarkable.",
        "There is no pleural effusion or pneumothorax. No focal consolidation is seen.",
        "Mild interstitial edema is present with cephalization of the pulmonary vessels.",
        "Endotracheal tube terminates five centimeters above the carina.",
        "Degenerative changes are noted in the thoracic spine.",
        "IMPRESSION: No acute intracranial hemorrhage or mass effect.",
        "Comparison is made to the prior study from the previous admission.",
        "The visualized osseous structures are intact without acute fracture.",
    ],
    "ECG": [
        "Sinus rhythm.",
        "Sinus tachycardia.",
        "Atrial fibrillation with rapid ventricular response.",
        "Left axis deviation.",
        "Nonspecific ST-T wave changes.",
        "Normal ECG.",
        "Low QRS voltages in limb leads.",
        "No significant change from prior tracing.",
        "Possible inferior infarct, age undetermined.",
    ],
}
# sentences every category writes (a note draws 55% of its sentences here, and 20% from
# another category), so the categories overlap in vocabulary and a classifier must weigh the rest
_SHARED = [
    "Patient seen and examined.",
    "Vital signs stable overnight.",
    "No acute events overnight.",
    "Heart rate and blood pressure within normal limits.",
    "Plan discussed with the patient and family.",
    "Will continue to monitor.",
    "Comparison is made to the prior study.",
    "Findings discussed with the team.",
    "Atrial fibrillation noted.",
    "Lungs with crackles at the bases.",
    "Pain controlled on current regimen.",
    "Labs reviewed and notable for mild anemia.",
    "No significant change from prior.",
]
_SHARED_SHARE, _OTHER_SHARE = 0.55, 0.2
_LENGTHS = {"Nursing": (4, 20), "Physician ": (8, 30), "Radiology": (3, 12), "ECG": (2, 7)}

# Primary ICD-9 codes (MIMIC-III's undotted form) by the team config/icd9_triage.yaml maps them to.
# No obstetric codes: the demo admissions are medical ones (their conditions come from the demo
# vocabulary, which has no pregnancy), so the demo triage task has six classes.
_TEAM_CODES = {
    "Cardiology": ["41071", "4280", "42731", "41401"],
    "Neurology": ["34590", "3320", "3310"],
    "Respiratory Medicine": ["486", "49121", "51881"],
    "Gastroenterology": ["5789", "5715", "5770"],
    "Acute or Internal Medicine": ["0389", "25080", "5849"],
    "Oncology": ["1629", "1970", "2041"],
}
# the team a demo disease category (clinsent.demo.vocabulary) is admitted under; the rest: internal medicine
_CATEGORY_TEAMS = {
    "cardio": "Cardiology",
    "neuro": "Neurology",
    "resp": "Respiratory Medicine",
    "gi": "Gastroenterology",
    "onc": "Oncology",
}
_FOLLOWS_NOTE = 0.85  # share of admissions whose primary team is that of one of the summary's conditions
_SECONDARY = ["4019", "2724", "25000", "V5861", "E8798", "2859", "5990"]


def _note_teams(text: str, mentions: dict[str, str]) -> list[str]:
    """The teams of the conditions a demo discharge summary lists under Past Medical History."""
    block = re.search(r"Past Medical History:\n(.*?)\n\n", text, re.S)
    items = [re.sub(r"^\d+\. ", "", line) for line in (block.group(1).splitlines() if block else [])]
    return sorted({mentions[i] for i in items if i in mentions})


def _sentence(rng: random.Random, category: str) -> str:
    draw = rng.random()
    if draw < _SHARED_SHARE:
        return rng.choice(_SHARED)
    if draw < _SHARED_SHARE + _OTHER_SHARE:
        return rng.choice(_CATEGORY_SENTENCES[rng.choice([c for c in _CATEGORY_SENTENCES if c != category])])
    return rng.choice(_CATEGORY_SENTENCES[category])


def add_category_notes(rows: list[dict[str, str]], per_category: int = 100, seed: int = 11) -> list[dict[str, str]]:
    """``rows`` followed by ``per_category`` notes of each extra category, on existing admissions."""
    rng = random.Random(seed)
    admissions = [(r["SUBJECT_ID"], r["HADM_ID"]) for r in rows if r["CATEGORY"] == "Discharge summary"]
    row_id = max(int(r["ROW_ID"]) for r in rows)
    out = list(rows)
    for category in _CATEGORY_SENTENCES:
        lo, hi = _LENGTHS[category]
        for _ in range(per_category):
            subject, hadm = rng.choice(admissions)
            row_id += 1
            text = " ".join(_sentence(rng, category) for _ in range(rng.randint(lo, hi)))
            out.append(
                {
                    "ROW_ID": str(row_id),
                    "SUBJECT_ID": subject,
                    "HADM_ID": hadm,
                    "CHARTDATE": "2150-01-02",
                    "CHARTTIME": "2150-01-02 08:00:00",
                    "STORETIME": "",
                    "CATEGORY": category,
                    "DESCRIPTION": "Report",
                    "CGID": str(rng.randint(14000, 21000)),
                    "ISERROR": "",
                    "TEXT": _wrap(text, rng) + "\n",
                }
            )
    return out


def generate_diagnoses(rows: list[dict[str, str]], seed: int = 13) -> list[dict[str, str]]:
    """DIAGNOSES_ICD rows for every admission with a discharge summary: SEQ_NUM 1 of the team of
    one of the conditions the summary lists (``_FOLLOWS_NOTE`` of the time: of those teams, the one
    with the fewest admissions so far, so that the six classes stay about balanced), else of a
    team drawn uniformly (coding noise), then one to three secondary codes. A classifier can learn
    the label from the conditions a summary names, but not every time: a summary names three to
    six conditions of several teams."""
    mentions = {
        m: _CATEGORY_TEAMS.get(t.category, "Acute or Internal Medicine") for t in load_terms() for m in t.mentions
    }
    rng = random.Random(seed)
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    used = dict.fromkeys(sorted(_TEAM_CODES), 0)
    for r in rows:
        if r["CATEGORY"] != "Discharge summary" or r["HADM_ID"] in seen:
            continue
        seen.add(r["HADM_ID"])
        teams = _note_teams(r["TEXT"], mentions)
        if teams and rng.random() < _FOLLOWS_NOTE:
            team = min(teams, key=lambda t: (used[t], t))
        else:
            team = rng.choice(sorted(_TEAM_CODES))
        used[team] += 1
        codes = [rng.choice(_TEAM_CODES[team])] + rng.sample(_SECONDARY, rng.randint(1, 3))
        for seq, code in enumerate(codes, 1):
            out.append(
                {
                    "ROW_ID": str(len(out) + 1),
                    "SUBJECT_ID": r["SUBJECT_ID"],
                    "HADM_ID": r["HADM_ID"],
                    "SEQ_NUM": str(seq),
                    "ICD9_CODE": code,
                }
            )
    return out


def write_diagnoses(path: Path, rows: list[dict[str, str]]) -> None:
    """As MIMIC-III writes DIAGNOSES_ICD.csv: every field quoted."""
    buf = io.StringIO()
    writer = csv.DictWriter(
        buf,
        fieldnames=["ROW_ID", "SUBJECT_ID", "HADM_ID", "SEQ_NUM", "ICD9_CODE"],
        quoting=csv.QUOTE_ALL,
        lineterminator="\n",
    )
    writer.writeheader()
    writer.writerows(rows)
    write_text(buf.getvalue(), path)  # the one way out: atomic, through the guard
