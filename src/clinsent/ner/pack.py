"""Load a MedCAT v2 model pack offline, keep only the configured UMLS types, slim it, hash it.

- No network at load time: MedCAT's PyPI version check is off (:mod:`clinsent.ner`), and a
  pack whose tokenizer needs a spaCy model that is not installed fails with a clear error
  instead of MedCAT running ``spacy download``.
- v1 packs (``cdb.dat``) are not converted on the fly (that needs the network for the
  spaCy model and changes name normalisation); the error names the offline converter.
- MedCAT v2 has no type filter in its config: the kept CUI set is built from the pack's type
  index ``cdb.type_id2info`` and set as the linking filter.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from clinsent.errors import InputError
from clinsent.safety.content import sha256_file

V1_CONVERTER = "python -m medcat.utils.legacy.legacy_converter OLD_PACK NEW_PACK"


def _offline_spacy_guard(pack: Path) -> None:
    """Make MedCAT fail, not download, when the pack's spaCy model is missing."""
    from medcat.tokenizing.spacy_impl import tokenizers
    from medcat.tokenizing.spacy_impl.utils import has_spacy_model

    def ensure_installed(model_name: str) -> None:
        if not has_spacy_model(model_name):
            raise InputError(
                pack,
                f"the pack's tokenizer needs the spaCy model {model_name!r}, which is not installed "
                "(MedCAT would try to download it)",
                f"install {model_name} from a local wheel on this machine, or use a pack with the regex tokenizer",
            )

    tokenizers.ensure_spacy_model = ensure_installed


def load_pack(pack: str | Path) -> Any:
    """Load a v2 model pack (folder or .zip) once, with no network access."""
    import logging

    import clinsent.ner  # noqa: F401  (disables the version check)

    os.environ.setdefault("MEDCAT_AVOID_LECACY_CONVERSION", "true")  # (sic: MedCAT's spelling)
    from medcat.cat import CAT
    from medcat.utils.defaults import LegacyConversionDisabledError

    logging.getLogger("medcat").setLevel(logging.WARNING)  # it logs every document at INFO
    pack = Path(pack)
    if not pack.exists():
        raise InputError(
            pack, "the MedCAT model pack does not exist", "set `ner.model_pack` to a v2 pack folder or .zip"
        )
    if pack.is_dir() and (pack / "cdb.dat").is_file():
        raise InputError(pack, "this is a MedCAT v1 pack (cdb.dat)", f"convert it once, offline: {V1_CONVERTER}")
    _offline_spacy_guard(pack)
    try:
        return CAT.load_model_pack(str(pack))
    except LegacyConversionDisabledError as exc:
        raise InputError(pack, "this is a MedCAT v1 pack", f"convert it once, offline: {V1_CONVERTER}") from exc


def kept_cuis(cdb: Any, type_ids: Iterable[str], pack: str | Path) -> set[str]:
    """The CUIs of the kept UMLS types, from the pack's type index; error if there are none."""
    index = cdb.type_id2info
    type_ids = list(type_ids)
    keep: set[str] = set()
    for t in type_ids:
        if t in index:
            keep |= set(index[t].cuis)
    if not keep:
        raise InputError(
            pack,
            f"the pack has no concept of the kept types {type_ids} (its types include {sorted(index)[:10]})",
            "set `ner.type_ids` to types the pack contains, or use another pack",
        )
    return keep


def slim_pack(pack: str | Path, type_ids: Iterable[str], out_dir: str | Path) -> dict[str, int]:
    """Write a copy of ``pack`` restricted to the kept types (``cdb.filter_by_cui``).

    MedCAT also keeps concepts that share a name with a kept one, so ambiguity (and MedCAT's
    disambiguation) is unchanged; the linking filter of the slim pack is the kept set.
    """
    cat = load_pack(pack)
    before = len(cat.cdb.cui2info)
    keep = kept_cuis(cat.cdb, type_ids, pack)
    cat.cdb.filter_by_cui(keep)
    cat.config.components.linking.filters.cuis = keep
    save_pack(cat, out_dir)
    return {"concepts_before": before, "concepts_after": len(cat.cdb.cui2info), "kept_type_concepts": len(keep)}


def save_pack(cat: Any, out_dir: str | Path) -> Path:
    """A MedCAT model pack saved whole as the folder ``out_dir`` (:func:`clinsent.io.files.atomic_folder`):
    the one way this package writes a pack (the demo pack, the slim pack)."""
    from clinsent.io.files import atomic_folder
    from clinsent.safety.places import inside

    out = inside(out_dir, Path(out_dir).parent)  # the folder replaced is the output itself
    with atomic_folder(out) as staged:  # MedCAT saves <folder>/<pack_name>: the staged folder itself
        saved = cat.save_model_pack(
            str(staged.parent), pack_name=staged.name, make_archive=False, add_hash_to_pack_name=False
        )
        if Path(saved) != staged:  # MedCAT hashes its default pack name into the folder's
            Path(saved).rename(staged)
    return out


def pack_hash(pack: str | Path) -> str:
    """sha256 of the pack's zip, or of the sorted "relative path, file sha256" lines of its folder."""
    pack = Path(pack)
    if pack.is_file():
        return sha256_file(pack)
    lines = [
        f"{f.relative_to(pack).as_posix()}\t{sha256_file(f)}\n"
        for f in sorted(p for p in pack.rglob("*") if p.is_file())
    ]
    return hashlib.sha256("".join(lines).encode()).hexdigest()
