"""The sample the scan looks for: a seeded sample of the notes' word n-grams, kept only as
salted hashes (:func:`sample_ngrams`), so the sample file holds no text.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _hash(gram: Iterable[str], salt: bytes) -> bytes:
    return hashlib.blake2b(" ".join(gram).encode(), key=salt, digest_size=12).digest()


@dataclass(frozen=True)
class Sample:
    """Salted hashes of sampled note n-grams (``n`` words each)."""

    n: int
    salt: bytes
    hashes: frozenset[bytes]

    def save(self, path: str | Path) -> None:
        from clinsent.io.files import write_json

        write_json({"n": self.n, "salt": self.salt.hex(), "hashes": sorted(h.hex() for h in self.hashes)}, path)

    @classmethod
    def load(cls, path: str | Path) -> Sample:
        import json

        data = json.loads(Path(path).read_text())
        return cls(int(data["n"]), bytes.fromhex(data["salt"]), frozenset(bytes.fromhex(h) for h in data["hashes"]))


def sample_ngrams(
    texts: Iterable[str],
    n: int,
    size: int,
    seed: int,
    notes: int = 500,
    min_letters: int = 20,
    max_share: float = 0.05,
) -> Sample:
    """``size`` n-grams of ``notes`` notes drawn over the stream (a reservoir: one pass, bounded
    memory), boilerplate left out: n-grams with fewer than ``min_letters`` letters, or found in
    more than ``max_share`` of the drawn notes (when at least 20 are drawn)."""
    rng = np.random.default_rng(seed)
    salt = hashlib.blake2b(f"clinsent-phi-{seed}".encode(), digest_size=16).digest()
    drawn: list[str] = []
    for i, text in enumerate(texts):
        if len(drawn) < notes:
            drawn.append(text)
        elif (j := int(rng.integers(0, i + 1))) < notes:
            drawn[j] = text
    per_note: Counter[bytes] = Counter()
    for text in drawn:
        w = words(text)
        per_note.update(
            {_hash(w[i : i + n], salt) for i in range(len(w) - n + 1) if sum(map(len, w[i : i + n])) >= min_letters}
        )
    limit = max_share * len(drawn) if len(drawn) >= 20 else float("inf")
    pool = sorted(g for g, c in per_note.items() if c <= limit)
    picked: list[int] = (
        [int(k) for k in rng.choice(len(pool), size=min(size, len(pool)), replace=False)] if pool else []
    )
    return Sample(n, salt, frozenset(pool[k] for k in picked))
