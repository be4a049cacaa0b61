"""Seeded generator of synthetic discharge summaries as rows of MIMIC-III's NOTEEVENTS.csv
(:data:`COLUMNS`; :mod:`clinsent.demo.note_layouts` writes them in MIMIC-III's and MIMIC-IV's layouts).

DEMO DATA: every note is produced from templates written for this project; no text comes
from MIMIC-III. The notes carry what makes real notes hard: ``[** **]`` de-identification
placeholders, section headers, numbered medication lists with p.o./b.i.d./q.d., lines
hard-wrapped at 60-80 columns, boilerplate copy-pasted across notes of the same patient,
disease mentions by name, synonym and abbreviation, other note categories and ISERROR=1 rows.
"""

from __future__ import annotations

import random
import textwrap

from clinsent.demo.vocabulary import DemoTerm, load_terms

COLUMNS = [
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "CHARTDATE",
    "CHARTTIME",
    "STORETIME",
    "CATEGORY",
    "DESCRIPTION",
    "CGID",
    "ISERROR",
    "TEXT",
]

_MEDS = [
    ("Metoprolol tartrate", "25 mg", "p.o. b.i.d."),
    ("Lisinopril", "10 mg", "p.o. q.d."),
    ("Furosemide", "40 mg", "p.o. daily"),
    ("Metformin", "500 mg", "p.o. b.i.d."),
    ("Atorvastatin", "80 mg", "p.o. q.h.s."),
    ("Aspirin", "81 mg", "p.o. q.d."),
    ("Insulin glargine", "20 units", "subcutaneously q.h.s."),
    ("Warfarin", "5 mg", "p.o. daily"),
    ("Sertraline", "50 mg", "p.o. q.d."),
    ("Quetiapine", "25 mg", "p.o. q.h.s. p.r.n."),
    ("Levothyroxine", "75 mcg", "p.o. q.d."),
    ("Pantoprazole", "40 mg", "p.o. q.12h."),
    ("Albuterol", "2 puffs", "inhaled q.4-6h. p.r.n."),
    ("Lactulose", "30 mL", "p.o. t.i.d."),
    ("Vancomycin", "1 g", "IV q.12h."),
    ("Ceftriaxone", "1 g", "IV q.24h."),
    ("Prednisone", "40 mg", "p.o. daily"),
    ("Tiotropium", "18 mcg", "inhaled q.d."),
]

_PLACEHOLDERS = {
    "date": ["[**{y}-{m}-{d}**]", "[**{m}-{d}**]", "[**{y}**]"],
    "name": [
        "[**Known lastname {n}**]",
        "[**First Name4 (NamePattern1) {n}**]",
        "[**Last Name (NamePattern4) {n}**]",
        "[**Name (NI) {n}**]",
    ],
    "hosp": ["[**Hospital1 {k}**]", "[**Hospital 1{k}**]", "[**Location (un) {n}**]"],
    "phone": ["[**Telephone/Fax (1) {n}**]"],
    "md": ["[**MD Number(1) {n}**]"],
}

# Sentences with disease slots; {d} and {e} are disease mentions.
_DISEASE_SENTENCES = [
    "The patient is a {age} year old {sex} with a history of {d} and {e} who presented with worsening shortness of "
    "breath over the past three days.",
    "He has a long-standing history of {d}, which has been managed by his primary care physician at {hosp}.",
    "She was admitted to the medical intensive care unit for management of {d} complicated by {e}.",
    "On arrival to the emergency department the team was concerned for an exacerbation of her {d} given the new "
    "oxygen requirement.",
    "Her {d} was felt to be well controlled on the current regimen and no changes were made during this admission.",
    "The patient's {d} was thought to contribute to his fatigue, and outpatient follow up was arranged with the "
    "clinic.",
    "Given the known {d}, the cardiology service was consulted and recommended continuing the home medications.",
    "During the hospital course the patient developed {d}, which was treated with supportive care and close "
    "monitoring.",
    "The family reports that his {d} has been getting worse since the last hospitalization in {date}.",
    "She carries a diagnosis of {d} and was recently started on a new medication by her outside provider.",
    "There was no evidence of {d} on the imaging studies obtained on the day of admission.",
    "The patient was counseled extensively regarding the long term risks of untreated {d} and {e}.",
    "Psychiatry was consulted for his {d}, and they recommended continuing his outpatient regimen with close follow "
    "up.",
    "The history is notable for {d}, for which she follows with a specialist at {hosp} every six months.",
    "He was found to have new onset {d} and was started on treatment with good clinical response.",
    "The patient denies any prior history of {d} but does report a family history of {e} in his mother.",
    "Her hospital stay was complicated by {d}, which resolved with conservative management before discharge.",
    "The working diagnosis on admission was {d}, although {e} remained on the differential for several days.",
    "Because of her {d}, the dose of her medication was reduced and renal function was checked daily.",
    "Records from {hosp} confirm a diagnosis of {d} made by Dr. {name} several years ago.",
]

_PLAIN_SENTENCES = [
    "Vital signs on admission were notable for a temperature of 98.6, heart rate of {hr}, and blood pressure of "
    "{sbp}/{dbp}.",
    "The patient was seen and examined by the admitting team on the evening of {date} and the plan was discussed "
    "with the family.",
    "Physical therapy evaluated the patient and recommended discharge to home with services after two sessions.",
    "Laboratory studies were remarkable for a white blood cell count of {wbc} and a creatinine of 1.{cr}.",
    "A chest radiograph showed no acute cardiopulmonary process and the lungs were clear bilaterally.",
    "She tolerated a regular diet without difficulty and her pain was controlled with oral medications.",
    "The patient was ambulating independently at the time of discharge and was eager to return home.",
    "Social work met with the patient and his wife to discuss support services available after discharge.",
    "He lives at home with his daughter and is independent in all activities of daily living.",
    "Case management arranged visiting nurse services to assist with medication teaching at home.",
    "The patient was given written instructions and verbalized understanding of the discharge plan.",
    "An echocardiogram was obtained and showed an ejection fraction of {ef} percent with mild valvular changes.",
    "Blood cultures drawn on admission remained negative for the duration of the hospital stay.",
    "The nutrition service saw the patient and recommended a low sodium diet with fluid restriction.",
    "Her home medications were continued except as noted below, and new prescriptions were sent to the pharmacy.",
]

_SHORT_LINES = [
    "Pt doing well.",
    "No acute events overnight.",
    "Stable.",
    "Afebrile.",
    "Tolerating PO.",
    "Cont. current meds.",
    "Will f/u as outpt.",
]

_COMMON = [
    "hypertension",
    "congestive heart failure",
    "type 2 diabetes mellitus",
    "coronary artery disease",
    "atrial fibrillation",
    "chronic kidney disease",
    "chronic obstructive pulmonary disease",
    "hyperlipidemia",
    "pneumonia",
    "major depressive disorder",
    "sepsis",
    "acute kidney injury",
]

_BOILERPLATE = (
    "Please call your doctor or return to the emergency department if you experience chest pain, "
    "shortness of breath, fevers, or any other symptoms that concern you. Please take all of your "
    "medications as prescribed and keep all of your follow up appointments."
)


class _Filler:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def placeholder(self, kind: str) -> str:
        r = self.rng
        return r.choice(_PLACEHOLDERS[kind]).format(
            y=r.randint(2100, 2190), m=r.randint(1, 12), d=r.randint(1, 28), n=r.randint(10, 9999), k=r.randint(1, 99)
        )

    def fill(self, template: str, d: str = "", e: str = "") -> str:
        r = self.rng
        return template.format(
            d=d,
            e=e,
            age=r.randint(35, 92),
            sex=r.choice(["man", "woman"]),
            hosp=self.placeholder("hosp"),
            date=self.placeholder("date"),
            name=self.placeholder("name"),
            hr=r.randint(60, 120),
            sbp=r.randint(95, 170),
            dbp=r.randint(50, 95),
            wbc=r.randint(4, 19),
            cr=r.randint(0, 9),
            ef=r.choice([20, 25, 35, 45, 55, 60]),
        )


def _mention(term: DemoTerm, rng: random.Random) -> str:
    forms = term.mentions
    weights = [3.0] + [1.5] * (len(forms) - 1)
    return rng.choices(forms, weights=weights)[0]


def _wrap(text: str, rng: random.Random) -> str:
    return textwrap.fill(text, width=rng.randint(60, 80), break_on_hyphens=False)


def _pick_terms(terms: list[DemoTerm], rng: random.Random) -> list[DemoTerm]:
    # Zipf-like popularity: a few diseases dominate, as in real notes.
    weights = [1.0 / (1 + (i % 40)) ** 1.1 for i in range(len(terms))]
    chosen: list[DemoTerm] = []
    while len(chosen) < rng.randint(3, 6):
        t = rng.choices(terms, weights=weights)[0]
        if t not in chosen:
            chosen.append(t)
    return chosen


def _discharge_summary(f: _Filler, problems: list[DemoTerm], pmh_block: str, hpi_history: str) -> str:
    r = f.rng
    m = lambda t: _mention(t, r)  # noqa: E731
    hpi = (
        [hpi_history]
        + [
            f.fill(r.choice(_DISEASE_SENTENCES), m(r.choice(problems)), m(r.choice(problems)))
            for _ in range(r.randint(2, 4))
        ]
        + [f.fill(r.choice(_PLAIN_SENTENCES)) for _ in range(r.randint(1, 3))]
    )
    course_parts = []
    for t in problems[: r.randint(2, len(problems))]:
        body = " ".join(
            [f.fill(r.choice(_DISEASE_SENTENCES), m(t), m(r.choice(problems)))]
            + [f.fill(r.choice(_PLAIN_SENTENCES)) for _ in range(r.randint(0, 2))]
        )
        course_parts.append(f"# {m(t)}: " + _wrap(body, r))
    meds = r.sample(_MEDS, r.randint(3, 7))
    med_lines = "\n".join(f"{i}. {name} {dose} {freq}" for i, (name, dose, freq) in enumerate(meds, 1))
    dx_lines = "\n".join(m(t) for t in problems[:3])
    short = "\n".join(r.sample(_SHORT_LINES, 2))
    return (
        f"Admission Date:  {f.placeholder('date')}              Discharge Date:   {f.placeholder('date')}\n\n"
        f"Date of Birth:  {f.placeholder('date')}             Sex:   {r.choice('MF')}\n\n"
        f"Service: {r.choice(['MEDICINE', 'CARDIOLOGY', 'SURGERY', 'NEUROLOGY'])}\n\n"
        "Allergies:\nPatient recorded as having No Known Allergies to Drugs\n\n"
        f"Attending:{f.placeholder('name')}\n\n"
        f"Chief Complaint:\n{r.choice(['shortness of breath', 'chest pain', 'altered mental status', 'fever'])}\n\n"
        f"History of Present Illness:\n{_wrap(' '.join(hpi), r)}\n\n"
        f"Past Medical History:\n{pmh_block}\n\n"
        f"Social History:\n{_wrap(f.fill(r.choice(_PLAIN_SENTENCES[7:9])), r)}\n\n"
        f"Brief Hospital Course:\n" + "\n\n".join(course_parts) + "\n\n"
        f"{short}\n\n"
        f"Medications on Admission:\n{med_lines}\n\n"
        f"Discharge Medications:\n{med_lines}\n\n"
        "Discharge Disposition:\nHome With Service\n\n"
        f"Discharge Diagnosis:\n{dx_lines}\n\n"
        "Discharge Condition:\nGood, ambulating independently.\n\n"
        f"Discharge Instructions:\n{_wrap(_BOILERPLATE, r)}\n\n"
        f"Followup Instructions:\nPlease follow up with Dr. {f.placeholder('name')} at {f.placeholder('hosp')}, "
        f"phone {f.placeholder('phone')}, within one week.\n"
    )


def _other_note(f: _Filler, category: str, problems: list[DemoTerm]) -> str:
    r = f.rng
    if category == "Radiology":
        return (
            f"{f.placeholder('date')} CHEST (PA & LAT)\nREASON FOR EXAM: eval for "
            f"{_mention(problems[0], r)}\nIMPRESSION: No acute cardiopulmonary process.\n"
        )
    if category == "ECG":
        return "Sinus rhythm. Normal ECG. No significant change from prior.\n"
    return _wrap(f"Pt resting comfortably, hx of {_mention(problems[0], r)}. " + f.fill(r.choice(_PLAIN_SENTENCES)), r)


def generate_notes(n_discharge: int = 320, seed: int = 7) -> list[dict[str, str]]:
    """Rows of a NOTEEVENTS-style table; deterministic for a given seed."""
    rng = random.Random(seed)
    f = _Filler(rng)
    terms = load_terms()
    rng.shuffle(terms)
    # The most frequent diseases of real discharge summaries lead the Zipf-like popularity order.
    common = [t for label in _COMMON for t in terms if t.label == label]
    terms = common + [t for t in terms if t not in common]
    rows: list[dict[str, str]] = []
    row_id = 1000
    subject = 500
    n_done = 0
    while n_done < n_discharge:
        subject += 1
        problems = _pick_terms(terms, rng)
        # Copy-paste: the same PMH block and history sentence reappear in this patient's notes.
        pmh = "\n".join(f"{i}. {_mention(t, rng)}" for i, t in enumerate(problems, 1))
        hpi_history = f.fill(
            rng.choice(_DISEASE_SENTENCES[:2]), _mention(problems[0], rng), _mention(problems[1], rng)
        )
        for _ in range(rng.choice([1, 1, 2, 2, 3])):
            if n_done >= n_discharge:
                break
            row_id += 1
            n_done += 1
            hadm = 100000 + row_id
            rows.append(
                {
                    "ROW_ID": str(row_id),
                    "SUBJECT_ID": str(subject),
                    "HADM_ID": str(hadm),
                    "CHARTDATE": f"21{rng.randint(0, 99):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    "CHARTTIME": "",
                    "STORETIME": "",
                    "CATEGORY": "Discharge summary",
                    "DESCRIPTION": "Report" if rng.random() > 0.08 else "Addendum",
                    "CGID": "",
                    "ISERROR": "1" if rng.random() < 0.02 else "",
                    "TEXT": _discharge_summary(f, problems, pmh, hpi_history),
                }
            )
            if rng.random() < 0.12:
                row_id += 1
                category = rng.choice(["Radiology", "ECG", "Nursing/other"])
                rows.append(
                    {
                        "ROW_ID": str(row_id),
                        "SUBJECT_ID": str(subject),
                        "HADM_ID": str(hadm),
                        "CHARTDATE": "2150-01-01",
                        "CHARTTIME": "2150-01-01 10:00:00",
                        "STORETIME": "",
                        "CATEGORY": category,
                        "DESCRIPTION": "Report",
                        "CGID": str(rng.randint(14000, 21000)),
                        "ISERROR": "",
                        "TEXT": _other_note(f, category, problems),
                    }
                )
    return rows
