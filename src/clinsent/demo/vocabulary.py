"""The demo disease vocabulary shared by the demo ontology, notes and STS pairs.

Every definition below was written for this project (demo data). The UMLS CUIs are included
so that the linking code has something to link on; they were written from memory and are not
checked against a UMLS release: do not use this table as a mapping.

Row format: ``label | exact synonyms ; ... | abbreviations ; ... | CUI | category | definition``.
An empty definition means the term has no ``def:`` line in the demo ontology. Abbreviations
are written to the ontology as exact synonyms, except those marked with a leading ``!`` which
appear in notes only (so that some mentions are, realistically, not found).
"""

from __future__ import annotations

from dataclasses import dataclass

#: (EFO id, label, parent) of the intermediate classes. The two roots are EFO's real ids.
DISEASE_ROOT = "EFO:0000408"
MENTAL_ROOT = "EFO:0000677"
CATEGORIES: dict[str, tuple[str, str]] = {
    "cardio": ("EFO:0000319", "cardiovascular disease"),
    "resp": ("EFO:0000684", "respiratory system disease"),
    "endo": ("EFO:0001379", "endocrine system disease"),
    "renal": ("EFO:0003086", "kidney disease"),
    "gi": ("EFO:0000405", "digestive system disease"),
    "infect": ("EFO:0005741", "infectious disease"),
    "neuro": ("EFO:0000618", "nervous system disease"),
    "onc": ("EFO:0000616", "neoplasm"),
    "other": ("EFO:9099999", "other demo disease"),
    "mental": (MENTAL_ROOT, "mental or behavioural disorder"),
}

_TABLE = """
hypertension | high blood pressure;arterial hypertension | HTN | C0020538 | cardio | A chronic condition in which the pressure of blood against the artery walls stays higher than normal.
congestive heart failure | heart failure;cardiac failure | CHF | C0018802 | cardio | A condition in which the heart cannot pump enough blood to meet the needs of the body, often with fluid overload.
coronary artery disease | coronary heart disease;ischemic heart disease | CAD | C1956346 | cardio | Narrowing of the arteries that supply the heart muscle, usually by atherosclerotic plaque.
atrial fibrillation | auricular fibrillation | AFib;!AF | C0004238 | cardio | An irregular and often rapid heart rhythm caused by disorganised electrical activity in the atria.
myocardial infarction | heart attack | MI;!NSTEMI | C0027051 | cardio | Death of heart muscle caused by a blocked blood supply to part of the heart.
hyperlipidemia | high cholesterol;dyslipidemia | HLD | C0020473 | cardio | An abnormally high level of lipids such as cholesterol or triglycerides in the blood.
aortic stenosis | aortic valve stenosis | | C0003507 | cardio | Narrowing of the aortic valve opening that obstructs blood flow from the left ventricle.
deep vein thrombosis | deep venous thrombosis | DVT | C0149871 | cardio | A blood clot that forms in a deep vein, most often in the leg.
pulmonary embolism | lung embolism | PE | C0034065 | cardio | Blockage of a pulmonary artery by a clot that has travelled from elsewhere in the body.
peripheral vascular disease | peripheral arterial disease | PVD;!PAD | C0085096 | cardio | Narrowing of arteries outside the heart and brain that reduces blood flow to the limbs.
cardiomyopathy | heart muscle disease | | C0878544 | cardio | A disease of the heart muscle that makes it harder for the heart to pump blood.
endocarditis | infective endocarditis | | C0014118 | cardio | Inflammation of the inner lining of the heart chambers and valves, usually caused by infection.
pericarditis | | | C0031046 | cardio | Inflammation of the sac that surrounds the heart, often causing sharp chest pain.
hypotension | low blood pressure | | C0020649 | cardio | Blood pressure that is lower than normal and may cause dizziness or poor organ perfusion.
stroke | cerebrovascular accident;cerebral infarction | CVA | C0038454 | cardio | Sudden loss of brain function caused by interrupted blood supply or bleeding in the brain.
transient ischemic attack | mini stroke | TIA | C0007787 | cardio | A brief episode of neurological dysfunction caused by temporary loss of blood flow to the brain.
abdominal aortic aneurysm | | AAA | C0162871 | cardio | An abnormal bulging of the part of the aorta that runs through the abdomen.
mitral regurgitation | mitral insufficiency | | C0026266 | cardio | Backward leakage of blood through the mitral valve when the left ventricle contracts.
ventricular tachycardia | | VT;!V-tach | C0042514 | cardio | A fast heart rhythm that starts in the ventricles and can impair the pumping of the heart.
cardiac arrest | cardiopulmonary arrest | | C0018790 | cardio |
chronic obstructive pulmonary disease | chronic obstructive lung disease | COPD | C0024117 | resp | A chronic lung disease with persistent airflow limitation, usually caused by smoking.
asthma | bronchial asthma | | C0004096 | resp | A chronic disease in which the airways become inflamed and narrowed, causing wheezing and shortness of breath.
pneumonia | lung infection | PNA | C0032285 | resp | Infection of the lung tissue in which the air sacs fill with fluid or pus.
obstructive sleep apnea | obstructive sleep apnoea | OSA | C0520679 | resp | Repeated collapse of the upper airway during sleep that interrupts breathing.
pulmonary fibrosis | lung fibrosis | | C0034069 | resp | Scarring and thickening of lung tissue that makes breathing progressively harder.
acute respiratory distress syndrome | adult respiratory distress syndrome | ARDS | C0035222 | resp | Rapidly developing lung injury with widespread inflammation and low blood oxygen.
pleural effusion | | | C0032227 | resp | An abnormal collection of fluid in the space between the lung and the chest wall.
bronchiectasis | | | C0006267 | resp | Permanent widening of the airways that leads to mucus build-up and repeated infections.
pulmonary hypertension | | | C0020542 | resp | High blood pressure in the arteries of the lungs that strains the right side of the heart.
emphysema | pulmonary emphysema | | C0034067 | resp | Destruction of the air sacs of the lungs that causes shortness of breath.
respiratory failure | | | C1145670 | resp | A condition in which the lungs cannot provide enough oxygen or remove enough carbon dioxide.
tuberculosis | pulmonary tuberculosis | TB | C0041296 | infect | An infection caused by Mycobacterium tuberculosis that usually affects the lungs.
type 2 diabetes mellitus | diabetes mellitus type 2;non-insulin-dependent diabetes;adult-onset diabetes | DM2;T2DM;!NIDDM | C0011860 | endo | A chronic disease in which the body resists insulin or makes too little of it, leading to high blood glucose.
type 1 diabetes mellitus | insulin-dependent diabetes;juvenile diabetes | DM1;T1DM | C0011854 | endo | A chronic disease in which the pancreas makes little or no insulin because its beta cells were destroyed.
diabetic ketoacidosis | | DKA | C0011880 | endo | A dangerous complication of diabetes in which a lack of insulin causes acids called ketones to build up in the blood.
hypothyroidism | underactive thyroid | | C0020676 | endo | A condition in which the thyroid gland does not make enough thyroid hormone.
hyperthyroidism | overactive thyroid | | C0020550 | endo | A condition in which the thyroid gland makes too much thyroid hormone.
obesity | | | C0028754 | endo | Excess body fat to a degree that harms health, often defined by a body mass index of 30 or more.
gout | gouty arthritis | | C0018099 | other | Arthritis caused by deposits of uric acid crystals in a joint, causing sudden pain and swelling.
hyperkalemia | hyperkalaemia | | C0020461 | endo | A higher than normal level of potassium in the blood.
hyponatremia | hyponatraemia | | C0020625 | endo | A lower than normal level of sodium in the blood.
osteoporosis | | | C0029456 | other | Loss of bone density that makes bones fragile and more likely to break.
adrenal insufficiency | | | C0001623 | endo |
chronic kidney disease | chronic renal insufficiency;chronic renal failure | CKD | C1561643 | renal | Gradual and lasting loss of kidney function over months or years.
acute kidney injury | acute renal failure | AKI;!ARF | C2609414 | renal | A sudden drop in kidney function over hours or days.
end stage renal disease | end-stage kidney disease | ESRD | C0022661 | renal | The final stage of chronic kidney disease, in which dialysis or a transplant is needed to survive.
urinary tract infection | | UTI | C0042029 | infect | An infection in any part of the urinary system, most often the bladder.
nephrolithiasis | kidney stones;renal calculi | | C0392525 | renal | Hard deposits of minerals and salts that form inside the kidneys.
pyelonephritis | kidney infection | | C0034186 | renal | A bacterial infection of one or both kidneys.
cirrhosis | liver cirrhosis;hepatic cirrhosis | | C0023890 | gi | Late-stage scarring of the liver that replaces healthy tissue and impairs liver function.
gastrointestinal hemorrhage | gastrointestinal bleeding | GIB;!GI bleed | C0017181 | gi | Bleeding anywhere in the digestive tract from the esophagus to the rectum.
gastroesophageal reflux disease | acid reflux | GERD | C0017168 | gi | A chronic condition in which stomach acid flows back into the esophagus.
pancreatitis | acute pancreatitis | | C0030305 | gi | Inflammation of the pancreas that causes abdominal pain and raised pancreatic enzymes.
cholecystitis | | | C0008325 | gi | Inflammation of the gallbladder, usually caused by a gallstone blocking its outlet.
clostridioides difficile colitis | clostridium difficile colitis;c. difficile infection | !C. diff | C0009372 | infect | Inflammation of the colon caused by toxins of the bacterium Clostridioides difficile, often after antibiotics.
diverticulitis | | | C0012813 | gi | Inflammation or infection of small pouches that form in the wall of the colon.
hepatitis c | hepatitis c infection | HCV | C0019196 | infect | A viral infection that causes inflammation of the liver and can lead to cirrhosis.
hepatic encephalopathy | | | C0019151 | gi | Decline in brain function caused by the failure of the liver to remove toxins from the blood.
peptic ulcer disease | peptic ulcer | PUD | C0030920 | gi | Open sores in the lining of the stomach or the first part of the small intestine.
crohn disease | crohn's disease | | C0010346 | gi | A chronic inflammatory bowel disease that can affect any part of the digestive tract.
ulcerative colitis | | | C0009324 | gi | A chronic inflammatory bowel disease that causes inflammation and ulcers in the colon and rectum.
small bowel obstruction | | SBO | C0021843 | gi |
sepsis | septicemia | | C0243026 | infect | A life-threatening organ dysfunction caused by a dysregulated response of the body to infection.
cellulitis | | | C0007642 | infect | A bacterial infection of the deeper layers of the skin that causes redness, warmth and swelling.
hiv infection | human immunodeficiency virus infection | HIV | C0019693 | infect | Infection with the human immunodeficiency virus, which attacks the immune system.
influenza | flu | | C0021400 | infect | A contagious respiratory illness caused by influenza viruses.
osteomyelitis | bone infection | | C0029443 | infect | Infection of a bone, usually by bacteria spreading from the blood or a nearby wound.
meningitis | | | C0025289 | infect | Inflammation of the membranes that surround the brain and spinal cord.
bacteremia | | | C0004610 | infect | The presence of bacteria in the bloodstream.
mrsa infection | methicillin-resistant staphylococcus aureus infection | MRSA | C1265292 | infect | Infection with Staphylococcus aureus bacteria that resist many common antibiotics.
epilepsy | seizure disorder | | C0014544 | neuro | A brain disorder with repeated unprovoked seizures.
parkinson disease | parkinson's disease | | C0030567 | neuro | A progressive disorder of the nervous system that causes tremor, stiffness and slow movement.
alzheimer disease | alzheimer's disease | | C0002395 | neuro | A progressive brain disease that destroys memory and thinking skills.
multiple sclerosis | | | C0026769 | neuro | A chronic disease in which the immune system damages the protective covering of nerves.
migraine | migraine headache | | C0149931 | neuro | A recurrent headache disorder with moderate to severe throbbing pain, often with nausea.
subarachnoid hemorrhage | subarachnoid haemorrhage | SAH | C0038525 | neuro | Bleeding into the space between the brain and the membrane that covers it.
intracerebral hemorrhage | brain hemorrhage | ICH | C2937358 | neuro | Bleeding inside the brain tissue itself.
peripheral neuropathy | | | C0031117 | neuro | Damage to peripheral nerves that causes weakness, numbness and pain, often in the feet.
myasthenia gravis | | | C0026896 | neuro |
anemia | anaemia | | C0002871 | other | A condition in which the blood has too few healthy red blood cells or too little hemoglobin.
iron deficiency anemia | | IDA | C0162316 | other | Anemia caused by too little iron to make hemoglobin.
thrombocytopenia | low platelet count | | C0040034 | other | A lower than normal number of platelets in the blood.
lung cancer | lung carcinoma | | C0242379 | onc | A malignant tumour that begins in the tissue of the lungs.
breast cancer | breast carcinoma | | C0006142 | onc | A malignant tumour that begins in the cells of the breast.
prostate cancer | prostate carcinoma | | C0376358 | onc | A malignant tumour that begins in the prostate gland.
colon cancer | colorectal cancer | | C0699790 | onc | A malignant tumour that begins in the large intestine.
lymphoma | | | C0024299 | onc | A cancer of the lymphatic system that begins in lymphocytes.
multiple myeloma | | | C0026764 | onc | A cancer of plasma cells in the bone marrow.
leukemia | leukaemia | | C0023418 | onc | A cancer of blood-forming tissues that produces large numbers of abnormal white blood cells.
sickle cell disease | sickle cell anemia | | C0002895 | other | An inherited disorder in which red blood cells take a rigid sickle shape and block small vessels.
rheumatoid arthritis | | RA | C0003873 | other | A chronic autoimmune disease that causes painful swelling of the joints.
osteoarthritis | degenerative joint disease | OA;!DJD | C0029408 | other | Breakdown of the cartilage that cushions the ends of bones in a joint.
systemic lupus erythematosus | lupus | SLE | C0024141 | other | An autoimmune disease in which the immune system attacks many organs, including the skin, joints and kidneys.
benign prostatic hyperplasia | enlarged prostate | BPH | C1704272 | other | Non-cancerous enlargement of the prostate gland that can block urine flow.
glaucoma | | | C0017601 | other | A group of eye diseases that damage the optic nerve, often because of high pressure inside the eye.
psoriasis | | | C0033860 | other | A chronic skin disease that causes red, scaly patches.
pressure ulcer | decubitus ulcer;bed sore | | C0011127 | other | Injury to skin and underlying tissue caused by prolonged pressure, often over bony areas.
major depressive disorder | major depression;clinical depression;depression | MDD | C1269683 | mental | A mood disorder with persistent low mood and loss of interest that impairs daily life.
generalized anxiety disorder | anxiety disorder;anxiety | GAD | C0270549 | mental | Persistent and excessive worry about many everyday matters that is hard to control.
bipolar disorder | manic depression;bipolar affective disorder | | C0005586 | mental | A mood disorder with episodes of mania or hypomania alternating with episodes of depression.
schizophrenia | | | C0036341 | mental | A chronic mental disorder with hallucinations, delusions and disorganised thinking.
post-traumatic stress disorder | posttraumatic stress disorder | PTSD | C0038436 | mental | A disorder that develops after a traumatic event, with intrusive memories, avoidance and hyperarousal.
alcohol use disorder | alcohol abuse;alcohol dependence;alcoholism | EtOH abuse | C0001973 | mental | A pattern of alcohol use with loss of control over drinking despite harm.
opioid use disorder | opioid dependence;opioid abuse | | C0029104 | mental | A pattern of opioid use with loss of control and continued use despite harm.
delirium | acute confusional state | | C0011206 | mental | An acute and fluctuating disturbance of attention and awareness, often caused by illness or medication.
dementia | | | C0497327 | mental | A chronic decline in memory and other thinking abilities severe enough to affect daily life.
attention deficit hyperactivity disorder | | ADHD | C1263846 | mental | A neurodevelopmental disorder with persistent inattention, hyperactivity or impulsivity.
obsessive-compulsive disorder | | OCD | C0028768 | mental | A disorder with unwanted recurring thoughts and repetitive behaviours that the person feels driven to perform.
panic disorder | | | C0030319 | mental | A disorder with recurrent unexpected panic attacks and fear of further attacks.
anorexia nervosa | | | C0003125 | mental | An eating disorder with restriction of food intake, intense fear of weight gain and low body weight.
insomnia | sleeplessness | | C0917801 | mental | Persistent difficulty falling asleep or staying asleep.
tobacco use disorder | nicotine dependence;tobacco dependence | | C0040336 | mental | A pattern of tobacco use with dependence on nicotine.
cocaine abuse | cocaine use disorder | | C0009171 | mental |
autism spectrum disorder | autism | ASD | C1510586 | mental | A developmental condition that affects communication, social interaction and behaviour.
borderline personality disorder | | | C0006012 | mental | A personality disorder with unstable moods, relationships and self-image.
adjustment disorder | | | C0001546 | mental |
"""


@dataclass(frozen=True)
class DemoTerm:
    """One demo disease term."""

    efo_id: str
    label: str
    synonyms: tuple[str, ...]
    abbreviations: tuple[str, ...]
    hidden_abbreviations: tuple[str, ...]
    cui: str
    category: str
    definition: str | None

    @property
    def mentions(self) -> tuple[str, ...]:
        """Every surface form the note generator may use for this term."""
        return (self.label, *self.synonyms, *self.abbreviations, *self.hidden_abbreviations)


def _split(field: str) -> list[str]:
    return [part.strip() for part in field.split(";") if part.strip()]


def load_terms() -> list[DemoTerm]:
    """Parse the embedded table into terms with stable demo ids (EFO:9000001, ...)."""
    terms: list[DemoTerm] = []
    for line in _TABLE.strip().splitlines():
        label, syn, abbr, cui, category, definition = (f.strip() for f in line.split("|"))
        abbrs = _split(abbr)
        terms.append(
            DemoTerm(
                efo_id=f"EFO:{9000001 + len(terms):07d}",
                label=label,
                synonyms=tuple(_split(syn)),
                abbreviations=tuple(a for a in abbrs if not a.startswith("!")),
                hidden_abbreviations=tuple(a[1:] for a in abbrs if a.startswith("!")),
                cui=cui,
                category=category,
                definition=definition or None,
            )
        )
    return terms
