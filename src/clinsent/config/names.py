"""Names that become parts of paths, and the Hugging Face ids that become folders.

Every name a user gives to an entry of a section listed in :data:`SECTIONS` (``methods``,
``base_models``, ``eval_sets``, ``corpus_embeddings``, ...) is a folder or file name somewhere under
the results folder (``models/<method>/<base model>/``, ``mteb/<model>/``,
``corpus_embeddings/<name>.parquet``, ...); every other section of the schema whose keys are names
is in :data:`NOT_PATH_PARTS` with the reason (a test holds the two lists to the schema). So a
name is letters, digits, ``_``, ``-`` and ``.`` (not first; never ``..``): ``../phi`` would
reach the owner-only ``phi/`` folder, which a writer replaces; a space, ``:`` or ``/`` would
make paths that do not round-trip. Checked when the config is read (dry runs too), naming the
key and the fix.

A Hugging Face id becomes the folder ``owner--name`` under ``hub_dir``
(:func:`clinsent.models.base.hub_slug`), so an id is held to the Hub's own grammar (``name`` or
``owner/name``; letters, digits, ``_``, ``-``, ``.``; neither ``--`` nor ``..``; a part does not
start or end with ``-`` or ``.``; at most 96 characters a part), which also keeps ``owner/x--y``
from turning into ``owner/x/y``.

:func:`inside` is the last line of defence of every writer that deletes or replaces a folder.
"""

from __future__ import annotations

import re
from typing import Any

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError, shown, shown_value

NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$")
HUB_PART = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$")
# the config sections whose entry names become path parts
SECTIONS = (
    "methods",
    "base_models",
    "eval_sets",
    "tables",
    "figures",
    "finetune",
    "training_data",
    "sentence_corpora",
    "doc_tasks",
    "models",
    "corpus_embeddings",
)
# the config sections whose keys are the user's names but never path parts, and why
NOT_PATH_PARTS = {
    "keep": "its keys are section names (methods, eval_sets, ...), checked by the overlay",
    "drop": "its keys are section names (methods, eval_sets, ...), checked by the overlay",
}


def is_name(text: str) -> bool:
    return bool(NAME.match(text)) and ".." not in text


def check_name(name: Any, where: str) -> None:
    """Stop unless ``name`` is a name (the message never quotes a name that is not one)."""
    if not is_name(str(name)):
        raise InputError(
            where,
            "cannot name a file or folder: a name is letters, digits, _, - and . (not first, never ..)",
            "rename the entry (and where tables, figures or other entries cite it)",
        )


def check_names(config: RunConfig) -> None:
    """Every entry name of the sections whose names become path parts (see the module)."""
    for section in SECTIONS:
        for i, name in enumerate(config.section(section) or {}, start=1):
            check_name(name, f"config: {section}, entry {i} ({shown(name)})")


def is_hub_id(spec: str) -> bool:
    """Whether ``spec`` fits the Hub's id grammar (see the module)."""
    parts = spec.split("/")
    return 1 <= len(parts) <= 2 and all(HUB_PART.match(p) for p in parts) and "--" not in spec and ".." not in spec


def check_hub_id(spec: str, where: str) -> None:
    if not is_hub_id(spec):
        raise InputError(
            where,
            f"{shown_value(spec)} is neither an existing folder nor a Hugging Face id (name or "
            "owner/name: letters, digits, _, - and .; no -- or ..; no part starts or ends with - or .)",
            "give the folder of a model on this machine, or the model's id as the Hub writes it",
        )
